/*
 * readfile.h - reading a configuration file whole, capped, without
 * trusting what is at the path: every loader's files (the limits file,
 * suspect.xml, its lists and template), and mapping suspect-cgi's
 * compiled configuration.  No XML here: suspect-cgi, which links no XML
 * parser, takes it too.
 *
 * The file is opened close-on-exec and without blocking (a FIFO planted
 * at the path is refused, not waited on), must be a regular file, and its
 * size is checked against the cap before a byte is read; reading goes on
 * to the end, so a file that grew past the cap since fstat() is still
 * caught (reading max + 1 bytes shows it).  Options refuse a symbolic
 * link at the path, and a file that another user could have written.
 */
#ifndef SUSPECT_READFILE_H
#define SUSPECT_READFILE_H

#include <stddef.h>
#include <sys/stat.h>

#include "suspect_error.h"

/* Refuse a symbolic link at path (O_NOFOLLOW). */
#define CONFIG_READ_NOFOLLOW 1u
/* Refuse, as SUSPECT_E_CONFIG ("not trusted: ..."), anything but a regular
 * file owned by the effective user or root and writable by no one else. */
#define CONFIG_READ_TRUSTED 2u

/*
 * Reads the file at path, at most max bytes, into *buf (the caller's:
 * free()), and its fstat() into *st when st is not NULL.  flags: the
 * CONFIG_READ_* above, or 0.  Nothing is read from a file that is
 * refused.  SUSPECT_E_NOTFOUND (no such file), SUSPECT_E_IO (cannot open,
 * stat or read, not a regular file), SUSPECT_E_CONFIG (too large, or not
 * trusted: CONFIG_READ_TRUSTED), SUSPECT_E_NOMEM; err names path.
 */
suspect_rc_t config_read_file(const char *path, size_t max, unsigned flags,
                              struct stat *st, char **buf, size_t *len,
                              suspect_err_t *err);

/*
 * The same file, the same checks and errors, mapped read-only instead of
 * read: *map (NULL for an empty file) and its *len, until
 * config_unmap_file().  For a large file read once: no copy and no pages
 * of the process's own.  The mapping shows the file as it is: only for a
 * file nobody else may write and that is replaced, never rewritten in
 * place (a file cut shorter under it would end the process with SIGBUS
 * when read past its new end).
 */
suspect_rc_t config_map_file(const char *path, size_t max, unsigned flags,
                             const void **map, size_t *len, suspect_err_t *err);
void config_unmap_file(const void *map, size_t len);

#endif
