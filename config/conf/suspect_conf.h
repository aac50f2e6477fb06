/*
 * suspect_conf.h - suspect.xml, the middleware's configuration, as an
 * immutable snapshot.
 *
 * suspect.xml says where suspect-fcgi listens, where the limits file is,
 * which store counts, where allowed requests go (a CGI program or an
 * upstream FastCGI server) and which requests are which action, counted
 * against which identities.  docs/suspect-xml.md is the reference; this
 * header is its data model.
 *
 * Loading is syntax and range checking only: every element and attribute
 * known, numbers in range, names valid, sources well formed, file:line on
 * every error.  What needs the middleware's parsers (trusted proxy CIDRs)
 * is checked when the middleware compiles the snapshot, with the line kept
 * here.  A snapshot never changes; a reload builds a new one.  Parsing is
 * as safe as the limits file's: size cap, no DTD, no entities, no network.
 */
#ifndef SUSPECT_CONF_H
#define SUSPECT_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "suspect_error.h"
#include "suspect_policy.h"

#define SUSPECT_CONF_MAX_BYTES    (1u << 20)
#define SUSPECT_CONF_MAX_ROUTES   1000u
#define SUSPECT_CONF_MAX_METHODS  8u
#define SUSPECT_CONF_MAX_TEMPLATE (64u << 10)
#define SUSPECT_CONF_MAX_INDEX    8u

/* Where an identity value comes from. */
typedef enum suspect_src_kind {
    SUSPECT_SRC_HEADER = 1, /* header:X-Member-Code (the HTTP_* variable) */
    SUSPECT_SRC_COOKIE,     /* cookie:member */
    SUSPECT_SRC_QUERY,      /* query:member */
    SUSPECT_SRC_FORM,       /* form:member (urlencoded body, bounded) */
    SUSPECT_SRC_ENV,        /* env:REMOTE_USER (any CGI variable) */
    SUSPECT_SRC_CLIENT_IP,  /* client-ip (no name) */
    SUSPECT_SRC_AUTH_USER,  /* auth-user:basic, auth-user:any: the user
                               name of the Authorization header */
    SUSPECT_SRC_XMLRPC,     /* xmlrpc:METHOD:POS (each call of the body) */
    SUSPECT_SRC_JSON        /* json:/POINTER (each call of the body) */
} suspect_src_kind_t;

/* Calls one XML-RPC or JSON body may carry, by default and at most. */
#define SUSPECT_CONF_MAX_CALLS_DEFAULT 100u
#define SUSPECT_CONF_MAX_CALLS         1000u

/* Sources of one identity, alternatives included. */
#define SUSPECT_CONF_MAX_SOURCES 8u
/* Conditions of one route's when. */
#define SUSPECT_CONF_MAX_WHEN 8u
/* Longest normalize text. */
#define SUSPECT_CONF_MAX_NORMALIZE 1024u

typedef struct suspect_conf_source {
    suspect_src_kind_t kind;
    const char *name; /* NULL for client-ip; "basic" or "any" for
                         auth-user */
    unsigned part;    /* the part of the value it gives: sources of one
                         part are alternatives ("form:u|query:u") */
} suspect_conf_source_t;

/* One identity of a route: a type (e.g. MemberCode) and one source, or
 * several joined into a composite identity (MemberCode + promo code); a
 * part may be read from alternative sources, each that is present
 * counting (from="form:u|query:u"). */
typedef struct suspect_conf_identity {
    const char *type;
    size_t nparts;   /* 1 .. SUSPECT_MAX_PARTS */
    size_t nsources; /* nparts .. SUSPECT_CONF_MAX_SOURCES, by part */
    suspect_conf_source_t source[SUSPECT_CONF_MAX_SOURCES];
    const char *normalize; /* the application's reading, NULL: default */
    int line;
    /* account="yes": the account a device cookie binds (<DeviceCookie>) */
    bool account;
    /* shared="yes": an address many people may share; refused only
     * because of it, a browser gets a challenge (<Challenge>) */
    bool shared;
} suspect_conf_identity_t;

/* What a route does when an identity's value is missing or empty. */
typedef enum suspect_missing {
    SUSPECT_MISSING_SKIP = 0, /* count the other identities (default) */
    SUSPECT_MISSING_ALLOW,    /* let the request through uncounted */
    SUSPECT_MISSING_REJECT    /* answer 400 */
} suspect_missing_t;

