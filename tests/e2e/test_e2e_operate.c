/*
 * test_e2e_operate.c - suite "operate": watching and steering a running
 * suspect-fcgi, as README's "Operating it" shows, on the demo's stack
 * (nginx -> suspect-fcgi on the memory store -> examples/app/app.cgi)
 * with the <Metrics> and <Log> lines the README adds to examples/
 * suspect.xml.
 *
 * Watch and steer: the lock-out loop of the README locks "bob" out;
 * suspectctl status shows the lock (through the control socket: the
 * memory store lives in the daemon), suspectctl unblock lifts it and the
 * next request gets a 200; a real Prometheus server (Debian's) scrapes
 * the daemon and answers a query for suspect_decisions_total with the
 * denial, and takes every query docs/metrics.md shows; promtool accepts
 * the daemon's whole text; the decision log
 * holds the denial with its restriction end, jq's "who was locked today"
 * recipe of docs/decision-log.md finds bob's hash, and after logrotate's
 * move and SIGUSR1 the log goes on in a new file.
 *
 * A token bucket: examples/limits.xml's OtpSend (5 tokens, 5 back a
 * minute) behind a route whose requests take 2 each: two sends pass, the
 * third is a 429 whose Retry-After and RateLimit headers describe the
 * bucket, suspectctl status shows the tokens in use and when the bucket
 * is full again, the decision log and the metrics name the algorithm,
 * and suspectctl reset empties the bucket.
 *
 * Kept connections: through the shipped snippet and
 * examples/nginx/suspect-upstream.conf, 20 requests one after another
 * leave nginx's connection to suspect-fcgi open (the gauge
 * suspect_fastcgi_connections), and all 20 went over at most nginx's
 * workers' connections.
 *
 * No values in logs: requests carrying marker values in the query, a
 * form, cookies, headers and an Authorization password meet every kind
 * of outcome (allowed, over the limit, locked, missing identity, ambiguous
 * parameter, no route) with suspect-fcgi at -vv and the decision log at
 * "all"; no marker appears in any line of either log.
 */
#include <CUnit/CUnit.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "helpers/e2e.h"
#include "helpers/redisserver.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"
#include "suites.h"

#define APP "/app.cgi"

/* The identity key the README's <Log> line sets. */
#define ID_KEY "change-this-to-a-long-secret"

/* The <Metrics> and <Log> lines of README's "Operating it", on a free
 * port; written into edits (room for 3 strings). */
static void operate_edits(const char *edits[3], char *with, size_t size,
                          int mport, const char *decisions)
{
    snprintf(with, size,
             "<Response format=\"auto\"/>\n"
             "  <Metrics listen=\"tcp:127.0.0.1:%d\"/>\n"
             "  <Log decisions=\"%s\" path=\"decisions.log\""
             " identityKey=\"" ID_KEY "\"/>",
             mport, decisions);
    edits[0] = "<Response format=\"auto\"/>";
    edits[1] = with;
    edits[2] = NULL;
}

/* One forgot-password request for account (the README's loop). */
static int forgot(const char *account)
{
    char url[E2E_URL], body[64];

    snprintf(body, sizeof(body), "account=%s", account);
    return e2e_status(
        (const char *[]){"-d", body, e2e_url(url, APP "?op=forgot"), NULL});
}

/* Runs sh -c cmd in the test's directory with its output in DIR/name;
 * the exit status, the output in *out (the caller frees it). */
static int sh(const char *cmd, const char *name, char **out)
{
    char log[TEST_PATH_MAX], full[4096];
    const char *argv[] = {"sh", "-c", full, NULL};
    test_proc_t p;

    snprintf(full, sizeof(full), "cd '%s' && %s", e2e.dir, cmd);
    e2e_path(log, name);
    unlink(log);
    *out = NULL;
    if (test_proc_start(&p, argv, NULL, log) != 0 ||
        test_proc_wait(&p, test_scale_ms(20000)) != 0) {
        return -1;
    }
    *out = test_read_file(log, NULL);
    return WIFEXITED(p.status) ? WEXITSTATUS(p.status) : -1;
}

