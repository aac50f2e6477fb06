/*
 * normalize_internal.h - what the two halves of the normaliser share:
 * normalize.c (compiling a step list) and normalize_apply.c (applying it).
 * A compiled normaliser is a fixed array of steps; byte sets are 256-bit
 * tables, a map's pairs point into the normaliser's pool.
 */
#ifndef MW_NORMALIZE_INTERNAL_H
#define MW_NORMALIZE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "normalize.h"

/* Pairs of all the maps of one normaliser. */
#define MAP_MAX_PAIRS 64
/* Ranges of characters past ASCII in one only: class. */
#define CLASS_MAX_RANGES 8

typedef enum step_kind {
    ST_TRIM,
    ST_LTRIM,
    ST_RTRIM,
    ST_STRIP,
    ST_COLLAPSE,
    ST_LOWER,
    ST_CASEFOLD,
    ST_UNACCENT,
    ST_ALNUM,
    ST_MAP,
    ST_ENTITIES,
    ST_PREFIX,
    ST_ONLY,
    ST_TAGS,
    ST_UTF8,
    ST_SCRIPTS,
    ST_OCTETS,
    ST_ENTREFS,
    ST_NUMBER,
    ST_ACCENTS,
    ST_COLLATE,
    ST_ALIAS
} step_kind_t;

typedef struct map_pair {
    const char *from;
    size_t from_len;
    const char *to;
    size_t to_len;
} map_pair_t;

typedef struct step {
    step_kind_t kind;
    uint8_t set[32]; /* trim, strip, collapse: the bytes; alnum: the ASCII
                        kept besides; only: the ASCII allowed */
    char first;      /* collapse: what a run becomes */
    size_t npairs;   /* map */
    map_pair_t *pairs;
    size_t grow;        /* map: the longest to, at least 1 (output bound) */
    const char *prefix; /* strip-prefix: the bytes (in the pool) */
    size_t prefix_len;  /* ... and their length */
    size_t nranges;     /* only: the ranges past ASCII, inclusive */
    uint32_t lo[CLASS_MAX_RANGES];
    uint32_t hi[CLASS_MAX_RANGES];
    const char *text; /* as written, for mw_norm_describe() */
    void *coll;       /* collate: the collator (normalize_collate.c) */
    void *alias;      /* aliases: the table (normalize_alias.c) */
} step_t;

struct mw_norm {
    size_t nsteps;
    step_t step[MW_NORM_MAX_STEPS];
    char *pool; /* texts and decoded arguments */
    size_t pool_used, pool_size;
    map_pair_t *pairs; /* every map's pairs */
    size_t npairs;
};

/* The bytes PHP's trim() removes by default, NUL aside. */
#define MW_NORM_PHP_TRIM " \t\n\r\v"

/* The html-entities step (normalize.h) is weak in the normaliser's own
 * files: see normalize.h. */
#pragma weak mw_norm_html_decode

/* The collate step (normalize.h) is weak too. */
#pragma weak mw_norm_collate_open
#pragma weak mw_norm_collate_close
#pragma weak mw_norm_collate_key

/* The strip-tags step (normalize_tags.c): in[0..n) as PHP's strip_tags()
 * leaves it, into out (room for n bytes), *out_len its length;
 * SUSPECT_E_INVAL for a tag strip_tags() reads by rules of its own. */
suspect_rc_t mw_norm_strip_tags(const char *in, size_t n, char *out,
                                size_t *out_len);

/* strip-scripts, strip-octets, strip-entities (normalize_wp.c): in[0..n)
 * without the matches of the step's expression, into out (room for n). */
void mw_norm_strip_matches(step_kind_t kind, const char *in, size_t n,
                           char *out, size_t *out_len);

/* The remove-accents step (normalize_wp.c): in[0..n) as WordPress's
 * remove_accents() leaves it, in a new heap block *out (the caller frees
 * it; NULL when the value stays as it is), *out_len its length.
 * SUSPECT_E_INVAL for a value that is not UTF-8, SUSPECT_E_NOMEM. */
suspect_rc_t mw_norm_remove_accents(const char *in, size_t n, char **out,
                                    size_t *out_len);

/* The number step (normalize_wp.c): an all-digit in[0..n) without its
 * leading zeros, anything else as it is, into out (room for n). */
void mw_norm_number(const char *in, size_t n, char *out, size_t *out_len);

/* The aliases step (normalize_alias.c).  mw_alias_key_fn reads a name of
 * the table as the steps before the aliases step do: a new heap block
 * *out (the caller frees it), *out_len its length; SUSPECT_E_INVAL when
 * the steps refuse it. */
typedef suspect_rc_t (*mw_alias_key_fn)(const void *ctx, const char *in,
                                        size_t n, char **out, size_t *out_len);
typedef struct mw_alias mw_alias_t;

/* Reads the table of the file path[0..len) (absolute) into *out, names
 * read by fn(ctx, ...).  SUSPECT_E_CONFIG (err: the file, the line, why)
 * when it cannot be read or has a bad line, SUSPECT_E_NOMEM. */
suspect_rc_t mw_alias_open(const char *path, size_t len, mw_alias_key_fn fn,
                           const void *ctx, mw_alias_t **out,
                           suspect_err_t *err);
void mw_alias_free(mw_alias_t *a); /* NULL is a no-op */

/* The canonical name of in[0..n) in a new heap block *out (the caller
 * frees it), *out_len its length; *out NULL when the table lacks it.
 * Reads the file again first when a second has passed and it changed.
 * SUSPECT_OK or SUSPECT_E_NOMEM. */
suspect_rc_t mw_alias_lookup(mw_alias_t *a, const char *in, size_t n,
                             char **out, size_t *out_len);

/* The value of in[0..len) after the first nsteps steps of n, as
 * mw_norm_apply() (normalize_apply.c). */
suspect_rc_t mw_norm_apply_steps(const mw_norm_t *n, size_t nsteps,
                                 const char *in, size_t len, char *buf,
                                 size_t size, const char **out, size_t *out_len,
                                 char **heap);

static inline bool set_has(const uint8_t set[32], unsigned char c)
{
    return (set[c >> 3] & (1u << (c & 7))) != 0;
}

#endif
