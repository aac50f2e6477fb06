/*
 * guard_internal.h - what the files of the guard share (guard.c,
 * guard_decide.c, guard_respond.c, path.c, route.c, guard_call.c,
 * identity.c): the compiled
 * guard, the per-call state and the functions each file gives the others.
 *
 * Ownership: a guard owns its compiled routes, identities and the pool of
 * header variable names; it borrows every string of the conf, which it
 * keeps alive with a reference.  A guard_call_t lives on the stack of one
 * mw_guard_decide() call; values it hands out point into the request, its
 * arena or heap blocks it frees in guard_call_end().
 */
#ifndef MW_GUARD_INTERNAL_H
#define MW_GUARD_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "guard.h"
#include "compiled/compiled.h"
#include "request/lookup.h"
#include "request/normalize.h"

/* Bytes of identity values kept on the stack per call; longer values go
 * to the heap, one block each. */
#define GUARD_ARENA_STACK 8192
/* Heap blocks per call: every part of every identity, and spare. */
#define GUARD_ARENA_HEAP                                                       \
    (SUSPECT_MAX_IDENTITIES * SUSPECT_CONF_MAX_SOURCES * 3 + 4)
/* The normalised path is built here; a longer one goes to the heap. */
#define GUARD_PATH_STACK 4096
/* form_max when the conf leaves it 0. */
#define GUARD_FORM_MAX_DEFAULT (64u << 10)

/* One identity source or route condition, with its lookup name
 * resolved. */
typedef struct guard_source {
    suspect_src_kind_t kind;
    const char *name; /* cookie/query/form name, env or header variable;
                         auth-user: "any" or "basic" */
    size_t name_len;
    unsigned part; /* of a composite identity */
} guard_source_t;

/* Values one part of an identity may have: each source of the part
 * that is present, read whole and, holding a NUL, cut there too. */
#define GUARD_MAX_READINGS 8

typedef struct guard_identity {
    const suspect_conf_identity_t *conf;
    size_t nparts;
    size_t nsources;
    guard_source_t src[SUSPECT_CONF_MAX_SOURCES];
    mw_norm_t *norm; /* the application's reading; NULL: the default */
} guard_identity_t;

/* An <Allow> or <Deny> compiled (lists.c); opaque. */
typedef struct guard_list guard_list_t;

/* Entries one list holds at most (address blocks: MW_ADDRSET_MAX). */
#define GUARD_LIST_MAX_IDS   SUSPECT_CONF_MAX_LIST_ENTRIES
#define GUARD_LIST_VALUE_MAX SUSPECT_CONF_MAX_LIST_VALUE

typedef struct guard_route {
    const suspect_conf_route_t *conf;
    guard_list_t *allow, *deny; /* NULL = none */
    size_t path_len;
    size_t method_len[SUSPECT_CONF_MAX_METHODS];
    size_t param_name_len;
    size_t param_value_len;
    size_t nwhen;
    guard_source_t when[SUSPECT_CONF_MAX_WHEN];
    size_t nids;
    guard_identity_t *ids; /* points into mw_guard.ids */
} guard_route_t;

/* The prepared keys of device cookies (device.c); opaque. */
typedef struct guard_device guard_device_t;

struct mw_guard {
    unsigned refs; /* atomic */
    const suspect_conf_t *conf;
    bool conf_ref; /* the guard holds a reference on conf */
    mw_trust_t trust;
    suspect_keyopts_t keyopts;
    size_t form_max;
    size_t nroutes;
    guard_route_t *routes;
    size_t nids;
    guard_identity_t *ids;
    char *names;                /* header variable names, NUL-separated */
    guard_list_t *allow, *deny; /* for every request; NULL = none */
    guard_device_t *device;     /* NULL: no device cookies */
    char challenge_csp[320];    /* the challenge page's CSP header line */
};

/* Per-call memory for values: a stack part, then one heap block each. */
typedef struct guard_arena {
    size_t used;
    size_t nheap;
    char *heap[GUARD_ARENA_HEAP];
    char stack[GUARD_ARENA_STACK];
} guard_arena_t;

