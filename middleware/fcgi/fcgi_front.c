/*
 * fcgi_front.c - the front of the FastCGI server: one thread that holds
 * every connection no worker is serving, and hands a worker a request
 * only once it has arrived.
 *
 * Why: a worker is the scarce thing (a handler runs on each), and a peer
 * of the socket decides how fast it sends.  A worker that waits for a
 * request to arrive can be held by anyone who sends slowly, or not at
 * all: eight connections trickling a PARAMS record a byte at a time, or
 * thousands of idle connections, used to take every worker and starve
 * the web server.  Here waiting costs a socket and a few hundred bytes,
 * never a worker, so a request the web server sends whole (as web
 * servers do) finds a worker at once, whatever else waits.
 *
 * Algorithm: one epoll loop (level-triggered) over the listening socket,
 * an eventfd that workers and the stopper write, and each connection in
 * the front.  A connection is in exactly one place (conn_t.at):
 *   IDLE     waiting for BEGIN_REQUEST; closed after idle_timeout_ms;
 *   PENDING  a request arriving: its records are read without waiting
 *            (mw_fc_front_step()) until the PARAMS are complete; then it
 *            goes to the workers if its body has arrived too (or it has
 *            none), or if one of the streaming_max workers that may read
 *            a body as it arrives (half of them) is free; closed when the
 *            whole request has not arrived within request_timeout_ms of
 *            its BEGIN_REQUEST;
 *   STREAM   PARAMS in, body still coming, no streaming worker free: the
 *            body is read ahead into the connection's buffer (one record,
 *            64 KiB), and the request goes to the workers as soon as it
 *            is all in, or a streaming worker is free; a full buffer is
 *            no longer read.  So slow bodies never take more than half
 *            the workers, and a body that follows its PARAMS a moment
 *            later never waits for them;
 *   LINGER   half-closed after its last response, reading and dropping
 *            what the peer still sends, for at most 5 s;
 *   QUEUED, WORKER: handed over (removed from epoll); a worker gives it
 *            back (mw_fc_front_give_back()) to wait for its next request,
 *            to linger or to close.
 * Each of the four waiting places is a list in arrival order with one
 * timeout, so its head has the nearest deadline: expiring is looking at
 * four heads.
 *
 * Answering here: a request whose PARAMS are in, of a role the handler
 * answers without ever blocking and without reading a body
 * (sh->answers_in_front: the memory store, nothing forwarded), is served
 * on this thread the moment its PARAMS are in (what of its body has
 * arrived is then dropped, the rest skipped as after any request), with its
 * own scratch (mw_fc_run_in_front()), and no worker is woken: the two
 * hand-offs cost most of what such a request costs.  The front does so
 * for at most IN_FRONT_MAX requests after each wait for events (about
 * half a millisecond of deciding here); past them, requests go to the
 * workers, so a burst never keeps the front from reading for long.  A
 * count rather than a time: the same under a tracer or a loaded machine,
 * and one clock read less per request.  A response
 * that could not be sent at once is kept with the connection and goes to
 * a worker to be sent (QUEUED with c->unsent); the connection then comes
 * back as after any request.
 *
 * Bounds: at most max_conns connections (the oldest idle one, else the
 * oldest lingering, else the oldest arriving one is closed to make room
 * for a new one: a connection that sends its request at once, as a web
 * server's does, is read the moment it is accepted, so it is never the
 * oldest); at most buffer_max bytes buffered by the connections of the
 * front (over it, the oldest arriving request is dropped).  When
 * descriptors run out, a spare one is given up to accept and close the
 * newcomer, so the listening socket never spins.
 *
 * Stop: the listening socket leaves the loop; idle connections that have
 * served a request close, a fresh one still serves the request whose
 * bytes have arrived, requests arriving may finish arriving; the thread
 * ends when no connection is left anywhere (workers included).
 *
 * Length.  About 900 lines: one epoll loop, the six places it moves a
 * connection between, and the requests it answers itself.  Every
 * transition reads and writes the same lists, budgets and deadlines, so
 * they are kept in one file to be read together.
 *
 * Ownership: the front frees every connection (mw_fc_conn_free), except
 * one that a worker gives back to close, which the worker frees (one
 * wake of the front less per request); a worker owns one only between
 * mw_fc_front_take() and mw_fc_front_give_back().
 */
