/*
 * bench_forward.c - what choosing the variables that go on to an upstream
 * costs (`make bench-forward`).
 *
 * What: the PARAMS an allowed request sends to php-cgi or php-fpm are
 * built once per request (up_prelude_build()), each of the request's
 * variables checked by fwd_param_allowed() (a CGI/1.1 name, a header, or
 * one the operator's passParams names; PHP_VALUE only by its full name).
 * The request is the one nginx sends with Debian's fastcgi_params for a
 * browser's GET (17 CGI variables, SCRIPT_FILENAME, 10 headers) plus a
 * PHP_VALUE and two variables of the site's.  Rows, on one thread:
 *   filter alone     fwd_param_allowed() over the request's variables;
 *   prelude          up_prelude_build() without passParams (what every
 *                    upstream request does);
 *   prelude, passParams  the same with passParams="APP_* SSL_* UNIQUE_ID
 *                    PHP_VALUE" (one scan of the list per variable not
 *                    otherwise allowed);
 * each as nanoseconds per request and, given the CPU time of a whole
 * allowed request through nginx -> suspect-fcgi -> php-cgi (argv[1],
 * microseconds, as bench-fcgi prints it), as a share of that.  The filter
 * is also printed as a share of the prelude measured in the same run.
 *
 * How: each row runs RUN_MS of wall time, best of ROUNDS, the rounds of
 * all rows interleaved, so a machine that changes speed moves them alike.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "forward/fwd_params.h"
#include "forward/upstream_internal.h"

#define RUN_MS 200
#define ROUNDS 9

static const char *const vars[] = {
    "QUERY_STRING=id=42",
    "REQUEST_METHOD=GET",
    "CONTENT_TYPE=",
    "CONTENT_LENGTH=",
    "SCRIPT_NAME=/index.php",
    "REQUEST_URI=/index.php?id=42",
    "DOCUMENT_URI=/index.php",
    "DOCUMENT_ROOT=/srv/app",
    "SERVER_PROTOCOL=HTTP/1.1",
    "REQUEST_SCHEME=https",
    "HTTPS=on",
    "GATEWAY_INTERFACE=CGI/1.1",
    "SERVER_SOFTWARE=nginx/1.22.1",
    "REMOTE_ADDR=192.0.2.10",
    "REMOTE_PORT=51234",
    "SERVER_ADDR=192.0.2.1",
    "SERVER_PORT=443",
    "SERVER_NAME=example.org",
    "REDIRECT_STATUS=200",
    "SCRIPT_FILENAME=/srv/app/index.php",
    "PHP_VALUE=upload_max_filesize=16M",
    "APP_ENV=production",
    "UNIQUE_ID=ZmFrZS11bmlxdWUtaWQ",
    "HTTP_HOST=example.org",
    "HTTP_USER_AGENT=Mozilla/5.0 (X11; Linux x86_64; rv:115.0) Firefox/115.0",
    "HTTP_ACCEPT=text/html,application/xhtml+xml,*/*;q=0.8",
    "HTTP_ACCEPT_LANGUAGE=en-US,en;q=0.5",
    "HTTP_ACCEPT_ENCODING=gzip, deflate, br",
    "HTTP_COOKIE=SESSIONID=0123456789abcdef; member=m-42",
    "HTTP_REFERER=https://example.org/",
    "HTTP_CONNECTION=keep-alive",
    "HTTP_UPGRADE_INSECURE_REQUESTS=1",
    "HTTP_SEC_FETCH_MODE=navigate",
};

#define NVARS (sizeof(vars) / sizeof(vars[0]))

static mw_param_t params[NVARS];
static mw_req_t req;
static const char pass_list[] = "APP_* SSL_* UNIQUE_ID PHP_VALUE";

typedef enum { ROW_FILTER, ROW_PRELUDE, ROW_PRELUDE_PASS, NROWS } row_t;

static const char *const row_names[NROWS] = {"filter alone", "prelude",
                                             "prelude, passParams"};

/* One round of row: RUN_MS of requests; keeps the best rate in *best.
 * c is the connection whose buffer the prelude is built in. */
static int row_round(row_t row, up_conn_t *c, double *best)
{
    up_edits_t e;
    unsigned long long n = 0, kept = 0;
    double t0 = now_s(), t;
    bool dropped;

    memset(&e, 0, sizeof(e));
    e.pass = row == ROW_PRELUDE_PASS ? pass_list : NULL;
    do {
        for (int i = 0; i < 64; i++) {
            if (row == ROW_FILTER) {
                for (size_t v = 0; v < req.nparams; v++) {
                    kept += fwd_param_allowed(params[v].name,
                                              params[v].name_len, e.pass);
                }
            } else if (up_prelude_build(c, &req, &e, true, &dropped) !=
                       SUSPECT_OK) {
                return -1;
            } else {
                kept += c->pre_len;
            }
        }
        n += 64;
        t = now_s() - t0;
    } while (t < RUN_MS / 1000.0);
    if (kept == 0) {
        return -1;
    }
    *best = (double)n / t > *best ? (double)n / t : *best;
    return 0;
}

int main(int argc, char **argv)
{
    double allowed_us = argc > 1 ? strtod(argv[1], NULL) : 0;
    double best[NROWS] = {0};
    up_conn_t *c = up_conn_new();

    if (c == NULL) {
        fprintf(stderr, "bench-forward: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < NVARS; i++) {
        const char *eq = strchr(vars[i], '=');

        params[i].name = vars[i];
        params[i].name_len = (size_t)(eq - vars[i]);
        params[i].value = eq + 1;
        params[i].value_len = strlen(eq + 1);
    }
    req.role = 1;
    req.params = params;
    req.nparams = NVARS;
    for (int r = 0; r < ROUNDS; r++) {
        for (int row = 0; row < NROWS; row++) {
            if (row_round((row_t)row, c, &best[row]) != 0) {
                fprintf(stderr, "bench-forward: %s failed\n", row_names[row]);
                up_conn_free(c);
                return 1;
            }
        }
    }
    up_conn_free(c);
    printf("bench-forward: an upstream request's PARAMS, %zu variables, "
           "1 thread, best of %d x %d ms\n",
           NVARS, ROUNDS, RUN_MS);
    for (int row = 0; row < NROWS; row++) {
        double ns = 1e9 / best[row];

        printf("%-24s %8.0f ns per request", row_names[row], ns);
        if (allowed_us > 0) {
            printf("  %5.2f%% of an allowed php request's CPU (%.1f us)",
                   ns / 10 / allowed_us, allowed_us);
        }
        printf("\n");
    }
    printf("%-24s %8.2f of the prelude's time\n", "filter / prelude",
           best[ROW_PRELUDE] / best[ROW_FILTER]);
    return 0;
}