/* A request variable looked up at most once per call. */
typedef struct guard_var {
    const char *value; /* NULL: missing */
    size_t len;
    bool done;
    bool u_escape; /* value holds "%uXXXX" */
} guard_var_t;

/* The state of one decision. */
typedef struct guard_call {
    const mw_guard_t *g;
    mw_req_t *req;
    guard_var_t query;  /* QUERY_STRING */
    guard_var_t cookie; /* HTTP_COOKIE */
    int body_state;     /* 0 not looked at, 1 read, -1 none, -2 refused */
    const char *body;   /* urlencoded (a multipart body's fields too) */
    size_t body_len;
    int refuse_status;      /* a refused source: the status to answer ... */
    const char *refuse_why; /* ... and why (static text) */
    int ip_state;           /* 0 not looked at, 1 resolved, -1 none */
    mw_addr_t addr;         /* the client address, when ip_state is 1 */
    size_t ip_len;
    char ip[MW_ADDR_TEXT_MAX];
    guard_arena_t arena;
} guard_call_t;

/* ---- path.c ------------------------------------------------------------- */

/*
 * Normalises the path a[0..alen) followed by b[0..blen) into buf (see
 * path.c).  decode: the input is a raw request target (percent-decoded
 * here, cut at '?' or '#'); else it is already decoded (SCRIPT_NAME +
 * PATH_INFO).  Fails as mw_path_normalize().
 */
suspect_rc_t guard_path_build(const char *a, size_t alen, const char *b,
                              size_t blen, bool decode, char *buf, size_t size,
                              size_t *out_len);

/* REQUEST_URI, SCRIPT_NAME + PATH_INFO, DOCUMENT_URI, the file that runs
 * (target.c); each directory among them read as each index name. */
#define GUARD_BASE_PATHS 4
#define GUARD_MAX_PATHS  (GUARD_BASE_PATHS * (1 + SUSPECT_CONF_MAX_INDEX))

/* The normalised paths of a request, each once (see path.c); they point
 * into stack or heap. */
typedef struct guard_paths {
    size_t n;
    const char *path[GUARD_MAX_PATHS];
    size_t len[GUARD_MAX_PATHS];
    const char *unknown; /* what runs cannot be told: refuse (500), why */
    char *heap;
    char stack[GUARD_PATH_STACK];
} guard_paths_t;

/*
 * Fills out with the normalised paths of req under g: the readings of
 * path.c and target.c.  SUSPECT_OK (out->n >= 1, or out->unknown set),
 * SUSPECT_E_NOTFOUND when req has none of the variables, SUSPECT_E_INVAL
 * when one of them is unusable (see mw_path_normalize()),
 * SUSPECT_E_NOMEM.  guard_paths_free() frees it, whatever the result.
 */
suspect_rc_t guard_paths_build(const mw_guard_t *g, const mw_req_t *req,
                               guard_paths_t *out);

/* Frees what guard_paths_build() allocated. */
void guard_paths_free(guard_paths_t *p);

/* ---- target.c ----------------------------------------------------------- */

/* What target.c tells path.c about a request. */
typedef struct guard_target {
    bool script_given;   /* not an auth_request subrequest whose
                            location runs no script (empty SCRIPT_NAME) */
    const char *unknown; /* see guard_paths_t */
} guard_target_t;

/*
 * The file that runs, as a path under the document root (or <Cgi root>),
 * into buf (size bytes, NUL-terminated; *len 0: no such reading), and *t.
 * SUSPECT_OK, or SUSPECT_E_FULL when it does not fit.
 */
suspect_rc_t guard_target_file(const mw_guard_t *g, const mw_req_t *req,
                               char *buf, size_t size, size_t *len,
                               guard_target_t *t);

/* Whether a directory among the paths is read as each <Server index>
 * name. */
bool guard_target_expand(const mw_guard_t *g, const mw_req_t *req,
                         const guard_target_t *t);

/* Why what runs for paths (all directories, no index named, an
 * authorizer's request, a route under one) cannot be told, or NULL. */
