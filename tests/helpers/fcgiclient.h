/*
 * fcgiclient.h - a raw FastCGI client for the server tests: it plays the
 * web server byte by byte (built on middleware/fcgi/fcgi_proto.h), so tests can
 * send exactly the records, splits and malformed input they want.
 */
#ifndef SUSPECT_TESTS_FCGICLIENT_H
#define SUSPECT_TESTS_FCGICLIENT_H

#include <CUnit/CUnit.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "fcgi/fcgi_proto.h"
#include "fcgi/fcgi_server.h"

/* A growable byte buffer; aborts the test program when out of memory. */
typedef struct fcbuf {
    uint8_t *p;
    size_t len;
    size_t cap;
} fcbuf_t;

void fcbuf_add(fcbuf_t *b, const void *p, size_t n);
void fcbuf_free(fcbuf_t *b);

/* Appends one record (content len <= 65535, padding pad). */
void fcbuf_record(fcbuf_t *b, uint8_t type, uint16_t id, const void *content,
                  size_t len, uint8_t pad);

/* Appends BEGIN_REQUEST. */
void fcbuf_begin(fcbuf_t *b, uint16_t id, uint16_t role, uint8_t flags);

/* Appends the PARAMS stream of the NULL-terminated "NAME=value" list, in
 * records of at most chunk content bytes, and its empty record. */
void fcbuf_params(fcbuf_t *b, uint16_t id, const char *const *vars,
                  size_t chunk);

/* Appends a whole stream of type (STDIN...) in records of at most 65535
 * bytes, and its empty record. */
void fcbuf_stream(fcbuf_t *b, uint8_t type, uint16_t id, const void *data,
                  size_t len);

/* Connects to the unix socket at path; the descriptor, or -1. */
int fcc_connect(const char *path);

/* Sends all of p in pieces of at most piece bytes (0 = at once); 0 or -1. */
int fcc_send(int fd, const void *p, size_t n, size_t piece);

/* One received record (content up to 65535 bytes, padding dropped). */
typedef struct fcc_record {
    fcgi_header_t h;
    uint8_t content[FCGI_MAX_CONTENT];
} fcc_record_t;

/* Reads one record within timeout_ms; 0, or -1 on EOF, error, timeout or
 * a malformed header. */
int fcc_read_record(int fd, fcc_record_t *r, int timeout_ms);

/* Reads one record without a deadline, giving up when stop_fd becomes
 * readable (an application thread's stop): 0; -1 when its header did not
 * come whole (EOF, error, the stop); -2 when the header is malformed or
 * the rest did not come. */
int fcc_read_record_stop(int fd, fcc_record_t *r, int stop_fd);

/* What came back for one request. */
typedef struct fcc_response {
    fcbuf_t out;       /* STDOUT content */
    bool stdout_ended; /* the empty STDOUT record arrived */
    bool ended;        /* END_REQUEST arrived */
    uint32_t app_status;
    uint8_t proto_status;
} fcc_response_t;

/* Reads records of request id until its END_REQUEST; 0, or -1 when the
 * connection ended first or timeout_ms passed. */
int fcc_read_response(int fd, uint16_t id, fcc_response_t *resp,
                      int timeout_ms);

/* Whether the peer closes fd (EOF or reset) within timeout_ms, skipping
 * whatever records still come. */
bool fcc_wait_closed(int fd, int timeout_ms);

/* Sends req and reads the response of id at the same time (so neither
 * side blocks on a full socket buffer); 0 or -1. */
int fcc_exchange(int fd, const fcbuf_t *req, uint16_t id, fcc_response_t *resp,
                 int timeout_ms);

/*
 * The server under test: mw_server on a unix socket in a fresh temp dir,
 * running fcgi_test_handler (below), io_timeout 3 s.
 */
typedef struct tsrv {
    char *dir;
    char path[512];
    char spec[600];
    char addr[600]; /* for mw_connect() */
    int lfd;
    mw_server_t *s;
} tsrv_t;

/* Starts a server; 0, or -1 (after a CUnit failure). */
int tsrv_start(tsrv_t *t, unsigned workers, size_t params_max,
               unsigned idle_ms);
/* The same on spec (NULL: a unix socket in the temp dir); for
 * "tcp:127.0.0.1:0", addr gets the port chosen. */
int tsrv_start_on(tsrv_t *t, const char *spec, unsigned workers,
                  size_t params_max, unsigned idle_ms);
/* The same with the options of opts (io_timeout_ms 0: 3 s; listen_fd
 * and the handler are the test's). */
int tsrv_start_opts(tsrv_t *t, const char *spec, const mw_server_opts_t *opts);

/* A new connection to the server (mw_connect), or -1. */
int tsrv_connect(tsrv_t *t);
/* Stops and frees it, removes the socket and the dir. */
void tsrv_stop(tsrv_t *t);
/* Waits (with a deadline) until the server's counter at offset off of
 * mw_server_stats_t reaches want; true when it did. */
bool tsrv_wait_stat(tsrv_t *t, size_t off, uint64_t want);

/*
 * The test app, chosen by the MODE variable:
 *   params      (default) prints "role=N" and every NAME=value line
 *   echo        streams the body back
 *   big         writes SIZE bytes of fcc_pattern in uneven pieces
 *   writefirst  writes SIZE bytes first, then reads the body: "body=N"
 *   hold        reports it started and waits for tapp_release()
 *   nowait      reads without waiting (poll on mw_req_read_fd)
 *   prefetch    mw_req_prefetch(10) then the rest with mw_req_read
 *   readone     reads and echoes one byte of the body, leaves the rest
 *   result      reads the body; the last read result is kept
 * Every response starts with "Status: 200 OK\r\n...\r\n\r\n".
 */
void fcgi_test_handler(mw_req_t *req, void *arg);

/* Byte i of the pattern "big" and "writefirst" write. */
uint8_t fcc_pattern(size_t i);

/* Resets the app's shared state. */
void tapp_reset(void);
/* Waits (timeout_ms, scaled) until n handlers reported they started;
 * true when they did. */
bool tapp_wait_started(int n, int timeout_ms);
/* Lets "hold" handlers finish. */
void tapp_release(void);
/* The last read result of a "result" or "nowait" handler; and, for
 * "nowait", the result of its first read. */
long tapp_last_read(void);
long tapp_first_read(void);

/* Suites of the fcgi-server suite kept in other files; 0 or -1. */
int add_listen_tests(CU_pSuite s);
int add_fcgi_hostile_tests(CU_pSuite s);
int add_fcgi_slow_tests(CU_pSuite s);
int add_fcgi_front_tests(CU_pSuite s);

#endif