/* Starts Prometheus scraping 127.0.0.1:mport every second, on a free
 * port (*pport); waits until it is ready.  0 or -1. */
static int prometheus_start(test_proc_t *p, int mport, int *pport)
{
    char yml[TEST_PATH_MAX], data[TEST_PATH_MAX], log[TEST_PATH_MAX];
    char cfg[512], flag_cfg[TEST_PATH_MAX + 32], flag_data[TEST_PATH_MAX + 32];
    char flag_listen[64], ready[96];
    const char *argv[] = {"prometheus", flag_cfg,           flag_data,
                          flag_listen,  "--log.level=warn", NULL};

    *pport = test_free_port();
    snprintf(cfg, sizeof(cfg),
             "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
             "scrape_configs:\n  - job_name: suspect\n    static_configs:\n"
             "      - targets: ['127.0.0.1:%d']\n",
             mport);
    e2e_path(yml, "prometheus.yml");
    e2e_path(data, "prometheus-data");
    e2e_path(log, "prometheus.log");
    if (test_write_file(yml, cfg, strlen(cfg)) != 0) {
        return -1;
    }
    snprintf(flag_cfg, sizeof(flag_cfg), "--config.file=%s", yml);
    snprintf(flag_data, sizeof(flag_data), "--storage.tsdb.path=%s", data);
    snprintf(flag_listen, sizeof(flag_listen),
             "--web.listen-address=127.0.0.1:%d", *pport);
    snprintf(ready, sizeof(ready), "http://127.0.0.1:%d/-/ready", *pport);
    if (test_proc_start(p, argv, NULL, log) != 0 ||
        test_wait_listen(*pport, NULL, p, test_scale_ms(20000)) != 0) {
        return -1;
    }
    for (int64_t end = mono_ms() + test_scale_ms(20000); mono_ms() < end;) {
        if (e2e_status((const char *[]){ready, NULL}) == 200) {
            return 0;
        }
        usleep(50000);
    }
    return -1;
}

/* Asks Prometheus for query until an answer holds want; true when one
 * did before the deadline. */
static bool prometheus_sees(int pport, const char *query, const char *want)
{
    char url[96], q[512];
    test_http_t r;

    snprintf(url, sizeof(url), "http://127.0.0.1:%d/api/v1/query", pport);
    snprintf(q, sizeof(q), "query=%s", query);
    for (int64_t end = mono_ms() + test_scale_ms(30000); mono_ms() < end;) {
        bool seen = false;

        if (e2e_http(&r, (const char *[]){"-G", "--data-urlencode", q, url,
                                          NULL}) == 0 &&
            r.status == 200 && r.body != NULL) {
            seen = strstr(r.body, want) != NULL;
        }
        test_http_free(&r);
        if (seen) {
            return true;
        }
        usleep(200000);
    }
    fprintf(stderr, "\n  prometheus never answered %s with %s\n", query, want);
    return false;
}

/* Asks Prometheus each query of docs/metrics.md's "Some PromQL" block;
 * true when it accepted every one. */
static bool prometheus_takes_doc_queries(int pport)
{
    char src[TEST_PATH_MAX], url[96], q[512];
    char *text = test_read_file(e2e_src(src, "docs/metrics.md"), NULL);
    char *block = text != NULL ? strstr(text, "Some PromQL:\n\n```\n") : NULL;
    bool ok = block != NULL;
    int n = 0;

    snprintf(url, sizeof(url), "http://127.0.0.1:%d/api/v1/query", pport);
    for (char *line = block != NULL ? strchr(block, '`') + 4 : NULL;
         ok && line != NULL && strncmp(line, "```", 3) != 0;) {
        char *end = strchr(line, '\n');
        test_http_t r;

        if (end == NULL) {
            ok = false;
            break;
        }
        *end = '\0';
        if (line[0] != '#' && line[0] != '\0') {
            snprintf(q, sizeof(q), "query=%s", line);
            ok = e2e_http(&r, (const char *[]){"-G", "--data-urlencode", q, url,
                                               NULL}) == 0 &&
                 r.status == 200 && r.body != NULL &&
                 strstr(r.body, "\"status\":\"success\"") != NULL;
            if (!ok) {
                fprintf(stderr, "\n  prometheus refused %s: %s\n", line,
                        r.body != NULL ? r.body : "?");
            }
            test_http_free(&r);
            n++;
        }
        line = end + 1;
    }
    free(text);
    return ok && n >= 6;
}

