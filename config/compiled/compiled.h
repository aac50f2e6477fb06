/*
 * compiled.h - a compiled configuration: suspect.xml and its limits file,
 * parsed once, as one binary file that suspect-cgi reads instead of the
 * XML on every request.
 *
 * A compiled configuration (compiled_t) is the two parsed snapshots
 * (suspect_conf_t with its response template, suspect_limits_t) plus the
 * identity of each file they came from: suspect.xml, the limits file and
 * the template, each as stat() saw it when it was read (device, inode,
 * size, mtime and ctime in nanoseconds).  It is valid only while every
 * source still has exactly that identity (compiled_fresh()): an edit, a
 * replacement by rename, a touch, even one within the same second, changes
 * at least one of them.  The list files of <Allow file> and <Deny file>
 * are sources too: their identities travel in the lists themselves
 * (suspect_conf_list_t.file_id).
 *
 * The file (docs/suspect-cgi.md, "The compiled configuration"):
 *
 *   magic "SUSPSNAP", u32 version, u32 0, u64 payload length,
 *   u64[2] XXH3-128 of the payload (compiled_sum(): a checksum against
 *   corruption, not a signature), then the payload: the producer
 *   (PACKAGE_VERSION), the absolute path of suspect.xml, the three
 *   identities, every field of suspect_conf_t, routes and identities, and
 *   the rules of the limits file with their lines.
 *
 * Integers are little-endian; a string is a u32 length (0xffffffff for
 * NULL), its bytes and a NUL.  Decoding trusts nothing: every length is
 * checked against what is left, every count against its cap, every
 * enumeration against its range, strings may hold no NUL but their
 * terminator, the payload must be used up exactly, and the rules go
 * through suspect_limits_from_rules(), which checks them as the loader
 * does.  A file that fails any check is refused whole (SUSPECT_E_PARSE),
 * never partly used.  Warnings of the loaders are not kept.
 *
 * This module needs no XML: conf.c and limits.c build the snapshots.
 * Like the rest of config/ it never logs; its callers do.
 */
#ifndef SUSPECT_COMPILED_H
#define SUSPECT_COMPILED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "conf/suspect_conf.h"
#include "file_id.h"
#include "suspect_error.h"
#include "limits/suspect_limits.h"

#define COMPILED_VERSION   18u
#define COMPILED_MAX_BYTES (16u << 20) /* a larger file is refused */

/* The sources, in the order of compiled_t.id[]. */
enum {
    COMPILED_SRC_CONF = 0,
    COMPILED_SRC_LIMITS,
    COMPILED_SRC_TEMPLATE,
    COMPILED_NSRC
};

/* A list packed for the file (compiled_pack.c): bytes the holder owns. */
typedef struct compiled_blob {
    unsigned char *p; /* malloc, NULL = none */
    size_t len;
} compiled_blob_t;

/* The index of a list in compiled_t.packed: the global <Allow> and <Deny>,
 * then each route's. */
#define COMPILED_PACK_INDEX(route, deny)                                       \
    ((route) < 0 ? (size_t)(deny) : 2 + 2 * (size_t)(route) + (size_t)(deny))

typedef struct compiled {
    const suspect_conf_t *conf; /* one reference, or NULL */
    suspect_limits_t *limits;   /* one reference, or NULL */
    char *conf_path;            /* suspect.xml, absolute (malloc) */
    file_id_t id[COMPILED_NSRC];
    /* The lists as the guard compiled them, to be saved in place of their
     * texts (COMPILED_PACK_INDEX() order; npacked 0: none, the texts are
     * saved).  Set by suspect-cgi-compile before saving; owned. */
    compiled_blob_t *packed;
    size_t npacked;
} compiled_t;

/* Drops what s holds and zeroes it; s may be all zero. */
void compiled_clear(compiled_t *s);

/* ---- the format (compiled_enc.c, compiled_dec.c) ----------------------- */

/*
 * Encodes s (conf, limits and conf_path set) into *buf (malloc, the
 * caller frees) of *len bytes.  SUSPECT_E_NOMEM, or SUSPECT_E_INVAL when
 * s lacks a part.
 */
suspect_rc_t compiled_encode(const compiled_t *s, unsigned char **buf,
                             size_t *len, suspect_err_t *err);

/*
 * Decodes the len bytes at buf into *out (zeroed first; the caller clears
 * it).  name is the file, for messages.  SUSPECT_E_PARSE for anything but
 * a well-formed file of this version and producer, SUSPECT_E_NOMEM; *out
 * holds nothing then.
 */
suspect_rc_t compiled_decode(const void *buf, size_t len, const char *name,
                             compiled_t *out, suspect_err_t *err);

/*
 * compiled_decode() of a file mapping (config_map_file()), which it takes
 * in every case: the snapshot of *out holds it, its packed lists pointing
 * into it rather than into copies, and unmaps it when freed; or it is
 * unmapped before a refusal returns.  map NULL (an empty file) is
 * refused as compiled_decode() refuses it.
 */