/* Where a route's parameter condition looks. */
typedef enum suspect_param_in {
    SUSPECT_PARAM_QUERY = 1,
    SUSPECT_PARAM_FORM = 2,
    SUSPECT_PARAM_ANY = 3, /* query, then form */
    SUSPECT_PARAM_COOKIE = 4,
    /* PHP's $_REQUEST: query, form and cookie, every copy agreeing */
    SUSPECT_PARAM_REQUEST = 7
} suspect_param_in_t;

/* <Failure> and <Success> of a route (docs/suspect-xml.md): what in the
 * application's response says an attempt failed or succeeded.  An element
 * matches when every criterion it gives holds. */
#define SUSPECT_CONF_MAX_OUTCOMES   8u  /* elements per route */
#define SUSPECT_CONF_MAX_STATUSES   16u /* statuses per element */
#define SUSPECT_CONF_WITHIN_DEFAULT 4096u
#define SUSPECT_CONF_WITHIN_MAX     65536u

typedef struct suspect_conf_outcome {
    size_t nstatus; /* 0 = any status */
    int status[SUSPECT_CONF_MAX_STATUSES];
    const char *location; /* "/path[?query]" the Location names; NULL = any */
    const char *body;     /* the body's first `within` bytes hold it */
    size_t within;        /* bytes searched, default 4096 */
    int line;
    /* hosts="a.example b.example": the authorities an absolute Location
     * may name (NULL: the request's own Host) */
    const char *hosts;
    /* header="Set-Cookie: %7C0%7C": a response header of this name (NULL =
     * none asked), whose value holds header_text (NULL: present is enough) */
    const char *header;
    const char *header_text;
} suspect_conf_outcome_t;

/* What a route counts. */
typedef enum suspect_count {
    SUSPECT_COUNT_ALL = 0,  /* every attempt (the seed's) */
    SUSPECT_COUNT_FAILURES, /* those a <Failure> matches */
    SUSPECT_COUNT_UNLESS_OK /* all but those a <Success> matches */
} suspect_count_t;

/* <Allow> or <Deny>: client address blocks and identity values, written
 * in the element (ip=, identity=) and/or in a file of their own (file=,
 * read with the snapshot; one entry per line).  Parsed and checked by the
 * middleware when it compiles the snapshot (the address parser is its). */
#define SUSPECT_CONF_MAX_LIST_BYTES   (64u << 20) /* a list file */
#define SUSPECT_CONF_MAX_LIST_TEXT    (64u << 10) /* ip=, identity= */
#define SUSPECT_CONF_MAX_LIST_ENTRIES 1000000u    /* blocks, and values */
#define SUSPECT_CONF_MAX_LIST_VALUE   1024u       /* bytes of one value */

typedef struct suspect_conf_list {
    const char *ip;        /* "10.0.0.0/8 2001:db8::/32", NULL = none */
    const char *identity;  /* "LoginId=monitor ...", NULL = none */
    const char *file;      /* absolute, NULL = none */
    const char *file_text; /* its content (NUL-terminated) */
    size_t file_len;
    uint64_t file_id[5]; /* file_id_t of what was read (dev, ino, size,
                            mtime, ctime): a reload looks at it */
    int status;          /* <Deny>: the refusal's, 0 = 403 */
    int line;
    /* The list as the guard compiled it (compiled.h, compiled_pack.c),
     * when it comes from suspect-cgi's compiled configuration, which then
     * leaves file_text out; NULL when loaded from the XML. */
    const unsigned char *packed;
    size_t packed_len;
} suspect_conf_list_t;

typedef struct suspect_conf_route {
    const char *action; /* must exist in the limits file (checked later) */
    size_t nmethods;    /* 0 = any method */
    const char *methods[SUSPECT_CONF_MAX_METHODS]; /* upper case */
    const char *path;                              /* absolute, normalised */
    bool prefix;             /* path is a prefix ("/api/"), else exact */
    const char *param_name;  /* NULL = no parameter condition */
    const char *param_value; /* NULL = the parameter only has to exist */
    suspect_param_in_t param_in;
    /* when: the route only matches requests that carry one of these
     * (query, form, header or cookie NAME present); nwhen 0 = always */
    size_t nwhen;
    suspect_conf_source_t when[SUSPECT_CONF_MAX_WHEN];
    size_t nidentities; /* 1 .. SUSPECT_MAX_IDENTITIES */
    suspect_conf_identity_t *identities;
    suspect_missing_t missing;
    int status; /* denial status 400..599, 0 = 429 (403 when refusing) */
    int line;
    /* refuse="yes": a request this route matches is refused (status) and
     * logged, never counted nor passed: a shape the application gets
     * wrong, closed in front of it; no identities, its action need not be
     * in the limits file */
    bool refuse;
    /* <Failure> or <Success> (never both): count by the response */
    suspect_count_t count;
    size_t noutcomes;
    const suspect_conf_outcome_t *outcomes;
    /* shadow="yes|no" and failMode=, or from the route's <Action>, once
     * loaded (SUSPECT_SHADOW_*, SUSPECT_RULE_FAIL_*; 0 = not set) */
    int shadow;
    int fail_mode;
    /* cost="N": the tokens (or hits) a request of this route takes from
     * its action's token bucket or sliding counter; 0 = 1 */
    unsigned cost;
    /* <Allow>, <Deny> of the route (NULL = none) */
    const suspect_conf_list_t *allow;
    const suspect_conf_list_t *deny;
    /* passMethods: XML-RPC methods that check no password, passed
     * uncounted (space-separated; NULL = none); maxCalls: calls one body
     * may carry (0 = SUSPECT_CONF_MAX_CALLS_DEFAULT) */
    const char *pass_methods;
    unsigned max_calls;
} suspect_conf_route_t;

