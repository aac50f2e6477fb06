/*
 * e2e.h - the fixture of the "e2e" suite: the examples/ deployments run
 * for real in a temp dir, on loopback, with free ports.
 *
 * Each test gets a fresh directory (e2e_setup) and ends with every
 * process killed and reaped and the directory removed (e2e_teardown; on
 * a failure the logs are printed first).  A stack is one deployment shape
 * of examples/: its suspect.xml and web server snippet are read from the
 * source tree and only their paths and ports are rewritten
 * ("/run/suspect/fcgi.sock" -> DIR/fcgi.sock, "/srv/suspect/app" ->
 * DIR/app), so the tests run exactly the configurations the examples
 * show; the snippets go where their headers say (nginx: inside a server
 * block on a free port of 127.0.0.1; lighttpd: after a lighttpd.conf that
 * sets the port and the document root).  The "dropins" suite installs
 * them into Debian's own layout.
 */
#ifndef SUSPECT_TESTS_E2E_H
#define SUSPECT_TESTS_E2E_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "procs.h"

/* Paths of the fixture; shorter than TEST_PATH_MAX, so a file name
 * appended to one always fits a TEST_PATH_MAX buffer. */
#define E2E_PATH 256

typedef struct e2e {
    char *dir;               /* the test's temp dir */
    char sock[E2E_PATH];     /* suspect-fcgi's socket */
    char php_sock[E2E_PATH]; /* php-cgi's */
    char conf[E2E_PATH];     /* DIR/suspect.xml */
    char limits[E2E_PATH];   /* DIR/limits.xml */
    char app[E2E_PATH];      /* DIR/app, the CGI root */
    char log[E2E_PATH];      /* DIR/suspect.log */
    int port;                /* the web server's, on 127.0.0.1 */
    const char *nginx_idle;  /* how long nginx keeps an idle connection to
                                suspect-fcgi (NULL: as shipped, 4s) */
    test_proc_t fcgi, web, php;
} e2e_t;

/* The running test's fixture. */
extern e2e_t e2e;

/* Per-test setup and teardown (CU_add_suite_with_setup_and_teardown). */
void e2e_setup(void);
void e2e_teardown(void);

/* Writes the absolute path of rel in the source tree ($SUSPECT_SRCDIR)
 * into path (the caller's) and returns it. */
const char *e2e_src(char path[TEST_PATH_MAX], const char *rel);

/* The deployment shapes of examples/ (apache: suspect-authorizer.xml on
 * TCP, with apache/authnz-fcgi.conf).  conf_edits are extra
 * {from, to, ..., NULL} replacements for suspect.xml (may be NULL).
 * 0, or -1 with the reason on stderr. */
int e2e_start_cgi(const char *const conf_edits[]);
int e2e_start_php(const char *const conf_edits[]);
/* examples/suspect-login.xml: nginx -> suspect-fcgi -> php-cgi (8
 * children) running examples/app/login.php. */
int e2e_start_login(const char *const conf_edits[]);
int e2e_start_auth_request(const char *const conf_edits[]);
int e2e_start_authorizer(const char *const conf_edits[]);
int e2e_start_apache(const char *const conf_edits[]);

/* What every stack shares: a port, limits.xml, and examples/example_conf
 * (with edits) as DIR/suspect.xml.  0 or -1. */
int e2e_prepare(const char *example_conf, const char *const edits[]);

/* The half of a shape behind the web server, but suspect-fcgi: a port,
 * limits.xml, examples/example_conf (with conf_edits) as DIR/suspect.xml,
 * the example app in DIR/app (index.php and php-cgi for the PHP shapes,
 * else app.cgi).  0 or -1. */
int e2e_prepare_backend(const char *example_conf,
                        const char *const conf_edits[]);

/* e2e_prepare_backend(), then suspect-fcgi on it.  0 or -1. */
int e2e_start_backend(const char *example_conf, const char *const conf_edits[]);

/* Starts nginx with the examples/ snippet (written to DIR/site.conf) in
 * the server block of a site on e2e.port serving DIR/app, and
 * examples/nginx/suspect-upstream.conf at the http level, as the
 * snippet's header says to install them.  0 or -1. */
int e2e_start_nginx(const char *snippet);

/* e2e_start_nginx() with the {from, to, ..., NULL} replacements edits
 * made in the snippet (e.g. a fastcgi_param of a misconfigured site).
 * 0 or -1. */
int e2e_start_nginx_edits(const char *snippet, const char *const edits[]);

/* Starts suspect-fcgi alone on the DIR/suspect.xml written by
 * e2e_write_example(). */
int e2e_start_suspect(void);

/* Stops everything of the current stack (the directory stays). */
void e2e_stop(void);

/* Writes DIR/name into path (the caller's) and returns it. */
const char *e2e_path(char path[TEST_PATH_MAX], const char *name);

/* Writes examples/example with the standard and the extra replacements
 * to DIR/name.  0 or -1. */
int e2e_write_example(const char *example, const char *name,
                      const char *const edits[]);

/* Writes the limits file (text) atomically: a temp file renamed over
 * DIR/limits.xml, so a reload never sees half of it. */
int e2e_write_limits(const char *text);

/* Room for any URL e2e_url() writes. */
#define E2E_URL 512

/* Writes "http://127.0.0.1:PORT" + path into url (the caller's, E2E_URL
 * bytes, cut to fit) and returns it. */
const char *e2e_url(char url[E2E_URL], const char *path);

/* test_http() in the test's directory. */
int e2e_http(test_http_t *r, const char *const args[]);

/* Runs suspectctl with args (after -c DIR/suspect.xml); its exit status,
 * stdout in *out (the caller frees it). */
