/*
 * conf_internal.h - what the suspect.xml loader's files share.
 *
 * The loader is split by job:
 *   conf.c        snapshots: the arena, warnings, references (no XML, so
 *                 suspect-cgi's snapshot reader links it alone);
 *   conf_load.c   reading the file, defaults, the directory, and the
 *                 load itself;
 *   conf_xml.c    libxml2: a safe parse and a walk driven by element tables
 *                 (the only file of the loader that includes libxml2);
 *   conf_values.c value setters: numbers, durations, sizes, names, paths,
 *                 endpoints (one setter per kind of value, not per field),
 *                 and the response template read from its file;
 *   conf_elems.c  the element tables of <Suspect> and its children, and
 *                 the checks that span attributes or elements;
 *   conf_route.c  <Route> and <Identity>: methods, paths, sources.
 *
 * Like nginx directives, each element is a row (name, attribute table,
 * begin and end hooks, child table) and each attribute a row (name, setter,
 * offset of the field it fills, an argument such as a range).  The walker
 * in conf_xml.c knows no element by name: it matches, warns about unknown
 * names, refuses duplicate singletons and missing required attributes, and
 * calls the setters and hooks.
 *
 * Ownership: a snapshot (conf_snap_t) owns one arena; every string and
 * array the public suspect_conf_t points to lives in it (or is a string
 * literal), so one free of the chunk list frees everything.
 */
#ifndef SUSPECT_CONF_INTERNAL_H
#define SUSPECT_CONF_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "suspect_conf.h"

/* Warnings kept on a snapshot; more are counted in one closing line. */
#define CONF_MAX_WARNINGS 100

typedef struct conf_chunk conf_chunk_t;

/* A snapshot: the public view first, so a suspect_conf_t * is one. */
typedef struct conf_snap {
    suspect_conf_t conf;
    int refs;             /* atomic; the last unref frees */
    conf_chunk_t *chunks; /* the arena, newest chunk first */
    /* A file mapping the snapshot holds, NULL for none: a compiled
     * configuration's packed lists point into it (compiled_dec.c). */
    const void *map;
    size_t map_len;
    size_t nwarnings;
    size_t dropped; /* warnings beyond CONF_MAX_WARNINGS */
    const char *warnings[CONF_MAX_WARNINGS + 1]; /* + the closing line */
} conf_snap_t;

/* State of one load. */
typedef struct conf_build {
    conf_snap_t *snap;
    suspect_conf_t *conf;         /* &snap->conf, writable while building */
    suspect_conf_route_t *routes; /* conf->routes, writable */
    size_t routes_cap;
    size_t identities_cap;          /* of the route being read */
    suspect_conf_action_t *actions; /* conf->actions, writable */
    size_t actions_cap;
    int root_line;
    suspect_err_t *err; /* may be NULL */
} conf_build_t;

/* ---- conf.c -------------------------------------------------------------
 */

/* A new, empty snapshot (one reference, no arena yet); NULL when out of
 * memory.  Fill it through a conf_build_t whose snap it is. */
conf_snap_t *conf_snap_new(void);

/* Frees s and its arena whatever its reference count (a failed build);
 * NULL is a no-op. */
void conf_snap_free(conf_snap_t *s);

/* size zeroed bytes from the snapshot's arena, aligned for any type;
 * NULL when out of memory (the caller reports it). */
void *conf_alloc(conf_build_t *b, size_t size);

/* A NUL-terminated copy of the n bytes at p in the arena, or NULL. */
char *conf_strndup(conf_build_t *b, const char *p, size_t n);

