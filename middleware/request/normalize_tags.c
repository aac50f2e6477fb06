/*
 * normalize_tags.c - the strip-tags step: a value as PHP's strip_tags()
 * leaves it, or refused where Suspect cannot be sure.
 *
 * Roundcube reads a user name through strip_tags() (rcube_utils::
 * parse_input_value), WordPress through sanitize_user(), which strips
 * tags too: "alice<x1>", "<b>alice" and "alice<!--n-->" are each the
 * account alice there, and would each be a fresh counter here.
 *
 * What strip_tags() does with what a user name can hold (PHP 8, without
 * allowed tags), and what this step does the same:
 *   - a NUL byte outside a tag is dropped;
 *   - '<' followed by white space (isspace: space, \t \n \v \f \r) is
 *     kept, as is '>' outside a tag;
 *   - '<' followed by anything else opens a tag, which ends at the next
 *     '>' and is dropped whole; with no '>' after it, everything from
 *     the '<' to the end is dropped (an unterminated tag, a comment or a
 *     processing instruction alike);
 *   - "<!--" opens a comment, which ends at the first '>' preceded by
 *     "--" (those may be the comment's own: "<!-->" is a whole comment).
 * Refused (SUSPECT_E_INVAL, the request answered 400), because
 * strip_tags() reads them by rules of its own (quotes that hide a '>',
 * nested '<' counted by depth, "<?php" and "<!" states): a tag that
 * holds a quote or another '<', or starts "<?" or "<!" other than a
 * comment, and a comment that holds a quote or a '<'.  No user name of a
 * real person holds one.
 *
 * Cost: one pass; the output is never longer than the input.
 */
#include "normalize_internal.h"

#include <string.h>

static bool php_space(char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

/* Whether t[0..n) holds one of the bytes of set. */
static bool holds(const char *t, size_t n, const char *set)
{
    for (size_t i = 0; i < n; i++) {
        if (strchr(set, t[i]) != NULL && t[i] != '\0') {
            return true;
        }
    }
    return false;
}

/* The end (index of its '>') of the comment that opens at in[i] ("<!--"),
 * n when it never ends. */
static size_t comment_end(const char *in, size_t n, size_t i)
{
    for (size_t k = i + 4; k < n; k++) {
        if (in[k] == '>' && in[k - 1] == '-' && in[k - 2] == '-') {
            return k;
        }
    }
    return n;
}

suspect_rc_t mw_norm_strip_tags(const char *in, size_t n, char *out,
                                size_t *out_len)
{
    size_t i = 0, len = 0;

    while (i < n) {
        const char *gt;
        size_t end;

        if (in[i] != '<' || (i + 1 < n && php_space(in[i + 1]))) {
            if (in[i] != '\0') {
                out[len++] = in[i];
            }
            i++;
            continue;
        }
        if (n - i >= 4 && memcmp(in + i, "<!--", 4) == 0) {
            end = comment_end(in, n, i);
            if (end < n && holds(in + i + 4, end - i - 4, "<\"'")) {
                return SUSPECT_E_INVAL;
            }
        } else {
            gt = memchr(in + i, '>', n - i);
            end = gt != NULL ? (size_t)(gt - in) : n;
            if (gt != NULL &&
                (holds(in + i + 1, end - i - 1, "<\"'") ||
                 (i + 1 < n && (in[i + 1] == '?' || in[i + 1] == '!')))) {
                return SUSPECT_E_INVAL;
            }
        }
        i = end < n ? end + 1 : n;
    }
    *out_len = len;
    return SUSPECT_OK;
}