int e2e_ctl(char **out, const char *const args[]);

/* The status of one request (curl args), its response freed. */
int e2e_status(const char *const args[]);

/* Writes a small shell CGI program DIR/app/name (mode 0755) whose body is
 * script with "@DIR@" replaced. */
int e2e_write_cgi(const char *name, const char *script);

/* A Perl CGI.pm 4.55 program for e2e_write_cgi(): reads url_param('op'),
 * param('member') and cookie('member'); for op=login appends "login
 * FORM", for op=bank "bank COOKIE", to DIR/performed.log; prints
 * "[OP p=FORM c=COOKIE]" (e2e_apps.c). */
extern const char e2e_cgipm_app[];

/* How many lines of DIR/performed.log are exactly line. */
int e2e_performed(const char *line);

/* Repeat offenders, three locks (BlockFactor 2, a lock of s seconds
 * first): for k = 0, 1, 2, attempt() until it is not a 429 (10 s, scaled:
 * the last lock waited out), which must be pass; the next attempt must be
 * the 429 of a lock of 1000 * s << k ms.  attempt() puts its status in
 * *st and returns the retryAfterMs of a 429 (-1 otherwise) (e2e_apps.c). */
void e2e_check_escalation(long (*attempt)(int *st), int pass, unsigned s);

/* Whether r is the denial of action (limit per window_s) with a
 * Retry-After in retry_min..retry_max, RateLimit-Policy, RateLimit (r=0)
 * and Cache-Control: no-store; says what differs on stderr. */
bool e2e_is_denial(const test_http_t *r, const char *action, int limit,
                   int window_s, long retry_min, long retry_max);

/* A bank update (member cookie "shape-1", header accept or none) to path:
 * the response in r. */
void e2e_bank(test_http_t *r, const char *path, const char *accept);

/* The least Retry-After of a denial whose window (or lock) of window_s
 * seconds began with a request sent after since (mono_ms()): window_s
 * less the seconds gone since, rounded up, less one for rounding.  A
 * slow machine's requests make it lower, never a failure. */
long e2e_retry_floor(long window_s, long long since);

/* Two updates through to the app, the third denied (e2e_is_denial, with
 * accept on the third); failures are CUnit assertions.  Returns the
 * mono_ms() before the first (for e2e_retry_floor()). */
long long e2e_bank_scenario(const char *path, const char *accept);

/* Whether r has status and a body beginning with prefix (else says). */
bool e2e_body_starts(const test_http_t *r, int status, const char *prefix);

/* Most requests e2e_storm() sends. */
#define E2E_STORM_MAX 100

/* n (up to E2E_STORM_MAX) POSTs of body to path, all at once (one curl,
 * --parallel); counts the statuses into ok (2xx, 3xx), denied (429) and
 * other.  Failures to run curl are CUnit assertions. */
void e2e_storm(const char *path, const char *body, int n, int *ok, int *denied,
               int *other);

/* The tests of test_e2e_ops.c and test_e2e_shapes.c; 0 or -1. */
struct CU_Suite;
int e2e_add_ops_tests(struct CU_Suite *s);
int e2e_add_failure_tests(struct CU_Suite *s);
int e2e_add_shape_tests(struct CU_Suite *s);
int e2e_add_device_tests(struct CU_Suite *s);
int e2e_add_body_tests(struct CU_Suite *s);
int e2e_add_challenge_tests(struct CU_Suite *s);

/* ---- raw FastCGI, straight to suspect-fcgi's socket -------------------- */

/* Connects to e2e.sock; the fd, or -1. */
int e2e_fcgi_connect(void);

/* Sends one record; 0 or -1 (the peer may have closed: EPIPE). */
int e2e_fcgi_send(int fd, int type, int id, const void *data, size_t len);

/* Appends one name-value pair to buf at *len (cap bytes); 0 or -1. */
int e2e_fcgi_pair(char *buf, size_t cap, size_t *len, const char *name,
                  const char *value);

/* Reads until EOF (or a reset), size bytes or ms: the bytes read; *eof
 * says whether the peer closed the connection. */
size_t e2e_read_until_eof(int fd, char *buf, size_t size, unsigned ms,
                          bool *eof);

/* Whether the len bytes of records at buf hold one of type; the contents
 * of all records of that type go into out (NUL-terminated; may be NULL). */
bool e2e_fcgi_has(const char *buf, size_t len, int type, char *out,
                  size_t out_size);

/* Whether pid is gone (a zombie counts unless suspect-fcgi is its parent
 * and has not reaped it). */
bool e2e_pid_gone(pid_t pid);

/* ---- raw FastCGI on kept connections, and memory (the abuse suite) ---- */

/* e2e_fcgi_pair() for a name and a value of given lengths (the value may
 * hold NUL bytes); 0 or -1. */
int e2e_fcgi_pair_n(char *buf, size_t cap, size_t *len, const char *name,
                    size_t name_len, const char *value, size_t value_len);

/* One request on fd: BEGIN_REQUEST (role; FCGI_KEEP_CONN when keep), the
 * PARAMS bytes (split into records), and for a responder (role 1) the
 * body as STDIN; then the records up to END_REQUEST within ms.  The STDOUT
 * text goes into out (NUL-terminated, cut to out_size).  0 when
 * END_REQUEST came, else -1. */
int e2e_fcgi_exchange(int fd, int role, bool keep, const char *params,
                      size_t params_len, const char *body, size_t body_len,
                      char *out, size_t out_size, unsigned ms);

/* The HTTP status of a CGI response text: its "Status:" line, else 200. */
int e2e_cgi_status(const char *text);

/* The resident set size of pid in KiB (VmRSS), or -1. */
long e2e_rss_kb(pid_t pid);

#endif
