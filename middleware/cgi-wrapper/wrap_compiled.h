/*
 * wrap_compiled.h - suspect-cgi's compiled configuration file: its path, and
 * saving it after a compile (wrap_compiled.c).
 */
#ifndef MW_WRAP_COMPILED_H
#define MW_WRAP_COMPILED_H

#include <limits.h>
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

#endif