static void test_watch_and_steer(void)
{
    const char *edits[3];
    char with[512], murl[96], dlog[TEST_PATH_MAX], *out = NULL;
    int mport = test_free_port(), pport;
    int64_t t0 = wall_ms();
    test_proc_t prom;

    operate_edits(edits, with, sizeof(with), mport, "denials");
    e2e_path(dlog, "decisions.log");
    CU_ASSERT_EQUAL_FATAL(e2e_start_cgi(edits), 0);
    /* README: 3 per 30 min, then locked out for 30 min */
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(forgot("bob"), 200);
    }
    CU_ASSERT_EQUAL(forgot("bob"), 429);

    /* see it */
    CU_ASSERT_EQUAL(
        e2e_ctl(&out,
                (const char *[]){"status", "SecureForgotAccount", "bob", NULL}),
        0);
    CU_ASSERT(out != NULL && strstr(out, "locked until") != NULL);
    CU_ASSERT(out != NULL && strstr(out, "3 in the window, 0 remaining"));
    free(out);
    CU_ASSERT_EQUAL(e2e_ctl(&out, (const char *[]){"locked", NULL}), 0);
    CU_ASSERT(out != NULL &&
              strstr(out, "1 identity locked now (memory store)") != NULL);
    free(out);

    /* watch it */
    CU_ASSERT_EQUAL_FATAL(prometheus_start(&prom, mport, &pport), 0);
    CU_ASSERT(prometheus_sees(
        pport,
        "suspect_decisions_total{action=\"SecureForgotAccount\","
        "outcome=\"denied_locked\"}",
        "\"1\"]"));
    CU_ASSERT_TRUE(prometheus_takes_doc_queries(pport));
    snprintf(murl, sizeof(murl),
             "curl -sf http://127.0.0.1:%d/metrics | "
             "promtool check metrics",
             mport);
    CU_ASSERT_EQUAL(sh(murl, "promtool.out", &out), 0);
    free(out);

    /* find it in the decision log, with its restriction end (lines reach
     * the file within 0.1 s) */
    CU_ASSERT_EQUAL(
        test_wait_file_text(dlog, "denied_locked", test_scale_ms(5000)), 0);
    CU_ASSERT_EQUAL(sh("jq -e -c 'select(.outcome == \"denied_locked\") | "
                       "[.action, .identity_type, .restriction_end_ms, .path]' "
                       "decisions.log",
                       "jq.out", &out),
                    0);
    CU_ASSERT(out != NULL &&
              strstr(out, "[\"SecureForgotAccount\",\"AccountId\",") != NULL);
    CU_ASSERT(out != NULL && strstr(out, ",\"/app.cgi\"]") != NULL);
    if (out != NULL && strchr(out, ',') != NULL) {
        long long end = atoll(strstr(strchr(out, ',') + 1, ",") + 1);

        CU_ASSERT(end >= t0 + 1800000 && end <= wall_ms() + 1800000);
    }
    free(out);
    /* docs/decision-log.md: who was locked today, and for what.  "Today"
     * is the day the denial was logged (date is a shell function here):
     * a run that crossed midnight UTC since would look for it on the next
     * day. */
    CU_ASSERT_EQUAL(sh("date() { jq -r 'select(.outcome == "
                       "\"denied_locked\") | .time[0:10]' decisions.log | "
                       "head -n 1; }; "
                       "jq -r --arg day \"$(date -u +%Y-%m-%d)\" "
                       "'select(.outcome == \"denied_locked\" and "
                       "(.time | startswith($day))) | "
                       "\"\\(.identity_hash) \\(.identity_type) \\(.action)\"' "
                       "decisions.log | sort | uniq -c",
                       "recipe.out", &out),
                    0);
    CU_ASSERT(out != NULL && strstr(out, "1 ") != NULL &&
              strstr(out, " AccountId SecureForgotAccount") != NULL);
    free(out);

    /* steer it: the next request is allowed */
    CU_ASSERT_EQUAL(
        e2e_ctl(&out, (const char *[]){"unblock", "SecureForgotAccount", "bob",
                                       NULL}),
        0);
    CU_ASSERT(out != NULL && strstr(out, "the next request is allowed"));
    free(out);
    CU_ASSERT_EQUAL(forgot("bob"), 200);
    CU_ASSERT_EQUAL(forgot("bob"), 429);
    CU_ASSERT_EQUAL(e2e_ctl(&out, (const char *[]){"stats", NULL}), 0);
    CU_ASSERT(out != NULL &&
              strstr(out, "SecureForgotAccount: allowed 4 denied_locked 2") !=
                  NULL);
    free(out);

    /* logrotate: moved away, SIGUSR1, a new file */
    CU_ASSERT_EQUAL(sh("mv decisions.log decisions.log.1", "mv.out", &out), 0);
    free(out);
    CU_ASSERT_EQUAL(test_proc_signal(&e2e.fcgi, SIGUSR1), 0);
    CU_ASSERT_EQUAL(test_wait_file_text(e2e.log, "decision log reopened",
                                        test_scale_ms(5000)),
                    0);
    CU_ASSERT_EQUAL(forgot("bob"), 429);
    CU_ASSERT_EQUAL(
        test_wait_file_text(dlog, "denied_locked", test_scale_ms(5000)), 0);
    CU_ASSERT_EQUAL(sh("jq -e -s 'length == 1' decisions.log && "
                       "jq -e -s 'length == 2' decisions.log.1",
                       "rotate.out", &out),
                    0);
    free(out);
    test_proc_stop(&prom, SIGTERM, test_scale_ms(5000));
}

