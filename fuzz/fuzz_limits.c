/*
 * fuzz_limits.c - libFuzzer target for the limits-file loader
 * (config/limits/limits_xml.c, config/limits/limits.c).
 *
 * Input: the bytes of a limits file, handed to suspect_limits_parse() as
 * the file would be after config_read_file().  Small caps (64 KiB, 200
 * rules) keep the over-the-cap paths reachable.  A snapshot that loads is
 * checked against its own invariants: every rule valid and in range, each
 * action found again by suspect_limits_find() (and only itself), lines
 * positive, warnings in "file:line: warning: " form.  An error must carry
 * a message.  Any violation aborts, so libFuzzer reports it as a crash.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "limits/suspect_limits.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Aborts with a message when cond is false. */
#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz_limits: check failed: %s\n", #cond);         \
            abort();                                                           \
        }                                                                      \
    } while (0)

/* The invariants of a snapshot that loaded. */
static void check_snapshot(const suspect_limits_t *lim, size_t max_rules)
{
    size_t n = suspect_limits_count(lim);

    CHECK(n <= max_rules);
    for (size_t i = 0; i < n; i++) {
        const suspect_rule_t *r = suspect_limits_at(lim, i);

        CHECK(r != NULL && r->action != NULL);
        CHECK(suspect_name_valid(r->action, strlen(r->action)));
        CHECK(r->limit_count >= 1 && r->limit_count <= SUSPECT_LIMIT_COUNT_MAX);
        CHECK(r->window_s >= 1 && r->window_s <= SUSPECT_DURATION_MAX);
        CHECK(r->block_s <= SUSPECT_DURATION_MAX);
        CHECK(suspect_limits_find(lim, r->action) == r);
        CHECK(suspect_limits_line(lim, i) >= 1);
    }
    CHECK(suspect_limits_at(lim, n) == NULL);
    CHECK(suspect_limits_find(lim, "") == NULL);
    for (size_t i = 0; i < suspect_limits_warning_count(lim); i++) {
        const char *w = suspect_limits_warning(lim, i);

        CHECK(w != NULL && strstr(w, ": warning: ") != NULL);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    suspect_limits_opts_t opts = {64u << 10, 200};
    suspect_limits_t *lim = NULL;
    suspect_err_t err;
    suspect_rc_t rc;

    memset(&err, 0, sizeof(err));
    rc = suspect_limits_parse((const char *)data, size, "limits.xml", &opts,
                              &lim, &err);
    if (rc == SUSPECT_OK) {
        CHECK(lim != NULL);
        check_snapshot(lim, opts.max_rules);
        CHECK(suspect_limits_ref(lim) == lim);
        suspect_limits_unref(lim);
        suspect_limits_unref(lim);
    } else {
        CHECK(lim == NULL);
        CHECK(err.code == rc && err.text[0] != '\0');
    }
    return 0;
}
