/*
 * fuzz_control.c - libFuzzer target for the control protocol's codec
 * (middleware/control/control_proto.c): what a peer of the control socket
 * sends, and what suspectctl reads back.
 *
 * Input: any bytes, parsed as a request (the daemon's bounds) and as a
 * reply (suspectctl's).  Oracles: a parsed message lies inside the input
 * and ends with its empty line; another version comes back without lines;
 * every line's name is [a-z][a-z0-9_]* of 1 to 32 bytes with at most 8
 * arguments, none empty; the lines, written again with the writer, parse
 * to the same names and arguments byte for byte (so escaping round-trips
 * every byte value); an error always carries a message.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/control_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz_control: check failed: %s\n", #cond);        \
            abort();                                                           \
        }                                                                      \
    } while (0)

static void check_name(const char *n)
{
    size_t len = strlen(n);

    CHECK(len >= 1 && len <= MW_CTL_NAME_MAX);
    CHECK(n[0] >= 'a' && n[0] <= 'z');
    for (size_t i = 1; i < len; i++) {
        CHECK((n[i] >= 'a' && n[i] <= 'z') || (n[i] >= '0' && n[i] <= '9') ||
              n[i] == '_');
    }
}

/* Writes m again and checks it parses to the same lines. */
static void round_trip(const mw_ctl_msg_t *m, const mw_ctl_limits_t *lim)
{
    mw_ctl_out_t o;
    mw_ctl_msg_t again;
    size_t used = 0;
    suspect_rc_t rc;

    memset(&o, 0, sizeof(o));
    mw_ctl_out_begin(&o);
    for (size_t i = 0; i < m->nlines; i++) {
        mw_ctl_out_line(&o, m->lines[i].name);
        for (size_t k = 0; k < m->lines[i].nargs; k++) {
            mw_ctl_out_arg(&o, m->lines[i].arg[k].p, m->lines[i].arg[k].len);
        }
    }
    rc = mw_ctl_out_end(&o);
    /* An argument of many escaped bytes may outgrow a line when written
     * again (each %XX is 3 bytes): the writer says so, nothing else. */
    if (rc != SUSPECT_OK) {
        CHECK(rc == SUSPECT_E_INVAL);
        mw_ctl_out_free(&o);
        return;
    }
    rc = mw_ctl_parse(o.buf, o.len, lim, &again, &used, NULL);
    if (o.len > lim->max_bytes) {
        CHECK(rc == SUSPECT_E_PARSE);
        mw_ctl_out_free(&o);
        return;
    }
    CHECK(rc == SUSPECT_OK && used == o.len);
    CHECK(again.nlines == m->nlines);
    for (size_t i = 0; i < m->nlines; i++) {
        CHECK(strcmp(again.lines[i].name, m->lines[i].name) == 0);
        CHECK(again.lines[i].nargs == m->lines[i].nargs);
        for (size_t k = 0; k < m->lines[i].nargs; k++) {
            CHECK(again.lines[i].arg[k].len == m->lines[i].arg[k].len);
            CHECK(memcmp(again.lines[i].arg[k].p, m->lines[i].arg[k].p,
                         m->lines[i].arg[k].len) == 0);
        }
    }
    mw_ctl_msg_free(&again);
    mw_ctl_out_free(&o);
}

static void one(const uint8_t *data, size_t size, const mw_ctl_limits_t *lim)
{
    mw_ctl_msg_t m;
    suspect_err_t err;
    size_t used = 0;
    suspect_rc_t rc;

    suspect_err_clear(&err);
    rc = mw_ctl_parse((const char *)data, size, lim, &m, &used, &err);
    if (rc == SUSPECT_E_NOTFOUND) {
        CHECK(size < lim->max_bytes);
        return;
    }
    if (rc != SUSPECT_OK) {
        CHECK(rc == SUSPECT_E_PARSE && err.text[0] != '\0');
        CHECK(m.lines == NULL && m.text == NULL);
        return;
    }
    CHECK(used >= 4 && used <= size && data[used - 1] == '\n' &&
          data[used - 2] == '\n');
    if (m.version != MW_CTL_VERSION) {
        CHECK(m.nlines == 0);
    }
    CHECK(m.nlines <= lim->max_lines);
    for (size_t i = 0; i < m.nlines; i++) {
        check_name(m.lines[i].name);
        CHECK(m.lines[i].nargs <= MW_CTL_ARGS_MAX);
        for (size_t k = 0; k < m.lines[i].nargs; k++) {
            CHECK(m.lines[i].arg[k].len >= 1);
            CHECK(m.lines[i].arg[k].p[m.lines[i].arg[k].len] == '\0');
        }
    }
    round_trip(&m, lim);
    mw_ctl_msg_free(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    one(data, size, &mw_ctl_request_limits);
    one(data, size, &mw_ctl_reply_limits);
    return 0;
}