#include "fcgi_front.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "alloc.h"
#include "clock.h"

#define EVENTS    128
#define LINGER_MS 5000
/* How many requests the front may serve itself after each wait for
 * events, before it reads and accepts again (answers_here()). */
#define IN_FRONT_MAX 32
/* Connections accepted in one round: under a steady flow of new ones
 * (a connection per request) the round ends, and with it the front's
 * share of requests answered itself starts again. */
#define ACCEPT_MAX 64

typedef struct fc_list {
    conn_t *head, *tail;
    size_t n;
} fc_list_t;

struct fc_front {
    fc_shared_t *sh;
    int listen_fd;
    int epfd;
    int wake_fd;
    int spare_fd; /* /dev/null, given up to accept when out of fds */
    bool listening;
    bool started;
    pthread_t thread;
    fc_list_t idle, pending, waiting, linger; /* the front thread's */
    fc_list_t dead;                           /* closed, to free */
    size_t held;                              /* bytes buffered in the front */
    pthread_mutex_t mu;                       /* guards what follows */
    pthread_cond_t cv;                        /* a request is ready, or done */
    fc_list_t ready;                          /* for the workers */
    fc_list_t back;                           /* given back by workers */
    bool stop;                                /* refuse new connections */
    bool done;                                /* the thread has ended */
    bool stopping;          /* the front thread's copy of stop */
    fc_scratch_t scratch;   /* lent to the requests served here */
    unsigned in_front_left; /* of IN_FRONT_MAX, this round */
};

/* epoll tags of the two descriptors that are not connections. */
static char listen_tag, wake_tag;

/* ---- lists ------------------------------------------------------------- */

static void list_push(fc_list_t *l, conn_t *c)
{
    c->next = NULL;
    c->prev = l->tail;
    if (l->tail != NULL) {
        l->tail->next = c;
    } else {
        l->head = c;
    }
    l->tail = c;
    l->n++;
}

static void list_remove(fc_list_t *l, conn_t *c)
{
    if (c->prev != NULL) {
        c->prev->next = c->next;
    } else {
        l->head = c->next;
    }
    if (c->next != NULL) {
        c->next->prev = c->prev;
    } else {
        l->tail = c->prev;
    }
    c->prev = c->next = NULL;
    l->n--;
}

/* The list of the waiting place at, or NULL. */
static fc_list_t *list_of(fc_front_t *f, int at)
{
    switch (at) {
    case FC_AT_IDLE:
        return &f->idle;
    case FC_AT_PENDING:
        return &f->pending;
    case FC_AT_STREAM:
        return &f->waiting;
    case FC_AT_LINGER:
        return &f->linger;
    default:
        return NULL;
    }
}

/* Moves c (in the front) to the waiting place at, deadline from now
 * unless it stays where it is (a request keeps its deadline). */
static void move_to(fc_front_t *f, conn_t *c, int at, long long deadline)
{
    fc_list_t *from = list_of(f, c->at);

    if (c->at == at) {
        return;
    }
    if (from != NULL) {
        list_remove(from, c);
    }
    c->at = at;
    c->deadline_ms = deadline;
    list_push(list_of(f, at), c);
}

/* ---- the budget ---------------------------------------------------------- */

/* Updates the bytes c holds in the front's count. */
static void account(fc_front_t *f, conn_t *c)
{
    size_t now = c->in_cap + c->pcap;

    f->held = f->held - c->held + now;
    c->held = now;
}

/* ---- epoll ------------------------------------------------------------------
 */

/* Whether c waits for its socket: not a STREAM waiter whose buffer is full. */
static bool wants_events(const conn_t *c)
{
    return !(c->at == FC_AT_STREAM && c->in_len - c->in_off >= FC_IN_CAP);
}

/* Puts c in the epoll set (when it wants events), or takes it out.  A
 * connection whose request is in when it is accepted never enters it. */
static void watch(fc_front_t *f, conn_t *c)
{
    struct epoll_event ev = {EPOLLIN, {0}};

    ev.data.ptr = c;
    if (!c->polled && wants_events(c) &&
        epoll_ctl(f->epfd, EPOLL_CTL_ADD, c->fd, &ev) == 0) {
        c->polled = true;
    }
}