const char *guard_target_check(const mw_guard_t *g, const mw_req_t *req,
                               const guard_paths_t *paths);

/* ---- guard_call.c ------------------------------------------------------- */

/* Starts a call: empty arena, nothing looked up. */
void guard_call_begin(guard_call_t *c, const mw_guard_t *g, mw_req_t *req);

/* Frees what the call put on the heap. */
void guard_call_end(guard_call_t *c);

/*
 * QUERY_STRING in *qs (NULL when missing), looked up once per call:
 * SUSPECT_OK, or SUSPECT_E_PARSE when it holds a "%uXXXX" escape
 * (mw_has_u_escape(): CGI.pm decodes it, other parsers do not), which the
 * caller answers with c->refuse_status (400) and c->refuse_why.
 */
suspect_rc_t guard_call_query(guard_call_t *c, const char **qs, size_t *len);

/* HTTP_COOKIE in *hdr (NULL when missing), looked up once per call: as
 * guard_call_query(). */
suspect_rc_t guard_call_cookie(guard_call_t *c, const char **hdr, size_t *len);

/* True when the web server, not suspect-fcgi, hands the request to the
 * app: the authorizer role and the two deciding modes. */
bool guard_call_app_elsewhere(const guard_call_t *c);

/* True when the app reads a repeated variable's copies as they came, not
 * the value the guard sees: where the app is handed the request
 * elsewhere, and where the request I/O left the copies apart
 * (mw_req_t.copies_apart). */
bool guard_call_copies_apart(const guard_call_t *c);

/*
 * The form body as urlencoded text (prefetched once per call, at most
 * form_max bytes; a multipart body's fields, guard_multipart.c).
 * SUSPECT_E_NOTFOUND when the request has no such body, is an
 * authorizer's (which must not read stdin), or the guard is in a deciding
 * mode (auth-request, authorizer: the body is the app's, never read here);
 * SUSPECT_E_FULL (an urlencoded body longer than form_max: it is then not
 * searched at all) or SUSPECT_E_PARSE (a multipart body refused, or
 * an urlencoded one holding "%uXXXX") when the caller answers c->refuse_status
 * with c->refuse_why; SUSPECT_E_IO, SUSPECT_E_NOMEM.
 */
suspect_rc_t guard_call_body(guard_call_t *c, const char **body, size_t *len);

/* ---- guard_multipart.c -------------------------------------------------- */

/*
 * Reads the call's multipart body (CONTENT_TYPE type[0..len)): *form
 * gets the fields of its head as an urlencoded form (malloc'ed, the
 * caller's; NULL when there is none) and *form_len its length, and a
 * body longer than form_max gets a filter checking the rest on its way
 * to the app.  SUSPECT_OK, SUSPECT_E_PARSE (refused: c->refuse_status,
 * c->refuse_why), SUSPECT_E_IO, SUSPECT_E_NOMEM; *form is NULL but on
 * SUSPECT_OK.
 */
suspect_rc_t guard_multipart_read(guard_call_t *c, const char *type, size_t len,
                                  char **form, size_t *form_len);

/* The signature of mw_cookie_find, mw_query_find and mw_form_find. */
typedef suspect_rc_t (*guard_find_fn)(const char *s, size_t s_len,
                                      const char *name, size_t name_len,
                                      char *buf, size_t size, size_t *len);

/*
 * Runs fn over s into call memory, whatever the value's length; the value
 * stays valid until guard_call_end().  SUSPECT_OK with *val, *len;
 * SUSPECT_E_NOTFOUND; SUSPECT_E_NOMEM.
 */
suspect_rc_t guard_call_find(guard_call_t *c, guard_find_fn fn, const char *s,
                             size_t s_len, const char *name, size_t name_len,
                             const char **val, size_t *len);

/* The client address as identity text (see mw_addr_identity()), resolved
 * once per call: SUSPECT_OK, or SUSPECT_E_NOTFOUND when the request has no
 * usable address. */