/* suspect_conf_route_t.shadow, suspect_conf_action_t.shadow */
#define SUSPECT_SHADOW_UNSET 0 /* the action's, else enforced */
#define SUSPECT_SHADOW_OFF   1 /* enforced */
#define SUSPECT_SHADOW_ON    2 /* decided and counted, never refused */

/* <Action name="..."/>: settings for every route of one action that a
 * route does not give itself; applied to the routes when the file loads. */
typedef struct suspect_conf_action {
    const char *name;
    int shadow;    /* SUSPECT_SHADOW_*, 0 = not set */
    int fail_mode; /* SUSPECT_RULE_FAIL_*, 0 = the store's */
    int line;
} suspect_conf_action_t;

/* How allowed requests reach the app, and how requests are answered. */
typedef enum suspect_conf_mode {
    SUSPECT_MODE_FORWARD = 0,  /* responder: run the CGI or the upstream */
    SUSPECT_MODE_AUTH_REQUEST, /* nginx auth_request: 2xx / 403 only */
    SUSPECT_MODE_AUTHORIZER    /* decide only: 200, or the denial itself */
} suspect_conf_mode_t;
/* FastCGI AUTHORIZER requests are answered as an authorizer in any mode;
 * the two deciding modes forward nothing and never read a body. */

typedef enum suspect_conf_store_kind {
    SUSPECT_STORE_MEMORY = 0,
    SUSPECT_STORE_LMDB,
    SUSPECT_STORE_REDIS
} suspect_conf_store_kind_t;

typedef enum suspect_conf_format {
    SUSPECT_FORMAT_AUTO = 0, /* by Accept */
    SUSPECT_FORMAT_JSON,
    SUSPECT_FORMAT_HTML
} suspect_conf_format_t;

typedef enum suspect_conf_fwd_header {
    SUSPECT_FWD_NONE = 0,  /* only REMOTE_ADDR (default) */
    SUSPECT_FWD_XFF,       /* X-Forwarded-For from trusted proxies */
    SUSPECT_FWD_FORWARDED, /* Forwarded (RFC 7239) from trusted proxies */
    SUSPECT_FWD_BOTH       /* Forwarded, else X-Forwarded-For */
} suspect_conf_fwd_header_t;

/* What the decision log writes (<Log decisions>). */
typedef enum suspect_conf_decisions {
    SUSPECT_DECISIONS_OFF = 0,
    SUSPECT_DECISIONS_DENIALS, /* denials, refusals and fail-mode decisions */
    SUSPECT_DECISIONS_ALL      /* every request that met a route */
} suspect_conf_decisions_t;

/* Where the control socket goes when <Control socket> is not given. */
#define SUSPECT_CONF_CONTROL_DIR  "/run/suspect"
#define SUSPECT_CONF_CONTROL_NAME "control.sock"

