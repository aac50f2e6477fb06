/*
 * wrap_compiled.c - suspect-cgi's use of compiled configurations (compiled.h):
 * where its file is, and saving it after a compile, with one warning when
 * it cannot be saved.
 *
 * The file: SNAPDIR/cgi-UID-HASH.snap, SNAPDIR from -s, else
 * $SUSPECT_SNAPSHOT_DIR, else /var/lib/suspect (the directory of the
 * default LMDB store, which the web server's user can already write).
 *
 * Saving: never from sources that changed within the file system's clock
 * tick (compiled_racy()): the next request compiles again.  A failure to
 * save (a missing or read-only directory) costs speed, not correctness:
 * every request then compiles.  It is logged once per configuration and
 * boot, not once per request: the first process to create the marker
 * /dev/shm/suspect-cgi.UID.SUM (SUM of the snapshot's path and the
 * sources' identities, so an edit warns again) with O_EXCL says it, the
 * others find the marker and stay quiet.  Without /dev/shm every failure
 * is logged.
 *
 * A compile that fails (a bad edit of suspect.xml, the limits file or a
 * list file) keeps deciding with the last file saved (cgi_snap_last()),
 * as suspect-fcgi keeps its running configuration; its error is logged
 * once per message and boot, with a marker of the message
 * (cgi_snap_first_to_say()).
 */
#include "wrap_compiled.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log/log.h"
#include "siphash.h"

/* The absolute suspect.xml path, then its file in snapdir. */
int cgi_snap_path(const char *snapdir, const char *conf, char *abs,
                  size_t abs_size, char *path, size_t path_size)
{
    if (compiled_abs_path(conf, abs, abs_size) != 0) {
        return -1;
    }
    return compiled_file_name(snapdir, abs, path, path_size);
}

/* "/suspect-cgi.UID.SUM" of the path and the identities. */
int cgi_snap_marker(const char *path, const compiled_t *s, char *out,
                    size_t size)
{
    static const suspect_siphash_key_t key = {0x6d61726b6572, 0x636769};
    uint64_t sum[2], ids[2];
    int n;

    suspect_siphash128(&key, s->id, sizeof(s->id), ids);
    suspect_siphash128(&key, path, strlen(path), sum);
    n = snprintf(out, size, "/suspect-cgi.%lu.%016llx%016llx",
                 (unsigned long)geteuid(),
                 (unsigned long long)(sum[0] ^ ids[0]),
                 (unsigned long long)(sum[1] ^ ids[1]));
    return n > 0 && (size_t)n < size ? 0 : -1;
}

/* Whether this process created the marker name (it is the first to say
 * what it marks), or cannot tell. */
static bool first_marker(const char *name)
{
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

    if (fd >= 0) {
        close(fd);
        return true;
    }
    return errno != EEXIST;
}

/* Whether this process is the first to meet the failure to save path
 * for these sources (it created the marker), or cannot tell. */
static bool first_to_fail(const char *path, const compiled_t *s)
{
    char name[96];

    return cgi_snap_marker(path, s, name, sizeof(name)) != 0 ||
           first_marker(name);
}

/* The marker of text said about the compiled configuration at path. */
bool cgi_snap_first_to_say(const char *path, const char *text)
{
    static const suspect_siphash_key_t key = {0x6b656570, 0x6f6c64};
    uint64_t sum[2], t[2];
    char name[96];

    suspect_siphash128(&key, path, strlen(path), sum);
    suspect_siphash128(&key, text, strlen(text), t);
    snprintf(name, sizeof(name), "/suspect-cgi.%lu.%016llx%016llx",
             (unsigned long)geteuid(), (unsigned long long)(sum[0] ^ t[0]),
             (unsigned long long)(sum[1] ^ t[1]));
    return first_marker(name);
}

/* The last file saved for conf, read but not checked for freshness. */
bool cgi_snap_last(const char *snapdir, const char *conf, compiled_t *s,
                   char *path, size_t path_size)
{
    char abs[PATH_MAX];

    memset(s, 0, sizeof(*s));
    if (cgi_snap_path(snapdir, conf, abs, sizeof(abs), path, path_size) != 0 ||
        compiled_read(path, s, NULL) != SUSPECT_OK) {
        return false;
    }
    if (strcmp(s->conf_path, abs) != 0) {
        compiled_clear(s);
        return false;
    }
    return true;
}

/* Saves unless racy; a failure is logged once (see the top). */
int cgi_snap_save(const char *snapdir, const compiled_t *s)
{
    char path[PATH_MAX + 64], msg[600];
    suspect_err_t err;

    if (compiled_racy(s, wall_ns())) {
        return 0;
    }
    suspect_err_clear(&err);
    if (compiled_file_name(snapdir, s->conf_path, path, sizeof(path)) != 0) {
        suspect_err_set(&err, SUSPECT_E_INVAL, snapdir, 0,
                        "directory name too long");
        snprintf(path, sizeof(path), "%s", snapdir);
    } else if (compiled_write(path, s, &err) == SUSPECT_OK) {
        return 1;
    }
    if (first_to_fail(path, s)) {
        suspect_err_format(&err, msg, sizeof(msg));
        mw_log(MW_LOG_WARNING,
               "compiled configuration not saved: %s; every request parses "
               "%s until the web server's user can write %s (-s, "
               "SUSPECT_SNAPSHOT_DIR)",
               msg, s->conf_path, snapdir);
    }
    return -1;
}