suspect_rc_t guard_call_client_ip(guard_call_t *c, const char **val,
                                  size_t *len);

/* The client address behind trusted proxies, resolved once per call (the
 * same as guard_call_client_ip()'s): SUSPECT_OK or SUSPECT_E_NOTFOUND. */
suspect_rc_t guard_call_client_addr(guard_call_t *c, const mw_addr_t **out);

/* ---- lists.c ------------------------------------------------------------ */

/* Compiles cl (deny: a <Deny>) into *out (owned: guard_list_free()).
 * SUSPECT_E_CONFIG "file:line: Allow: ..." for a bad entry (the list
 * file's own line for one of its lines), SUSPECT_E_NOMEM. */
suspect_rc_t guard_list_compile(const suspect_conf_t *conf,
                                const suspect_conf_list_t *cl, bool deny,
                                guard_list_t **out, suspect_err_t *err);

void guard_list_free(guard_list_t *l); /* NULL is a no-op */

/* l packed for suspect-cgi's compiled configuration (compiled_pack.c)
 * into *out (malloc, the caller's).  SUSPECT_E_NOMEM. */
suspect_rc_t guard_list_pack(const guard_list_t *l, compiled_blob_t *out,
                             suspect_err_t *err);

/* Whether l (NULL: none) holds the address a. */
bool guard_list_addr(const guard_list_t *l, const mw_addr_t *a);

/* Whether l (NULL: none) holds the identity's value (parts joined '_'). */
bool guard_list_identity(const guard_list_t *l, const suspect_identity_t *id);

/* A <Deny>'s status (403 when not given). */
int guard_list_status(const guard_list_t *l);

/* Address ranges of l, and in *ids its identity values (for --check). */
size_t guard_list_size(const guard_list_t *l, size_t *ids);

/* ---- identity.c --------------------------------------------------------- */

/*
 * Fills ids[0..*n) (at most cap) with the readings of identity gi: one
 * per combination of its parts' readings (see identity.c), usually one.
 * SUSPECT_OK when every part has a non-empty value, SUSPECT_E_NOTFOUND
 * when one has none, SUSPECT_E_RANGE when the readings would be more than
 * cap, SUSPECT_E_INVAL when a query or form source's parameter occurs
 * more than once with different values, SUSPECT_E_FULL when a form
 * source meets a body longer than form_max, SUSPECT_E_IO or
 * SUSPECT_E_NOMEM from reading the body.  Values live in the call.
 */
suspect_rc_t guard_identity_resolve(guard_call_t *c, const guard_identity_t *gi,
                                    suspect_identity_t *ids, size_t cap,
                                    size_t *n);

/* ---- guard_call.c: memory ------------------------------------------------ */

/* n bytes of call memory (stack part first), or NULL. */
char *guard_call_alloc(guard_call_t *c, size_t n);

/* Makes the heap block p the call's, freed by guard_call_end():
 * SUSPECT_OK, or SUSPECT_E_NOMEM (p freed) when the call holds too many. */
suspect_rc_t guard_call_adopt(guard_call_t *c, char *p);

/* ---- route.c ------------------------------------------------------------ */

/*
 * The first route matching method (NULL = none given), one of paths, and
 * its parameter condition, or NULL.  The request cannot be routed (*out is
 * NULL) with SUSPECT_E_INVAL when a later route asking the same parameter
 * for another value matches too (ambiguous: the caller answers 400),
 * SUSPECT_E_FULL when a route's condition needs a body longer than
 * form_max (the caller answers 413), SUSPECT_E_IO or SUSPECT_E_NOMEM when
 * reading the body failed.
 */
suspect_rc_t guard_route_find(guard_call_t *c, const char *method,
                              size_t method_len, const guard_paths_t *paths,
                              const guard_route_t **out);

/* True when path matches the route's path (see route.c: exact, with
 * PATH_INFO, or under a directory prefix). */
bool guard_route_path_match(const guard_route_t *r, const char *path,
                            size_t path_len);

