/*
 * normalize.h - an identity value as the application reads it.
 *
 * Applications rarely compare a user name byte for byte: they trim it,
 * lowercase it, remove accents, strip control characters or punctuation
 * before they look the user up.  Each such spelling of one account
 * ("Alice", " alice", "álice", "al\x01ice") would be a fresh counter if
 * Suspect counted the bytes, so an identity may declare, in suspect.xml,
 * the steps its application applies (normalize="strip-controls trim
 * casefold unaccent"), and the key is made of the value after them.
 *
 * A normaliser is compiled once from that text (a list of steps separated
 * by blanks, or a preset name) and applied per request.  It is pure: no
 * I/O, no global state; libunistring does the Unicode work (case folding,
 * NFD, general categories), libxml2's HTML table the entity names.
 * docs/suspect-xml.md lists the steps.
 *
 * Where Suspect cannot be sure to read a value as the application does,
 * a step refuses it rather than count it apart: only:CLASS refuses a
 * value with a character outside the class, html-entities one with an
 * entity name it does not know (the request is then answered 400).
 *
 * Unicode steps (casefold, unaccent, alnum) read the value as UTF-8 and
 * drop the bytes that are not (PHP's mb_* functions turn them into '?',
 * which the same applications then strip or trim): a normaliser only
 * ever makes more spellings one value, never tells apart two that the
 * application would merge.
 */
#ifndef MW_NORMALIZE_H
#define MW_NORMALIZE_H

#include <stdbool.h>
#include <stddef.h>

#include "suspect_error.h"

/* Steps in one normaliser. */
#define MW_NORM_MAX_STEPS 32
/* Longest normalize text accepted. */
#define MW_NORM_MAX_TEXT 1024

typedef struct mw_norm mw_norm_t;

/*
 * Compiles the normalize text spec[0..len) into *out (owned by the
 * caller: mw_norm_free()).  Fails with SUSPECT_E_CONFIG and a message
 * naming the bad step ("unknown step 'lowwer'"), SUSPECT_E_NOMEM.
 */
suspect_rc_t mw_norm_compile(const char *spec, size_t len, mw_norm_t **out,
                             suspect_err_t *err);

void mw_norm_free(mw_norm_t *n); /* NULL is a no-op */

/* The steps n runs, presets expanded, as text in buf (NUL-terminated,
 * cut to size): "trim casefold". */
void mw_norm_describe(const mw_norm_t *n, char *buf, size_t size);

/*
 * Applies n to in[0..len).  The result is written to buf (size bytes,
 * not NUL-terminated) when it fits, else to a new heap block that *heap
 * receives (the caller frees it; *heap is NULL otherwise); *out points to
 * the result either way, *out_len is its length.  SUSPECT_OK,
 * SUSPECT_E_INVAL when a step refuses the value (a character outside an
 * only: class, a named reference html-entities does not know: the
 * request is to be refused, not counted), SUSPECT_E_NOMEM.
 */
suspect_rc_t mw_norm_apply(const mw_norm_t *n, const char *in, size_t len,
                           char *buf, size_t size, const char **out,
                           size_t *out_len, char **heap);

/*
 * The html-entities step: the character references of in[0..n) decoded
 * into out (room for n bytes: a reference is never shorter than what it
 * stands for), *out_len its length.  SUSPECT_E_INVAL for a named
 * reference the table does not know (the value is refused).
 *
 * Defined in normalize_html.c, a loading part: it needs libxml2's table,
 * which suspect-cgi does not link.  The normaliser refers to it weakly
 * (a normaliser with the step does not compile where it is missing); the
 * loaders of suspect.xml (setup_load.c, live.c) refer to it, which links
 * it into every program that reads suspect.xml.
 */
suspect_rc_t mw_norm_html_decode(const char *in, size_t n, char *out,
                                 size_t *out_len);

/*
 * The collate step (normalize_collate.c, ICU; linked like html-entities).
 * mw_norm_collate_open(): the collator of the collation name[0..len)
 * into *out (mw_norm_collate_close() frees it); SUSPECT_E_NOTFOUND for a
 * name it does not know, SUSPECT_E_NOMEM.  mw_norm_collate_key(): the
 * hex sort key of in[0..n) in a new heap block *out (the caller frees
 * it), *out_len its length; SUSPECT_E_INVAL for a value that is not
 * UTF-8, SUSPECT_E_NOMEM.
 */
suspect_rc_t mw_norm_collate_open(const char *name, size_t len, void **out);
void mw_norm_collate_close(void *coll);
suspect_rc_t mw_norm_collate_key(const void *coll, const char *in, size_t n,
                                 char **out, size_t *out_len);

/*
 * The default reading of a value when its identity declares none: the
 * white space PHP's trim(), Perl's \s and Python's str.strip() remove,
 * dropped at both ends: NUL, " \t\n\v\f\r", 0x1C..0x1F and the Unicode
 * spaces in UTF-8 (U+00A0, U+3000, ...).  Points into *val; never copies.
 */
void mw_norm_trim_default(const char **val, size_t *len);

#endif