typedef struct suspect_conf {
    const char *file; /* as given to suspect_conf_load() */
    const char *dir;  /* its directory: relative paths are resolved here */

    /* <Server> (restart to change, except io_timeout_ms, form_max) */
    const char *listen;   /* unix:/path, tcp:host:port, tcp:[v6]:port,
                             fd:N, systemd */
    unsigned socket_mode; /* unix socket permissions, default 0660 */
    unsigned workers;     /* default 16 */
    suspect_conf_mode_t mode;
    unsigned io_timeout_ms;      /* web server I/O, default 30000 */
    size_t form_max;             /* bytes buffered for form: sources, 64 KiB */
    size_t params_max;           /* FastCGI PARAMS bytes accepted, 128 KiB */
    unsigned request_timeout_ms; /* a request's arrival, whole, 60000 */
    const char *index_files;     /* index="...": the names the web server
                                    tries for a directory, blank-separated
                                    (at most SUSPECT_CONF_MAX_INDEX); NULL */
    size_t max_connections;      /* held at once; 0: what the descriptor
                                    limit leaves */
    int server_line;

    /* <Limits> */
    const char *limits_path; /* absolute (resolved against dir) */
    unsigned reload_ms;      /* how often both files are looked at, 1000 */
    int limits_line;

    /* <Store> (restart to change) */
    suspect_conf_store_kind_t store;
    size_t memory_max_entries; /* 0 = the store's default */
    const char *lmdb_path;
    size_t lmdb_map_size; /* 0 = default */
    bool lmdb_no_sync;
    unsigned lmdb_mode; /* permissions of its two files, 0600 */
    int lmdb_group;     /* their group (a gid), -1 = the creator's */
    const char *redis_url;
    unsigned redis_timeout_ms; /* 0 = default */
    bool redis_server_clock;
    int fail_mode; /* suspect_failmode_t for redis and lmdb */
    int store_line;

    /* <Keys> (restart to change) */
    suspect_key_format_t key_format;
    const char *key_prefix; /* NULL = none */
    /* hashTag: 1 yes, 0 no once loaded (auto, -1, becomes yes with a
     * redis+cluster:// store); see suspect_keyopts_t.hash_tag */
    int key_hash_tag;
    int keys_line;

    /* <Cgi> or <Upstream>: present in forward mode, exactly one */
    bool has_cgi;
    const char *cgi_root;     /* scripts must lie under it; NULL if program */
    const char *cgi_program;  /* a fixed program for every request, or NULL */
    unsigned cgi_timeout_ms;  /* default 30000 */
    const char *cgi_pass_env; /* passEnv: names (a trailing '*' a prefix)
                                 the program gets beyond CGI/1.1 and
                                 HTTP_*; NULL = none */
    int cgi_line;
    bool has_upstream;
    const char *upstream_address;         /* unix:/path or tcp:host:port */
    const char *upstream_script;          /* SCRIPT_FILENAME to send, or NULL */
    const char *upstream_pass_params;     /* passParams: names (a trailing
                                             '*' a prefix) sent on beyond
                                             CGI/1.1 and HTTP_*; NULL =
                                             none */
    unsigned upstream_timeout_ms;         /* default 30000 */
    unsigned upstream_connect_timeout_ms; /* default 1000 */
    unsigned upstream_max_idle;           /* pooled connections, default 16 */
    int upstream_line;

    /* <ClientIp> */
    const char *trusted_proxies; /* CIDR list text, NULL = none */
    suspect_conf_fwd_header_t fwd_header;
    unsigned ipv4_prefix; /* 0 = 32 */
    unsigned ipv6_prefix; /* 0 = 64 */
    int client_ip_line;

    /* <Response> */
    suspect_conf_format_t format;
    const char *template_path; /* NULL = built-in page */
    const char *template_body; /* the file's content, loaded with the
                                  snapshot (<= SUSPECT_CONF_MAX_TEMPLATE) */
    size_t template_len;
    const char *template_type; /* NULL = text/html; charset=utf-8 */
    int response_line;

    /* <Response shadowHeader>: the header a request a shadow route would
     * have refused gets (forward mode: on the application's response;
     * else on the 200); NULL = none */
    const char *shadow_header;

    /* <Control> (restart to change): suspect-fcgi's control socket */
    bool control_on;           /* enabled, default true */
    const char *control_path;  /* socket; NULL = the default (see
                                  suspect_conf_control_path()) */
    unsigned control_mode;     /* permissions, default 0660 */
    const char *control_group; /* a group whose members may use it */
    int control_line;

    /* <Metrics> (restart to change) */
    const char *metrics_listen; /* tcp:host:port, NULL = no listener */
    int metrics_line;

    /* <Log> */
    suspect_conf_decisions_t decisions; /* the decision log; reloadable */
    const char *decision_path;          /* its file (restart to change); NULL =
                                           stderr */
    const char *identity_key;           /* key of the identities' hashes; NULL =
                                           one drawn at start */
    bool full_uri; /* log whole request targets, query too */
    int log_line;

    /* <DeviceCookie>: a browser that signed in to an account is trusted
     * for it (docs/suspect-xml.md); key NULL = off */
    const char *device_key;     /* signs and binds new cookies */
    const char *device_old_key; /* still verifies (rotation); NULL = none */
    const char *device_name;    /* the cookie's name ("__Host-" + it on
                                   HTTPS) */
    unsigned device_lifetime_s;
    int device_line;

    /* <Challenge>: a browser refused only because of a shared identity
     * may earn a pass by a proof of work (docs/suspect-xml.md); key NULL
     * = off */
    const char *challenge_key;     /* signs challenges and passes */
    const char *challenge_old_key; /* still verifies (rotation) */
    const char *challenge_path;    /* where the page posts its solution */
    const char *challenge_name;    /* the pass cookie's name */
    unsigned challenge_difficulty; /* leading zero bits of the SHA-256 */
    unsigned challenge_lifetime_s; /* of a pass */
    int challenge_line;

    /* <Route>, in file order: the first match wins */
    size_t nroutes;
    const suspect_conf_route_t *routes;

    /* <Action>: already applied to the routes; kept for checks and
     * listings (not carried by suspect-cgi's compiled configuration) */
    size_t nactions;
    const suspect_conf_action_t *actions;

    /* <Allow>, <Deny> for every request (NULL = none) */
    const suspect_conf_list_t *allow;
    const suspect_conf_list_t *deny;
} suspect_conf_t;