static void unwatch(fc_front_t *f, conn_t *c)
{
    if (c->polled) {
        epoll_ctl(f->epfd, EPOLL_CTL_DEL, c->fd, NULL);
        c->polled = false;
    }
}

/* ---- closing ------------------------------------------------------------- */

/* Takes c out of the epoll set and closes its socket; c itself is freed
 * once the events at hand are handled, since one of them may name it.
 * close() alone would not do: a CGI program a worker is starting shares
 * the socket until its execve() closes it (SOCK_CLOEXEC), and while any
 * descriptor of it is open the epoll set keeps it, and could report it
 * after c is freed. */
static void close_conn(fc_front_t *f, conn_t *c)
{
    fc_list_t *l = list_of(f, c->at);

    unwatch(f, c);
    if (l != NULL) {
        list_remove(l, c);
    }
    f->held -= c->held;
    c->held = 0;
    if (c->streaming) {
        c->streaming = false;
        atomic_fetch_sub(&f->sh->streaming, 1);
    }
    close(c->fd);
    c->fd = -1;
    c->at = FC_AT_DEAD;
    list_push(&f->dead, c);
    atomic_fetch_sub(&f->sh->open, 1);
}

/* Frees the connections closed meanwhile. */
static void bury(fc_front_t *f)
{
    while (f->dead.head != NULL) {
        conn_t *c = f->dead.head;

        list_remove(&f->dead, c);
        mw_fc_conn_free(c);
    }
}

/* Closes the connection of a request that did not arrive in time, or was
 * dropped to make room (counted in stat). */
static void drop_request(fc_front_t *f, conn_t *c, atomic_uint_fast64_t *stat)
{
    atomic_fetch_add(stat, 1);
    close_conn(f, c);
}

/* Makes room for one more connection: closes the oldest idle, lingering,
 * arriving or waiting one.  False when every connection is a worker's. */
static bool evict_one(fc_front_t *f)
{
    fc_list_t *order[] = {&f->idle, &f->linger, &f->pending, &f->waiting};

    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
        if (order[i]->head != NULL) {
            drop_request(f, order[i]->head, &f->sh->evicted);
            return true;
        }
    }
    return false;
}

/* Keeps the bytes buffered under buffer_max: drops the oldest arriving
 * requests (c's own included) until they fit. */
static void enforce_budget(fc_front_t *f)
{
    while (f->held > f->sh->buffer_max &&
           (f->pending.head != NULL || f->waiting.head != NULL)) {
        conn_t *old =
            f->pending.head != NULL ? f->pending.head : f->waiting.head;

        drop_request(f, old, &f->sh->evicted);
    }
}

/* ---- handing over -------------------------------------------------------- */

