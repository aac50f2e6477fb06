/*
 * procs_http.c - HTTP requests for end-to-end tests, made by curl.
 *
 * curl runs as a registered process (procs.c: killed and reaped by the
 * teardown like any server), without a shell, ~/.curlrc or proxy, with
 * "Expect:" off (no 100-continue round trip for large bodies) and a time
 * cap, writing the response's header blocks (-D) and body (-o) to files
 * in the test's directory.  The result is read back from them: the status
 * and the headers of the last block, the body as bytes.
 */
#include "procs.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"
#include "vgwrap.h"

#define CURL_MAX_ARGS 64
#define CURL_MAX_S    10 /* a stuck request fails, not the suite (scaled) */

int test_http_start(test_http_job_t *j, const char *dir,
                    const char *const args[])
{
    static unsigned counter;
    unsigned n = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
    const char *argv[CURL_MAX_ARGS] = {
        "curl", "-q",      "-sS",        "--noproxy", "*",
        "-H",   "Expect:", "--max-time", j->max_time, "-D"};
    size_t k = 10;

    memset(j, 0, sizeof(*j));
    snprintf(j->max_time, sizeof(j->max_time), "%u",
             test_scale_ms(CURL_MAX_S * 1000) / 1000);
    snprintf(j->out, sizeof(j->out), "%s/curl-%u.log", dir, n);
    snprintf(j->head, sizeof(j->head), "%s/curl-%u.head", dir, n);
    snprintf(j->body, sizeof(j->body), "%s/curl-%u.body", dir, n);
    argv[k++] = j->head;
    argv[k++] = "-o";
    argv[k++] = j->body;
    for (size_t i = 0; args[i] != NULL && k < CURL_MAX_ARGS - 1; i++) {
        argv[k++] = args[i];
    }
    argv[k] = NULL;
    return test_proc_start(&j->proc, argv, NULL, j->out);
}

/* The last header block of the -D file (after any 1xx or redirect). */
static char *last_block(char *head)
{
    char *last = head, *p = head;

    while ((p = strstr(p, "\r\n\r\n")) != NULL) {
        p += 4;
        if (strncmp(p, "HTTP/", 5) == 0) {
            last = p;
        }
    }
    return last;
}

/* r->lines: a copy of r->head with every CR and LF made a NUL, so that
 * each header line is a string of its own. */
static void split_lines(test_http_t *r)
{
    size_t len = strlen(r->head);

    r->lines = malloc(len + 1);
    if (r->lines == NULL) {
        return;
    }
    for (size_t i = 0; i <= len; i++) {
        char c = r->head[i];
        r->lines[i] = c == '\r' || c == '\n' ? '\0' : c;
    }
}

int test_http_finish(test_http_job_t *j, test_http_t *r, unsigned ms)
{
    char *head;
    int rc = 0;

    memset(r, 0, sizeof(*r));
    r->curl_rc = -1;
    if (test_proc_wait(&j->proc, ms) != 0) {
        fprintf(stderr, "test_http: curl still runs after %u ms\n", ms);
        test_proc_stop(&j->proc, SIGKILL, 1000);
        rc = -1;
    } else if (WIFEXITED(j->proc.status)) {
        r->curl_rc = WEXITSTATUS(j->proc.status);
    }
    head = test_read_file(j->head, NULL);
    r->body = test_read_file(j->body, &r->body_len);
    if (r->body == NULL) {
        r->body = strdup("");
        r->body_len = 0;
    }
    if (head != NULL) {
        char *last = last_block(head);
        r->head = strdup(last);
        sscanf(last, "HTTP/%*s %d", &r->status);
        free(head);
    } else {
        r->head = strdup("");
    }
    if (r->head != NULL) {
        split_lines(r);
    }
    if (r->curl_rc != 0) {
        char *err = test_read_file(j->out, NULL);
        fprintf(stderr, "test_http: curl exit %d: %s", r->curl_rc,
                err != NULL ? err : "\n");
        free(err);
    }
    unlink(j->out);
    unlink(j->head);
    unlink(j->body);
    return rc;
}

int test_http(test_http_t *r, const char *dir, const char *const args[])
{
    test_http_job_t j;

    if (test_http_start(&j, dir, args) != 0) {
        memset(r, 0, sizeof(*r));
        r->curl_rc = -1;
        r->head = strdup("");
        r->body = strdup("");
        return -1;
    }
    return test_http_finish(&j, r, 15000);
}

const char *test_http_header(const test_http_t *r, const char *name)
{
    size_t n = strlen(name), len = r->head != NULL ? strlen(r->head) : 0;

    for (size_t i = 0; r->lines != NULL && i < len;) {
        const char *line = r->lines + i;
        size_t line_len = strlen(line);

        if (line_len > n && strncasecmp(line, name, n) == 0 && line[n] == ':') {
            const char *v = line + n + 1;
            while (*v == ' ' || *v == '\t') {
                v++;
            }
            return v;
        }
        i += line_len + 1;
    }
    return NULL;
}

void test_http_free(test_http_t *r)
{
    free(r->head);
    free(r->lines);
    free(r->body);
    memset(r, 0, sizeof(*r));
}