/*
 * Loads and checks suspect.xml at path.  On success *out is a new snapshot
 * with one reference.  On failure err says "file:line: message" and *out
 * is untouched.
 */
suspect_rc_t suspect_conf_load(const char *path, const suspect_conf_t **out,
                               suspect_err_t *err);

/* As suspect_conf_load(), from memory; dir resolves relative paths. */
suspect_rc_t suspect_conf_parse(const char *buf, size_t len, const char *name,
                                const char *dir, const suspect_conf_t **out,
                                suspect_err_t *err);

/* References (thread-safe); the last unref frees.  NULL is a no-op. */
const suspect_conf_t *suspect_conf_ref(const suspect_conf_t *conf);
void suspect_conf_unref(const suspect_conf_t *conf);

/* Warnings found while loading ("file:line: warning: text"). */
size_t suspect_conf_warning_count(const suspect_conf_t *conf);
const char *suspect_conf_warning(const suspect_conf_t *conf, size_t i);

/* Whether a list file of conf (an <Allow file> or <Deny file>) is no
 * longer what the snapshot read: a reload should load the whole file
 * again.  *sig gets a digest of what the files are now (to tell, after a
 * failed load, whether they changed since). */
bool suspect_conf_lists_changed(const suspect_conf_t *conf, uint64_t *sig);

/*
 * The path of suspect-fcgi's control socket: <Control socket>, else
 * control.sock in the directory of a unix <Server listen>, else
 * SUSPECT_CONF_CONTROL_DIR/control.sock; NULL when <Control
 * enabled="no">.  suspect-fcgi and suspectctl both call it, so they meet.
 * Written into buf (size bytes; NULL when it does not fit).
 */
const char *suspect_conf_control_path(const suspect_conf_t *conf, char *buf,
                                      size_t size);

/* The keyword of a store kind ("memory", "lmdb", "redis"). */
const char *suspect_conf_store_name(suspect_conf_store_kind_t k);

/* The keyword of a decision log level ("off", "denials", "all"). */
const char *suspect_conf_decisions_name(suspect_conf_decisions_t d);

/* The name of a source kind as written in the file ("cookie", ...). */
const char *suspect_src_kind_name(suspect_src_kind_t kind);

/* ---- the two files together (conf_actions.c) ----------------------------- */

struct suspect_limits;

/*
 * Each route of conf whose action lim lacks, reported through fn (may be
 * NULL) as "suspect.xml:12: route action 'Logn' is not in limits.xml (did
 * you mean 'Login'?)"; returns how many.  Such a route would let its
 * requests through uncounted, so the pair is refused as a whole: at
 * start, and on a reload of either file.  Also each <Action> whose name
 * lim lacks.
 */
size_t suspect_conf_missing_actions(const suspect_conf_t *conf,
                                    const struct suspect_limits *lim,
                                    void (*fn)(void *arg, const char *msg),
                                    void *arg);

/* SUSPECT_OK when every route's and <Action>'s action is in lim, else
 * SUSPECT_E_CONFIG with the first problem in err (file and line). */
suspect_rc_t suspect_conf_check_actions(const suspect_conf_t *conf,
                                        const struct suspect_limits *lim,
                                        suspect_err_t *err);

#endif