/* Values that must never reach a log line. */
static const char *const markers[] = {"QSECRET41", "FSECRET42", "CSECRET43",
                                      "HSECRET44", "PSECRET45", "MSECRET46",
                                      "ASECRET47", "XSECRET48", NULL};

static void test_no_values_in_logs(void)
{
    const char *edits[3];
    const char *extra[] = {"-v", NULL}; /* with the helper's -v: -vv */
    char with[512], url[E2E_URL];
    int mport = test_free_port();
    char *text;

    operate_edits(edits, with, sizeof(with), mport, "all");
    CU_ASSERT_EQUAL_FATAL(e2e_prepare_backend("suspect.xml", edits), 0);
    CU_ASSERT_EQUAL_FATAL(
        test_suspect_start(&e2e.fcgi, e2e.dir, e2e.conf, e2e.sock, 0, extra),
        0);
    CU_ASSERT_EQUAL_FATAL(e2e_start_nginx("nginx/suspect-cgi.conf"), 0);
    for (int i = 0; i < 4; i++) {
        /* bank: allowed, allowed, over the limit, over the limit */
        e2e_status((const char *[]){
            "-b", "member=CSECRET43; SESSIONID=MSECRET46", "-H",
            "X-Account-Id: HSECRET44", "-u", "alice:PSECRET45", "-d",
            "account=FSECRET42&password=FSECRET42",
            e2e_url(url, APP "?op=bank&token=QSECRET41"), NULL});
        /* forgot: allowed x3, then locked */
        e2e_status((const char *[]){
            "-d", "account=ASECRET47",
            e2e_url(url, APP "?op=forgot&otp=QSECRET41"), NULL});
        /* promo: a composite of query values */
        e2e_status((const char *[]){
            e2e_url(url, APP "?op=promo&member=QSECRET41&code=XSECRET48"),
            NULL});
    }
    /* an ambiguous parameter (400), a missing identity, no route */
    e2e_status((const char *[]){
        e2e_url(url, APP "?op=promo&member=QSECRET41&member=XSECRET48&code=x"),
        NULL});
    e2e_status((const char *[]){"-H", "X-Account-Id: ", "-d", "x=FSECRET42",
                                e2e_url(url, APP "?op=resend&k=QSECRET41"),
                                NULL});
    e2e_status((const char *[]){e2e_url(url, "/other.cgi?q=QSECRET41"), NULL});
    /* A stop, not a kill: the decision log's last lines are written out
     * as the daemon stops. */
    test_proc_stop(&e2e.web, SIGKILL, 2000);
    test_proc_stop(&e2e.fcgi, SIGTERM, test_scale_ms(10000));
    e2e_stop();
    text = test_read_file(e2e.log, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "deny /app.cgi action="));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "refuse /app.cgi action=PromoQuery"));
    for (size_t i = 0; markers[i] != NULL; i++) {
        if (strstr(text, markers[i]) != NULL) {
            fprintf(stderr, "\n  the daemon's log holds %s\n", markers[i]);
            CU_FAIL("a value in the daemon's log");
        }
    }
    free(text);
    {
        char path[TEST_PATH_MAX];

        text = test_read_file(e2e_path(path, "decisions.log"), NULL);
    }
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"outcome\":\"denied_locked\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"outcome\":\"rejected\""));
    for (size_t i = 0; markers[i] != NULL; i++) {
        if (strstr(text, markers[i]) != NULL) {
            fprintf(stderr, "\n  the decision log holds %s\n", markers[i]);
            CU_FAIL("a value in the decision log");
        }
    }
    free(text);
}