/* device.c: device cookies.  guard_device_new() prepares the keys of
 * conf's <DeviceCookie> (*out NULL when there is none; SUSPECT_E_IO when
 * libsodium cannot start, SUSPECT_E_NOMEM); guard_device_apply() binds
 * the account identity of route r among ids[0..n) (from[i]: the route
 * identity of ids[i]) to res, and when the request carries a valid cookie
 * for that account, makes its key the device's: part (the caller's,
 * living until the keys are built) becomes one more part of its value. */
#define GUARD_DEVICE_PART 48

/* A time in a cookie Suspect sets (device cookie, pass, challenge token):
 * 8 bytes, big-endian. */
static inline void guard_put_be64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--) {
        p[i] = (uint8_t)v;
        v >>= 8;
    }
}

static inline uint64_t guard_get_be64(const uint8_t *p)
{
    uint64_t v = 0;

    for (int i = 0; i < 8; i++) {
        v = v << 8 | p[i];
    }
    return v;
}
suspect_rc_t guard_device_new(const suspect_conf_t *conf, guard_device_t **out);
void guard_device_free(guard_device_t *d);
void guard_device_apply(guard_call_t *c, const guard_route_t *r,
                        suspect_identity_t *ids, const size_t *from, size_t n,
                        mw_resolution_t *res, char part[GUARD_DEVICE_PART]);

/* Whether req came over HTTPS (HTTPS=on or 1, or REQUEST_SCHEME=https):
 * the cookies' names and Secure follow it (device.c). */
bool guard_is_https(const mw_req_t *req);

/* ---- challenge.c: challenges for a shared address ----------------------- */

#define GUARD_NONCE_LEN 16
#define GUARD_PASS_PART 40

/* A new challenge token for address addr[0..addr_len) and action, issued
 * at now_s, into out (size bytes, NUL-terminated); its length, or 0 when
 * out is too small. */
size_t guard_challenge_token(const suspect_conf_t *conf, const char *addr,
                             size_t addr_len, const char *action, int64_t now_s,
                             char *out, size_t size);

typedef enum guard_token_rc {
    GUARD_TOKEN_OK = 0,
    GUARD_TOKEN_FORGED,   /* not ours, or another address's or action's */
    GUARD_TOKEN_EXPIRED,  /* issued too long ago, or in the future */
    GUARD_TOKEN_UNSOLVED, /* the counter does not do the work */
    GUARD_TOKEN_REPLAYED  /* (the caller's verdict: used before) */
} guard_token_rc_t;

/* Whether token[0..token_len), with counter, solves a challenge issued
 * for addr and action under key or oldKey and still open at now_s; its
 * nonce in *nonce when it does.  Single use is the caller's (the store). */
guard_token_rc_t guard_challenge_check(const suspect_conf_t *conf,
                                       const char *addr, size_t addr_len,
                                       const char *action, const char *token,
                                       size_t token_len, uint64_t counter,
                                       int64_t now_s,
                                       uint8_t nonce[GUARD_NONCE_LEN]);

/* A new pass (the cookie's value) for addr, made at now_s under key, into
 * out (size bytes); its length, or 0 when out is too small. */
size_t guard_pass_make(const suspect_conf_t *conf, const char *addr,
                       size_t addr_len, int64_t now_s, char *out, size_t size);

/* Whether raw[0..n) is a pass valid at now_s for addr (key or oldKey);
 * *nonce its nonce when it is. */
bool guard_pass_valid(const suspect_conf_t *conf, const char *raw, size_t n,
                      const char *addr, size_t addr_len, int64_t now_s,
                      uint8_t nonce[GUARD_NONCE_LEN]);

/* Counts the shared identities among ids[0..n) (from[i]: the route
 * identity of ids[i]) of route r as the request's pass when it carries a
 * valid one: part (the caller's, living until the keys are built) becomes
 * one more part of each; sets res->pass_trusted. */
void guard_pass_apply(guard_call_t *c, const guard_route_t *r,
                      suspect_identity_t *ids, const size_t *from, size_t n,
                      mw_resolution_t *res, char part[GUARD_PASS_PART]);

#endif