/* Fails the load: "file:line: text", SUSPECT_E_CONFIG. */
suspect_rc_t conf_fail(conf_build_t *b, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Fails the load with SUSPECT_E_NOMEM. */
suspect_rc_t conf_nomem(conf_build_t *b, int line);

/* Keeps "file:line: warning: text"; SUSPECT_E_NOMEM (err set) when it
 * cannot. */
suspect_rc_t conf_warn(conf_build_t *b, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The n bytes at p as an absolute path in the arena: kept when absolute,
 * else joined to the snapshot's directory.  NULL when out of memory. */
char *conf_resolve(conf_build_t *b, const char *p, size_t n);

/* ---- conf_load.c --------------------------------------------------------
 */

/* suspect_conf_load(), also giving the fstat() of the file that was read
 * in *st when st is not NULL (untouched when it could not be opened). */
suspect_rc_t conf_load_stat(const char *path, const suspect_conf_t **out,
                            struct stat *st, suspect_err_t *err);

/* ---- conf_xml.c ---------------------------------------------------------
 */

/* Parses the len bytes at buf and walks them into b. */
suspect_rc_t conf_xml_parse(const char *buf, size_t len, conf_build_t *b);

/* ---- the tables -----------------------------------------------------------
 */

/* Where a setter is called from, for its messages. */
typedef struct conf_site {
    const char *elem; /* "Server" */
    const char *attr; /* "workers" */
    int line;
} conf_site_t;

typedef struct conf_attr conf_attr_t;

/* Parses the n bytes at v (trimmed, not NUL-terminated) into the field at
 * a->offset of obj. */
typedef suspect_rc_t (*conf_set_fn)(conf_build_t *b, const conf_site_t *at,
                                    void *obj, const conf_attr_t *a,
                                    const char *v, size_t n);

#define CONF_REQUIRED 1u /* the attribute must be given */

struct conf_attr {
    const char *name;
    conf_set_fn set;
    size_t offset;   /* of the field in the element's object */
    const void *arg; /* the setter's: a range, a list of names */
    unsigned flags;  /* CONF_REQUIRED */
};

/* Called before the attributes: *obj is what the setters and children
 * fill (it starts as the parent's object); nchildren counts the element
 * children, an upper bound for arrays. */
typedef suspect_rc_t (*conf_begin_fn)(conf_build_t *b, int line,
                                      size_t nchildren, void **obj);

/* Called after the attributes and children; seen has bit i set when
 * attribute i of the table was given. */
typedef suspect_rc_t (*conf_end_fn)(conf_build_t *b, void *obj, uint32_t seen,
                                    int line);

#define CONF_SINGLE 1u /* at most once in its parent */

typedef struct conf_elem conf_elem_t;

struct conf_elem {
    const char *name;
    const conf_attr_t *attrs;           /* NULL name ends; at most 32 */
    const conf_elem_t *const *children; /* NULL-terminated; at most 16 */
    conf_begin_fn begin;                /* NULL: nothing to prepare */
    conf_end_fn end;                    /* NULL: nothing to check */
    size_t line_offset;                 /* int field for the line, 0 = none */
    unsigned flags;                     /* CONF_SINGLE */
};

/* The root, <Suspect> (conf_elems.c). */
extern const conf_elem_t conf_root;

/* <Route> and its children (conf_route.c). */
extern const conf_elem_t conf_route_elem;

/* Checks of the routes against the whole file (mode), at line of the
 * root (conf_route.c). */
suspect_rc_t conf_routes_check(conf_build_t *b);

/* <Failure> and <Success>, children of <Route> (conf_outcome.c). */
extern const conf_elem_t conf_failure_elem;
extern const conf_elem_t conf_success_elem;

/* What routes that count by the response need from the whole file:
 * forward mode (conf_outcome.c). */
suspect_rc_t conf_outcomes_check(conf_build_t *b);

/* <Log> (conf_log.c). */
extern const conf_elem_t conf_log_elem;

/* <DeviceCookie> (conf_device.c), and what it asks of the routes with an
 * account identity, against the whole file. */
extern const conf_elem_t conf_device_elem;
suspect_rc_t conf_devices_check(conf_build_t *b);

/* <Challenge> (conf_challenge.c), and what the shared identities ask of
 * it and of the mode, against the whole file. */
extern const conf_elem_t conf_challenge_elem;
suspect_rc_t conf_challenges_check(conf_build_t *b);

/* ---- setters (conf_values.c) ---------------------------------------------
 */

/* Kinds of number, and where they go. */
typedef enum conf_unit {
    CONF_PLAIN = 0, /* decimal digits */
    CONF_SECONDS,   /* seconds with up to 3 decimals, stored as ms */
    CONF_BYTES,     /* digits and an optional K, M or G (binary) */
    CONF_OCTAL      /* octal digits (permissions) */
} conf_unit_t;

typedef enum conf_width {
    CONF_UNSIGNED = 0, /* unsigned */
    CONF_INT,          /* int */
    CONF_SIZE          /* size_t */
} conf_width_t;

/* The argument of conf_set_num: the accepted range, in stored units. */
typedef struct conf_num {
    uint64_t min, max;
    conf_unit_t unit;
    conf_width_t width;
} conf_num_t;

/* The argument of conf_set_enum: names and values, ending with NULL. */
typedef struct conf_enum_item {
    const char *name;
    int value;
} conf_enum_item_t;

typedef struct conf_enum {
    const conf_enum_item_t *items;
    int is_bool; /* the field is a bool, not an int-sized enum */
} conf_enum_t;

/* Loads the Response template at conf->template_path (line = its
 * element's) into the arena, within SUSPECT_CONF_MAX_TEMPLATE. */
suspect_rc_t conf_read_template(conf_build_t *b, int line);

/* The names of <Server mode> (conf_values.c). */
extern const conf_enum_t conf_mode_enum;

/* The keyword of a mode as written in the file ("auth-request"). */
const char *conf_mode_name(suspect_conf_mode_t mode);

/* Fails with "Elem: attr 'value' what" ("Elem: attr what (got 'value')"
 * when what is a rule, "must ..."). */
suspect_rc_t conf_bad_value(conf_build_t *b, const conf_site_t *at,
                            const char *v, size_t n, const char *what);

/* Fails with "Elem: attr is empty". */
suspect_rc_t conf_empty_value(conf_build_t *b, const conf_site_t *at);

suspect_rc_t conf_set_num(conf_build_t *b, const conf_site_t *at, void *obj,
                          const conf_attr_t *a, const char *v, size_t n);
suspect_rc_t conf_set_enum(conf_build_t *b, const conf_site_t *at, void *obj,
                           const conf_attr_t *a, const char *v, size_t n);
suspect_rc_t conf_set_bool(conf_build_t *b, const conf_site_t *at, void *obj,
                           const conf_attr_t *a, const char *v, size_t n);
/* An action or identity type name (suspect_name_valid()). */
suspect_rc_t conf_set_name(conf_build_t *b, const conf_site_t *at, void *obj,
                           const conf_attr_t *a, const char *v, size_t n);
/* A file, relative to the snapshot's directory. */
suspect_rc_t conf_set_file(conf_build_t *b, const conf_site_t *at, void *obj,
                           const conf_attr_t *a, const char *v, size_t n);
/* An absolute path, normalised ("//" and "." segments go, ".." refused);
 * arg non-NULL: a directory (no trailing '/'). */
suspect_rc_t conf_set_abspath(conf_build_t *b, const conf_site_t *at, void *obj,
                              const conf_attr_t *a, const char *v, size_t n);
/* unix:/path, tcp:host:port; arg non-NULL also allows fd:N and systemd. */
suspect_rc_t conf_set_endpoint(conf_build_t *b, const conf_site_t *at,
                               void *obj, const conf_attr_t *a, const char *v,
                               size_t n);
/* A group of this host, by name or number, stored as an int gid. */
suspect_rc_t conf_set_group(conf_build_t *b, const conf_site_t *at, void *obj,
                            const conf_attr_t *a, const char *v, size_t n);
/* conf_sources.c: from= of an <Identity>, normalize=, when= of a <Route>
 * (attribute setters), and the name checks conf_route.c shares. */
suspect_rc_t conf_set_sources(conf_build_t *b, const conf_site_t *at, void *obj,
                              const conf_attr_t *a, const char *v, size_t n);
suspect_rc_t conf_set_normalize(conf_build_t *b, const conf_site_t *at,
                                void *obj, const conf_attr_t *a, const char *v,
                                size_t n);
suspect_rc_t conf_set_when(conf_build_t *b, const conf_site_t *at, void *obj,
                           const conf_attr_t *a, const char *v, size_t n);
/* passMethods= of a <Route>. */
suspect_rc_t conf_set_pass_methods(conf_build_t *b, const conf_site_t *at,
                                   void *obj, const conf_attr_t *a,
                                   const char *v, size_t n);
/* An XML-RPC method name (a '*' last: a prefix), 1 to 128 bytes. */
bool conf_is_method(const char *p, size_t n);
/* An HTTP token (RFC 9110 tchars) of 1 to 128 bytes. */
bool conf_is_token(const char *p, size_t n);
/* A parameter name: 1 to 128 bytes, no spaces, '&', '=', '#', controls. */
bool conf_is_param_name(const char *p, size_t n);
/* The next blank-separated token of v[0..n) from *pos: *tok, *len. */
bool conf_next_token(const char *v, size_t n, size_t *pos, const char **tok,
                     size_t *len);

/* Printable ASCII; arg is a conf_text_t. */
suspect_rc_t conf_set_text(conf_build_t *b, const conf_site_t *at, void *obj,
                           const conf_attr_t *a, const char *v, size_t n);

/* The argument of conf_set_text. */
typedef struct conf_text {
    size_t max;           /* longest value, bytes */
    const char *allowed;  /* the bytes allowed, NULL = printable ASCII */
    int spaces;           /* ' ' allowed too */
    int empty_ok;         /* "" is fine and stored as NULL */
    const char *need;     /* prefixes, '|'-separated, one required; NULL */
    const char *contains; /* a substring required, or NULL */
    const char *what;     /* the rule, for messages: "must be ..." */
} conf_text_t;

/* The texts of a key (<Log identityKey>, <DeviceCookie key>, <Challenge
 * key>: printable, no spaces, 256 bytes at most) and of the name of a
 * cookie Suspect sets (letters, digits, '_', '-'; 64 at most). */
extern const conf_text_t conf_secret_text;
extern const conf_text_t conf_cookie_name_text;

#define CONF_NORM_DIR    1u /* drop a trailing '/' (unless the path is "/") */
#define CONF_NORM_DOTDOT 2u /* keep ".." segments instead of refusing them */

/*
 * Normalises the absolute path (p, n) into a new arena string: "//" and
 * "/./" collapse; a trailing '/' is kept unless CONF_NORM_DIR.  Returns
 * NULL with *why set (not absolute, a ".." segment, a control byte) or
 * with *why NULL when out of memory.
 */
char *conf_norm_path(conf_build_t *b, const char *p, size_t n, unsigned flags,
                     const char **why);

/* <Action> (conf_policy.c), and the values of shadow= and failMode= on
 * it and on <Route>. */
extern const conf_elem_t conf_action_elem;
extern const conf_enum_t conf_shadow_enum;
extern const conf_enum_t conf_rule_fail_enum;

/* Applies each <Action>'s settings to its routes that give none of their
 * own; refuses two <Action> of one name (conf_policy.c). */
suspect_rc_t conf_actions_apply(conf_build_t *b);

/* <Allow> and <Deny>, children of <Suspect> and of <Route>
 * (conf_lists.c). */
extern const conf_elem_t conf_allow_elem;
extern const conf_elem_t conf_deny_elem;

#endif