/* One OTP send for phone through the cost-2 route: the response. */
static void otp_send(test_http_t *r, const char *phone)
{
    char url[E2E_URL], path[64];

    snprintf(path, sizeof(path), APP "?op=otp&phone=%s", phone);
    e2e_http(r, (const char *[]){"-X", "POST", e2e_url(url, path), NULL});
}

static void test_token_bucket(void)
{
    const char *edits[3];
    char with[1024], url[256], dlog[TEST_PATH_MAX], *out = NULL;
    int mport = test_free_port();
    const char *h;
    test_http_t r;

    operate_edits(edits, with, sizeof(with), mport, "denials");
    snprintf(with + strlen(with), sizeof(with) - strlen(with),
             "\n  <Route action=\"OtpSend\" method=\"POST\" "
             "path=\"/app.cgi\" param=\"op=otp\" paramIn=\"query\" "
             "cost=\"2\">\n"
             "    <Identity type=\"Phone\" from=\"query:phone\"/>\n"
             "  </Route>");
    e2e_path(dlog, "decisions.log");
    CU_ASSERT_EQUAL_FATAL(e2e_start_cgi(edits), 0);
    for (int i = 0; i < 2; i++) {
        otp_send(&r, "0912345678");
        CU_ASSERT_EQUAL(r.status, 404); /* the app's: it has no such op */
        test_http_free(&r);
    }
    /* one token left, two wanted: the next one is back within 12 s */
    otp_send(&r, "0912345678");
    CU_ASSERT_EQUAL(r.status, 429);
    h = test_http_header(&r, "Retry-After");
    CU_ASSERT(h != NULL && (strcmp(h, "12") == 0 || strcmp(h, "11") == 0));
    CU_ASSERT_STRING_EQUAL(test_http_header(&r, "RateLimit-Policy") ?: "",
                           "\"OtpSend\";q=5;w=60;burst=5");
    h = test_http_header(&r, "RateLimit");
    CU_ASSERT(h != NULL && (strcmp(h, "\"OtpSend\";r=0;t=12") == 0 ||
                            strcmp(h, "\"OtpSend\";r=0;t=11") == 0));
    test_http_free(&r);
    /* another phone has its own bucket */
    otp_send(&r, "0987654321");
    CU_ASSERT_EQUAL(r.status, 404);
    test_http_free(&r);

    CU_ASSERT_EQUAL(e2e_ctl(&out, (const char *[]){"status", "OtpSend",
                                                   "0912345678", NULL}),
                    0);
    CU_ASSERT(out != NULL &&
              strstr(out, "token bucket of 5, 5 back per 60 s") != NULL);
    CU_ASSERT(out != NULL && strstr(out, "4 in use, 1 left of 5") != NULL);
    CU_ASSERT(out != NULL && strstr(out, "full again") != NULL);
    /* one token is room for a request of cost 1, the status's measure */
    CU_ASSERT(out != NULL && strstr(out, "room again") == NULL);
    free(out);
    CU_ASSERT_EQUAL(e2e_ctl(&out, (const char *[]){"-j", "status", "OtpSend",
                                                   "0912345678", NULL}),
                    0);
    CU_ASSERT(out != NULL &&
              strstr(out, "\"algorithm\":\"TokenBucket\"") != NULL);
    free(out);

    CU_ASSERT_EQUAL(test_wait_file_text(dlog, "\"algorithm\":\"TokenBucket\"",
                                        test_scale_ms(5000)),
                    0);
    snprintf(url, sizeof(url),
             "curl -sf http://127.0.0.1:%d/metrics | grep -F "
             "'suspect_action_info{action=\"OtpSend\","
             "algorithm=\"TokenBucket\"} 1'",
             mport);
    CU_ASSERT_EQUAL(sh(url, "metrics.out", &out), 0);
    free(out);

    /* reset: a full bucket again, two sends pass */
    CU_ASSERT_EQUAL(
        e2e_ctl(&out, (const char *[]){"reset", "OtpSend", "0912345678", NULL}),
        0);
    free(out);
    for (int i = 0; i < 2; i++) {
        otp_send(&r, "0912345678");
        CU_ASSERT_EQUAL(r.status, 404);
        test_http_free(&r);
    }
}