/* Gives c to the workers. */
static void queue(fc_front_t *f, conn_t *c)
{
    fc_list_t *l = list_of(f, c->at);

    unwatch(f, c);
    if (l != NULL) {
        list_remove(l, c);
    }
    f->held -= c->held;
    c->held = 0;
    pthread_mutex_lock(&f->mu);
    c->at = FC_AT_QUEUED;
    list_push(&f->ready, c);
    pthread_cond_signal(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

/* Takes one of the streams for c: true when one was free. */
static bool take_stream(fc_front_t *f, conn_t *c)
{
    unsigned n = atomic_load(&f->sh->streaming);

    while (n < f->sh->streaming_max) {
        if (atomic_compare_exchange_weak(&f->sh->streaming, &n, n + 1)) {
            c->streaming = true;
            return true;
        }
    }
    return false;
}

/* Starts lingering (c is in epoll). */
static void start_linger(fc_front_t *f, conn_t *c)
{
    unsigned ms =
        f->sh->io_timeout_ms < LINGER_MS ? f->sh->io_timeout_ms : LINGER_MS;

    move_to(f, c, FC_AT_LINGER, mono_ms() + ms);
    if (mw_fc_linger_step(c) != 0) {
        close_conn(f, c);
    }
}

/* ---- answering in the front ---------------------------------------------- */

/* What body_ahead() did with c. */
enum {
    AHEAD_WAITS,  /* in STREAM, for its body or a stream */
    AHEAD_GONE,   /* handed over, closed, or lingering */
    AHEAD_SERVED, /* served here, idle in the front again */
};

/* Whether the front serves c's request itself (its PARAMS are in): the
 * handler answers its role without blocking and without reading a body,
 * and the front has not spent its IN_FRONT_MAX since it last waited for
 * events. */
static bool answers_here(fc_front_t *f, conn_t *c)
{
    return f->sh->answers_in_front != NULL && f->scratch.out != NULL &&
           f->in_front_left > 0 &&
           f->sh->answers_in_front(c->req.role, f->sh->arg);
}

/* Serves c's request here (see the file comment): AHEAD_SERVED when c
 * waits in the front for its next request, else AHEAD_GONE (it closed,
 * lingers, or went to a worker to send what its peer did not read). */
static int serve_here(fc_front_t *f, conn_t *c)
{
    int next;

    f->in_front_left--;
    next = mw_fc_run_in_front(c, &f->scratch);

    if (c->unsent != NULL) {
        c->after = next;
        queue(f, c);
        return AHEAD_GONE;
    }
    free(c->pbuf);
    c->pbuf = NULL;
    c->pcap = 0;
    mw_fc_shrink(c);
    account(f, c);
    if (next == FC_NEXT_KEEP && !f->stopping) {
        move_to(f, c, FC_AT_IDLE, mono_ms() + f->sh->idle_timeout_ms);
        return AHEAD_SERVED;
    }
    if (next == FC_NEXT_LINGER) {
        start_linger(f, c);
        if (c->at == FC_AT_LINGER) {
            watch(f, c);
        }
    } else {
        close_conn(f, c);
    }
    return AHEAD_GONE;
}

/*
 * c's PARAMS have arrived: it is served here when the front may answer it
 * (answers_here(): its handler reads no body, so whether the body is in
 * does not matter); else it goes to the workers when its body is in the
 * buffer (or it has none), or when one of the streams is free (the worker
 * then reads the body as it comes).  Otherwise it waits in STREAM, still
 * read ahead, so a body that arrives a moment after its PARAMS needs no
 * stream; once the buffer is full it is no longer read, and waits for one.
 */
static int body_ahead(fc_front_t *f, conn_t *c)
{
    ssize_t r = 0;

    if (answers_here(f, c)) {
        return serve_here(f, c);
    }
    while (!mw_fc_body_buffered(c) && (r = mw_fc_fill(c)) > 0) {
    }
    account(f, c);
    if (mw_fc_body_buffered(c) || (r < 0 && r != -EAGAIN)) {
        /* in, or the peer went away or broke: the worker meets the end */
        queue(f, c);
        return AHEAD_GONE;
    }
    if (take_stream(f, c)) {
        queue(f, c);
        return AHEAD_GONE;
    }
    move_to(f, c, FC_AT_STREAM, c->deadline_ms);
    if (!wants_events(c)) {
        unwatch(f, c);
    }
    return AHEAD_WAITS;
}

/* What the front does with the result r of a step that was neither MORE
 * nor READY: true when c lives on in the front, idle (a request aborted
 * before it ran, on a kept connection). */
static bool step_end(fc_front_t *f, conn_t *c, int r)
{
    if (r == -EMSGSIZE) {
        r = mw_fc_refuse_too_large(c);
    } else if (r == -ECONNABORTED) {
        r = mw_fc_end_aborted(c);
    } else if (r == -EPROTO) {
        atomic_fetch_add(&f->sh->bad_records, 1);
    } else if (r == -ECONNRESET && c->phase != FC_PH_IDLE) {
        mw_fc_count_abort(c);
    }
    if (r == 0) {
        move_to(f, c, FC_AT_IDLE, mono_ms() + f->sh->idle_timeout_ms);
        return true;
    }
    if (r == -ECANCELED && c->linger) {
        start_linger(f, c);
    } else {
        close_conn(f, c);
    }
    return false;
}

/* Reads what c's peer sent and moves c on (see the file comment): true
 * when c still waits in the front; false when it was closed or handed
 * over (a worker may be using it already: do not touch it). */
static bool advance(fc_front_t *f, conn_t *c)
{
    if (c->at == FC_AT_DEAD) {
        return false;
    }
    if (c->at == FC_AT_LINGER) {
        if (mw_fc_linger_step(c) != 0) {
            close_conn(f, c);
            return false;
        }
        return true;
    }
    for (;;) {
        int r;

        if (c->phase == FC_PH_BODY) {
            int ahead = body_ahead(f, c);

            enforce_budget(f); /* may close c, if it waits */
            if (ahead == AHEAD_SERVED && c->at == FC_AT_IDLE &&
                c->in_len > c->in_off) {
                continue; /* the next request came with the last one */
            }
            return ahead != AHEAD_GONE && c->at != FC_AT_DEAD;
        }
        r = mw_fc_front_step(c);
        account(f, c);
        if (c->phase != FC_PH_IDLE && c->at == FC_AT_IDLE) {
            move_to(f, c, FC_AT_PENDING,
                    c->begun_ms + f->sh->request_timeout_ms);
        }
        if (r == FC_STEP_MORE) {
            if (c->phase == FC_PH_IDLE) {
                mw_fc_shrink(c); /* an idle connection holds no buffer */
                account(f, c);
            }
            enforce_budget(f);
            return c->at != FC_AT_DEAD;
        }
        if (r != FC_STEP_READY && !step_end(f, c, r)) {
            return c->at == FC_AT_LINGER;
        }
    }
}

/* ---- accepting ----------------------------------------------------------- */

/* Accepts one connection when descriptors ran out: makes room, or gives
 * the spare descriptor up to accept and close it.  False: stop trying. */
static bool out_of_fds(fc_front_t *f)
{
    int fd;

    if (evict_one(f)) {
        return true;
    }
    if (f->spare_fd < 0) {
        return false;
    }
    close(f->spare_fd);
    fd = accept4(f->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd >= 0) {
        close(fd);
        atomic_fetch_add(&f->sh->evicted, 1);
    }
    f->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    return fd >= 0;
}

/* Takes in the accepted socket fd. */
static void adopt(fc_front_t *f, int fd)
{
    conn_t *c;
    int one = 1;

    if (atomic_load(&f->sh->open) >= f->sh->max_conns && !evict_one(f)) {
        atomic_fetch_add(&f->sh->evicted, 1);
        close(fd);
        return;
    }
    c = mw_fc_conn_new(f->sh, fd);
    if (c == NULL) {
        close(fd);
        return;
    }
    if (f->sh->tcp) {
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    c->nowait = true;
    c->at = -1;
    atomic_fetch_add(&f->sh->connections, 1);
    atomic_fetch_add(&f->sh->open, 1);
    move_to(f, c, FC_AT_IDLE, mono_ms() + f->sh->idle_timeout_ms);
    /* What a web server sends comes with the connection: a request that
     * is in at once goes to a worker without entering the epoll set. */
    if (advance(f, c)) {
        watch(f, c);
    }
}

/* Accepts what waits, ACCEPT_MAX at most: the listening socket stays
 * ready (level-triggered) for the next round, and the connections that
 * have something to say meanwhile are heard in between. */
static void accept_all(fc_front_t *f)
{
    for (int n = 0; f->listening && n < ACCEPT_MAX; n++) {
        int fd = accept4(f->listen_fd, NULL, NULL, SOCK_CLOEXEC);

        if (fd >= 0) {
            adopt(f, fd);
        } else if (errno == EMFILE || errno == ENFILE) {
            if (!out_of_fds(f)) {
                return;
            }
        } else if (errno != EINTR && errno != ECONNABORTED) {
            return; /* EAGAIN, or the socket was shut down */
        }
    }
}

/* ---- what workers give back ---------------------------------------------- */

/* c is back from a worker, to do next (FC_NEXT_*). */
static void welcome_back(fc_front_t *f, conn_t *c, int next)
{
    if (c->streaming) {
        c->streaming = false;
        atomic_fetch_sub(&f->sh->streaming, 1);
    }
    c->at = -1;
    c->polled = false;
    if (next == FC_NEXT_CLOSE || (next == FC_NEXT_KEEP && f->stopping)) {
        mw_fc_conn_free(c);
        atomic_fetch_sub(&f->sh->open, 1);
        return;
    }
    free(c->pbuf);
    c->pbuf = NULL;
    c->pcap = 0;
    mw_fc_shrink(c);
    account(f, c);
    if (next == FC_NEXT_LINGER) {
        start_linger(f, c);
        if (c->at == FC_AT_LINGER) {
            watch(f, c);
        }
        return;
    }
    move_to(f, c, FC_AT_IDLE, mono_ms() + f->sh->idle_timeout_ms);
    /* the next request may have come with the last one */
    if (c->in_len == c->in_off || advance(f, c)) {
        watch(f, c);
    }
}

static void take_back_all(fc_front_t *f)
{
    uint64_t n;
    fc_list_t back;

    while (read(f->wake_fd, &n, sizeof(n)) < 0 && errno == EINTR) {
    }
    pthread_mutex_lock(&f->mu);
    back = f->back;
    memset(&f->back, 0, sizeof(f->back));
    f->stopping = f->stop;
    pthread_mutex_unlock(&f->mu);
    if (f->stopping && f->listening) {
        f->listening = false;
        epoll_ctl(f->epfd, EPOLL_CTL_DEL, f->listen_fd, NULL);
    }
    while (back.head != NULL) {
        conn_t *c = back.head;

        list_remove(&back, c);
        welcome_back(f, c, c->after);
    }
}

/* ---- time ------------------------------------------------------------------
 */

/* Closes what waited too long; the epoll timeout until the next one. */
static int expire(fc_front_t *f)
{
    long long now = mono_ms(), next = -1;
    fc_list_t *lists[] = {&f->idle, &f->pending, &f->waiting, &f->linger};

    for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
        fc_list_t *l = lists[i];

        while (l->head != NULL && l->head->deadline_ms <= now) {
            if (l == &f->pending || l == &f->waiting) {
                drop_request(f, l->head, &f->sh->timed_out);
            } else {
                close_conn(f, l->head);
            }
        }
        if (l->head != NULL && (next < 0 || l->head->deadline_ms < next)) {
            next = l->head->deadline_ms;
        }
    }
    return next < 0 ? -1 : (int)(next - now + 1);
}

/* Queues the waiting requests whose turn came (a stream freed). */
static void admit_waiting(fc_front_t *f)
{
    while (f->waiting.head != NULL && take_stream(f, f->waiting.head)) {
        queue(f, f->waiting.head);
    }
}

/* On stop: idle connections close, except a fresh one whose request has
 * arrived (read now: it may still be in the socket). */
static void close_idle(fc_front_t *f)
{
    conn_t *c, *next;

    for (c = f->idle.head; c != NULL; c = next) {
        next = c->next;
        if (!c->fresh) {
            close_conn(f, c);
        }
    }
    for (c = f->idle.head; c != NULL; c = next) {
        next = c->next;
        advance(f, c); /* moves on, or stays idle */
    }
    while (f->idle.head != NULL) {
        close_conn(f, f->idle.head);
    }
}

static void *front_main(void *arg)
{
    fc_front_t *f = arg;
    struct epoll_event evs[EVENTS];
    bool closed_idle = false;

    for (;;) {
        int timeout = expire(f);
        int n;

        if (f->stopping && !closed_idle) {
            closed_idle = true;
            close_idle(f);
            timeout = expire(f);
        }
        if (f->stopping && atomic_load(&f->sh->open) == 0) {
            break;
        }
        n = epoll_wait(f->epfd, evs, EVENTS, timeout);
        f->in_front_left = IN_FRONT_MAX;
        for (int i = 0; i < n; i++) {
            void *p = evs[i].data.ptr;

            if (p == &listen_tag) {
                accept_all(f);
            } else if (p == &wake_tag) {
                take_back_all(f);
            } else {
                advance(f, p);
            }
        }
        admit_waiting(f);
        bury(f);
    }
    bury(f);
    pthread_mutex_lock(&f->mu);
    f->done = true;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    return NULL;
}

/* ---- the interface ------------------------------------------------------- */

fc_front_t *mw_fc_front_new(fc_shared_t *sh, int listen_fd)
{
    fc_front_t *f = suspect_calloc(1, sizeof(*f));
    struct epoll_event ev = {EPOLLIN, {0}};

    if (f == NULL) {
        return NULL;
    }
    f->sh = sh;
    f->listen_fd = listen_fd;
    f->epfd = epoll_create1(EPOLL_CLOEXEC);
    f->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    f->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (sh->answers_in_front != NULL) {
        f->scratch.out = suspect_malloc(FCGI_HEADER_LEN + FCGI_MAX_CONTENT);
    }
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    if (f->epfd < 0 || f->wake_fd < 0 ||
        (sh->answers_in_front != NULL && f->scratch.out == NULL) ||
        fcntl(listen_fd, F_SETFL, fcntl(listen_fd, F_GETFL) | O_NONBLOCK) !=
            0) {
        mw_fc_front_free(f);
        return NULL;
    }
    ev.data.ptr = &wake_tag;
    epoll_ctl(f->epfd, EPOLL_CTL_ADD, f->wake_fd, &ev);
    ev.data.ptr = &listen_tag;
    if (epoll_ctl(f->epfd, EPOLL_CTL_ADD, listen_fd, &ev) != 0) {
        mw_fc_front_free(f);
        return NULL;
    }
    f->listening = true;
    return f;
}

int mw_fc_front_start(fc_front_t *f)
{
    int r = pthread_create(&f->thread, NULL, front_main, f);

    f->started = r == 0;
    return r;
}

/* Wakes the front thread. */
static void wake(fc_front_t *f)
{
    uint64_t one = 1;

    while (write(f->wake_fd, &one, sizeof(one)) < 0 && errno == EINTR) {
    }
}

conn_t *mw_fc_front_take(fc_front_t *f)
{
    conn_t *c;

    pthread_mutex_lock(&f->mu);
    while (f->ready.head == NULL && !f->done) {
        pthread_cond_wait(&f->cv, &f->mu);
    }
    c = f->ready.head;
    if (c != NULL) {
        list_remove(&f->ready, c);
        c->at = FC_AT_WORKER;
    }
    pthread_mutex_unlock(&f->mu);
    return c;
}

void mw_fc_front_give_back(fc_front_t *f, conn_t *c, int next)
{
    bool stop;

    /* A connection that closes needs nothing of the front, unless it held
     * one of the streams (the front hands it on): the worker closes it, and
     * wakes the front only while it stops (it ends when none is left). */
    if (next == FC_NEXT_CLOSE && !c->streaming) {
        mw_fc_conn_free(c);
        pthread_mutex_lock(&f->mu);
        atomic_fetch_sub(&f->sh->open, 1);
        stop = f->stop;
        pthread_mutex_unlock(&f->mu);
        if (stop) {
            wake(f);
        }
        return;
    }
    pthread_mutex_lock(&f->mu);
    c->after = next;
    list_push(&f->back, c);
    pthread_mutex_unlock(&f->mu);
    wake(f);
}

void mw_fc_front_refuse(fc_front_t *f)
{
    pthread_mutex_lock(&f->mu);
    f->stop = true;
    pthread_mutex_unlock(&f->mu);
    wake(f);
}

void mw_fc_front_join(fc_front_t *f)
{
    if (f->started) {
        pthread_join(f->thread, NULL);
        f->started = false;
    }
    pthread_mutex_lock(&f->mu);
    f->done = true;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

void mw_fc_front_free(fc_front_t *f)
{
    fc_list_t *lists[] = {&f->idle,  &f->pending, &f->waiting, &f->linger,
                          &f->ready, &f->back,    &f->dead};

    if (f == NULL) {
        return;
    }
    for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
        while (lists[i]->head != NULL) {
            conn_t *c = lists[i]->head;

            list_remove(lists[i], c);
            mw_fc_conn_free(c);
        }
    }
    if (f->epfd >= 0) {
        close(f->epfd);
    }
    if (f->wake_fd >= 0) {
        close(f->wake_fd);
    }
    if (f->spare_fd >= 0) {
        close(f->spare_fd);
    }
    mw_fc_scratch_free(&f->scratch);
    pthread_mutex_destroy(&f->mu);
    pthread_cond_destroy(&f->cv);
    free(f);
}
