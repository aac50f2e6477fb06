/*
 * wrap_compiled.h - suspect-cgi's compiled configuration file: its path, and
 * saving it after a compile (wrap_compiled.c).
 */
#ifndef MW_WRAP_COMPILED_H
#define MW_WRAP_COMPILED_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "compiled/compiled.h"

/*
 * The absolute path of suspect.xml conf into abs, and the compiled
 * configuration's file for it in snapdir into path.  0, or -1 when a path
 * does not fit or the current directory is unknown.
 */
int cgi_snap_path(const char *snapdir, const char *conf, char *abs,
                  size_t abs_size, char *path, size_t path_size);

/*
 * Saves s (loaded by compiled_load()) in snapdir unless its sources are
 * too recent (compiled_racy()).  1 saved, 0 not yet (too recent), -1 it
 * could not be (logged, once per configuration: see wrap_compiled.c).
 */
int cgi_snap_save(const char *snapdir, const compiled_t *s);

/*
 * The name of the shared-memory marker that says the failure to save
 * path for the sources of s was logged ("/suspect-cgi.UID.SUM", for
 * shm_open() and shm_unlink()).  0, or -1 when it does not fit.
 */
int cgi_snap_marker(const char *path, const compiled_t *s, char *out,
                    size_t size);

/*
 * The last compiled configuration saved for suspect.xml conf in snapdir,
 * read and checked as compiled_read() does but not for freshness (its
 * sources may have changed since: a compile that fails keeps deciding
 * with it), into *s (the caller clears it), its file's name into path.
 * false (nothing held) when there is none, it is unsound, or it belongs
 * to another suspect.xml.
 */
bool cgi_snap_last(const char *snapdir, const char *conf, compiled_t *s,
                   char *path, size_t path_size);

/*
 * Whether this process is the first since boot to log text about the
 * compiled configuration at path (it made the shared-memory marker of
 * both), or cannot tell: a message said once, not once per request.
 */
bool cgi_snap_first_to_say(const char *path, const char *text);

#endif