/* The value of the unlabelled sample name in the daemon's metrics on
 * mport; -1 when there is none. */
static long metric(int mport, const char *name)
{
    char cmd[256], *out = NULL, *at;
    long v = -1;

    snprintf(cmd, sizeof(cmd), "curl -sf http://127.0.0.1:%d/metrics", mport);
    if (sh(cmd, "metrics.out", &out) == 0 && out != NULL) {
        for (at = strstr(out, name); at != NULL; at = strstr(at + 1, name)) {
            if ((at == out || at[-1] == '\n') && at[strlen(name)] == ' ') {
                v = strtol(at + strlen(name) + 1, NULL, 10);
                break;
            }
        }
    }
    free(out);
    return v;
}

static void test_kept_connections(void)
{
    const char *edits[3];
    char with[1024], url[E2E_URL];
    int mport = test_free_port();
    long open, requests;

    operate_edits(edits, with, sizeof(with), mport, "denials");
    CU_ASSERT_EQUAL_FATAL(e2e_start_cgi(edits), 0);
    for (int i = 0; i < 20; i++) {
        CU_ASSERT_EQUAL(e2e_status((const char *[]){e2e_url(url, APP), NULL}),
                        200);
    }
    /* nginx lets an idle one go after 4 s: read the gauge at once */
    open = metric(mport, "suspect_fastcgi_connections");
    requests = metric(mport, "suspect_fastcgi_requests_total");
    CU_ASSERT(open >= 1);
    CU_ASSERT(requests >= 20);
}

int register_operate_suite(void)
{
    CU_pSuite s = CU_add_suite_with_setup_and_teardown("operate", NULL, NULL,
                                                       e2e_setup, e2e_teardown);

    if (s == NULL ||
        !CU_add_test(s, "watch and steer the README's lock",
                     test_watch_and_steer) ||
        !CU_add_test(s, "no value in any log line", test_no_values_in_logs) ||
        !CU_add_test(s, "a token bucket of OTP sends", test_token_bucket) ||
        !CU_add_test(s, "nginx keeps its connections", test_kept_connections)) {
        return -1;
    }
    return 0;
}
