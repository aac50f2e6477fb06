/*
 * near.h - "did you mean": the known name an unknown one was probably
 * meant to be.  One private module, compiled into each library that loads
 * a configuration (like xmlsafe.c).
 *
 * A name is near a known one when the two are at most a small number of
 * edits apart, ignoring case: one edit (a letter inserted, dropped,
 * changed, or two neighbours swapped) for names of up to five letters,
 * two for longer ones.  So "BlockDuraton", "blockduration",
 * "LimitCuont" and "Respose" are near "BlockDuration", "LimitCount" and
 * "Response"; "EscalationFactor" is near nothing.
 */
#ifndef SUSPECT_NEAR_H
#define SUSPECT_NEAR_H

#include <stddef.h>

/* Longest name compared; longer ones are near nothing. */
#define CONFIG_NEAR_MAX 64

/*
 * The known name nearest to name among names[0..n) (names[i] NULL ends
 * the list early), or NULL when none is near (see above).  A name equal
 * to a known one, case included, is not "near": the caller knew it.
 */
const char *config_near(const char *name, const char *const *names, size_t n);

/* The edit distance of a and b, case ignored (neighbour swaps count one);
 * CONFIG_NEAR_MAX + 1 when either is longer than CONFIG_NEAR_MAX. */
size_t config_near_distance(const char *a, const char *b);

#endif