suspect_rc_t compiled_decode_map(const void *map, size_t len, const char *name,
                                 compiled_t *out, suspect_err_t *err);

/* ---- packed lists (compiled_pack.c) ----------------------------------- */

/* Where the parts of a checked pack are. */
typedef struct compiled_pack_view {
    const unsigned char *ranges; /* nranges x 32 bytes: lo, hi big-endian */
    size_t nranges;
    const unsigned char *ids; /* walk with compiled_pack_next_id() */
    size_t nids;
} compiled_pack_view_t;

/*
 * Whether the len bytes at pack are a packed list (the layout and its
 * rules: compiled_pack.c), and where its parts are (*v).  Checked in
 * O(len): the decoder asks it of every list, so a pack in a decoded
 * configuration can be used as it is.
 */
bool compiled_pack_check(const void *pack, size_t len, compiled_pack_view_t *v);

/* Where the parts of a pack that compiled_pack_check() accepted are,
 * without checking it again: for a pack of a decoded configuration. */
void compiled_pack_view(const void *pack, compiled_pack_view_t *v);

/* The next value of a checked pack: *pos starts at v->ids and moves on;
 * the value's bytes (not NUL-terminated) and *len. */
const char *compiled_pack_next_id(const unsigned char **pos, size_t *len);

/* Writing a pack: its size for nranges ranges and nids values of
 * id_bytes bytes in all; then the range count (the 32-byte ranges follow
 * at the pointer returned), the value count, and each value in order.
 * Each returns where the next part goes. */
size_t compiled_pack_size(size_t nranges, size_t nids, size_t id_bytes);
unsigned char *compiled_pack_ranges(unsigned char *p, size_t nranges);
unsigned char *compiled_pack_ids(unsigned char *p, size_t nids);
unsigned char *compiled_pack_id(unsigned char *p, const char *s, size_t len);

/* ---- compiling (compiled_load.c: the XML loaders, so not in suspect-cgi) */

/*
 * Loads suspect.xml at conf and its limits file into *out (zeroed first;
 * the caller clears it), with the identity of each source as read: the
 * fstat() of the descriptor each file was read from, and a stat() of the
 * response template after suspect.xml loaded it (compiled_racy() covers an
 * edit in between).  Fails like suspect_conf_load() and
 * suspect_limits_load(); SUSPECT_E_IO when the template cannot be
 * stat()ed or the current directory is unknown.  *out holds nothing then.
 */
suspect_rc_t compiled_load(const char *conf, compiled_t *out,
                           suspect_err_t *err);

/* ---- files (compiled_file.c) ------------------------------------------ */

/*
 * The absolute form of the suspect.xml path conf (joined to the current
 * directory when relative; not otherwise normalised) into out.  0, or -1
 * when it does not fit or the current directory is unknown.
 */
int compiled_abs_path(const char *conf, char *out, size_t size);

/*
 * The compiled configuration's file for the absolute suspect.xml path
 * conf_abs, in dir: "DIR/cgi-UID-HASH.snap", UID the effective user,
 * HASH 16 hex digits of the SHA-256 of conf_abs.  0, or -1 when it does
 * not fit.
 */
int compiled_file_name(const char *dir, const char *conf_abs, char *out,
                       size_t size);

/*
 * Reads and decodes the file at path into *out.  The file must be a
 * regular file of at most COMPILED_MAX_BYTES owned by the effective user
 * (or root) and writable by no one else: anything else is SUSPECT_E_CONFIG
 * and is not read.  SUSPECT_E_NOTFOUND when it does not exist, SUSPECT_E_IO,
 * and compiled_decode()'s errors.
 */
suspect_rc_t compiled_read(const char *path, compiled_t *out,
                           suspect_err_t *err);

/*
 * Whether s was compiled from suspect.xml at conf_abs and every source
 * (list files included) still has its recorded identity (stat(), one per
 * source).
 */
bool compiled_fresh(const compiled_t *s, const char *conf_abs);

/*
 * Whether a source changed so recently (its mtime or ctime within the
 * granularity of file times of now_ns: 100 ms, 2 s for a file system that
 * keeps whole seconds) that an edit in the same tick would leave its
 * identity unchanged.  Such a compiled configuration must not be saved:
 * it could outlive the edit.
 */
bool compiled_racy(const compiled_t *s, int64_t now_ns);

/*
 * Writes s to path atomically: a new file "PATH.XXXXXX" (mode 0600, like
 * the LMDB store's), then rename() over path, so a reader sees the old
 * file or the new one, whole.  SUSPECT_E_IO (errno kept) or
 * SUSPECT_E_NOMEM; the temporary file is removed on failure.
 */
suspect_rc_t compiled_write(const char *path, const compiled_t *s,
                            suspect_err_t *err);

#endif
