/*
 * backlog.c - the length of a listening socket's backlog (backlog.h).
 *
 * A unix socket's is asked of the kernel's socket diagnostics (netlink
 * NETLINK_SOCK_DIAG, as `ss -xl` does): every listening unix socket is
 * listed with its bound path and, for a listener, the number of
 * connections waiting to be accepted (UNIX_DIAG_RQLEN).  A TCP listener's
 * is TCP_INFO's: for a socket in LISTEN, tcpi_unacked is the accept
 * queue's length and tcpi_sacked its bound; the kernel drops a SYN once
 * the length is past the bound.
 *
 * Nothing here is kept between calls; the netlink socket is closed
 * before a call returns.
 */
#include "backlog.h"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "vgwrap.h"

/* The kernel's TCP_LISTEN state, which a unix listener is in too. */
#define STATE_LISTEN 10

/* The backlog of the listener m describes when it is bound at path, else
 * -1. */
static int listener_queue(const struct nlmsghdr *h, const char *path)
{
    const struct unix_diag_msg *m = NLMSG_DATA(h);
    const struct rtattr *a = (const struct rtattr *)(m + 1);
    int len = (int)h->nlmsg_len - (int)NLMSG_LENGTH(sizeof(*m));
    size_t plen = strlen(path);
    bool named = false;
    int queue = -1;

    for (; RTA_OK(a, len); a = RTA_NEXT(a, len)) {
        if (a->rta_type == UNIX_DIAG_NAME) {
            named = RTA_PAYLOAD(a) >= plen &&
                    memcmp(RTA_DATA(a), path, plen) == 0 &&
                    (RTA_PAYLOAD(a) == plen ||
                     ((const char *)RTA_DATA(a))[plen] == '\0');
        } else if (a->rta_type == UNIX_DIAG_RQLEN &&
                   RTA_PAYLOAD(a) >= sizeof(struct unix_diag_rqlen)) {
            const struct unix_diag_rqlen *q = RTA_DATA(a);

            queue = (int)q->udiag_rqueue;
        }
    }
    return named ? queue : -1;
}

int test_unix_backlog(const char *path)
{
    struct {
        struct nlmsghdr h;
        struct unix_diag_req r;
    } req;
    static const size_t buf_size = 32768;
    long buf[32768 / sizeof(long)]; /* aligned for nlmsghdr */
    int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    int found = -1;
    bool done = false;

    if (fd < 0) {
        return -1;
    }
    memset(&req, 0, sizeof(req));
    req.h.nlmsg_len = sizeof(req);
    req.h.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    req.r.sdiag_family = AF_UNIX;
    req.r.udiag_states = 1u << STATE_LISTEN;
    req.r.udiag_show = UDIAG_SHOW_NAME | UDIAG_SHOW_RQLEN;
    if (send(fd, &req, sizeof(req), 0) != (ssize_t)sizeof(req)) {
        close(fd);
        return -1;
    }
    while (!done) {
        ssize_t n = recv(fd, buf, buf_size, 0);
        const struct nlmsghdr *h = (const struct nlmsghdr *)buf;

        if (n <= 0) {
            break;
        }
        for (; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
            if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR) {
                done = true;
                break;
            }
            if (found < 0) {
                found = listener_queue(h, path);
            }
        }
    }
    close(fd);
    return found;
}

bool test_unix_backlog_drained(const char *path, unsigned ms)
{
    long long end = mono_ms() + test_scale_ms(ms);

    for (;;) {
        if (test_unix_backlog(path) == 0) {
            return true;
        }
        if (mono_ms() >= end) {
            return false;
        }
        usleep(2000);
    }
}

bool test_tcp_backlog_full(int fd)
{
    struct tcp_info ti;
    socklen_t len = sizeof(ti);

    memset(&ti, 0, sizeof(ti));
    return getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 &&
           ti.tcpi_state == STATE_LISTEN && ti.tcpi_unacked > ti.tcpi_sacked;
}
