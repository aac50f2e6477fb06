/*
 * conf_elems.c - the tables of <Suspect> and its singleton children.
 *
 * Each element is a conf_elem_t row and each of its attributes a
 * conf_attr_t row: the attribute's name, the setter for its kind of value,
 * the offset of the suspect_conf_t field it fills and the setter's argument
 * (a range, a list of names).  Adding an attribute is adding a row; the
 * walker (conf_xml.c) does the rest.  What one row cannot say (an attribute
 * that only applies to one store type, two elements that exclude each
 * other) is checked by the element's end hook, after all its attributes,
 * or by the root's end hook, after the whole file.
 *
 * Ranges are in the units stored: milliseconds for durations (written in
 * seconds in the file), bytes for sizes.  docs/suspect-xml.md lists them
 * all; keep the two in step.
 */
#include "conf_internal.h"

#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "suspect_failover.h"
#include "suspect_redis.h"

#define OFF(field) offsetof(suspect_conf_t, field)
#define BIT(i)     (1u << (i))

/* ---- value kinds shared by several rows ---------------------------------- */

static const conf_num_t workers_range = {1, 1024, CONF_PLAIN, CONF_UNSIGNED};
static const conf_num_t mode_range = {0, 0777, CONF_OCTAL, CONF_UNSIGNED};
static const conf_num_t io_range = {1, 3600000, CONF_SECONDS, CONF_UNSIGNED};
static const conf_num_t conns_range = {16, 1000000, CONF_PLAIN, CONF_SIZE};
static const conf_num_t form_range = {1u << 10, 16u << 20, CONF_BYTES,
                                      CONF_SIZE};
static const conf_num_t params_range = {4u << 10, 16u << 20, CONF_BYTES,
                                        CONF_SIZE};
static const conf_num_t reload_range = {100, 86400000, CONF_SECONDS,
                                        CONF_UNSIGNED};
static const conf_num_t entries_range = {1, 1000000000, CONF_PLAIN, CONF_SIZE};
static const conf_num_t map_range = {
    1u << 20, SIZE_MAX > (1ull << 40) ? 1ull << 40 : SIZE_MAX, CONF_BYTES,
    CONF_SIZE};
static const conf_num_t redis_ms_range = {1, 60000, CONF_PLAIN, CONF_UNSIGNED};
static const conf_num_t run_range = {1, 86400000, CONF_SECONDS, CONF_UNSIGNED};
static const conf_num_t connect_range = {1, 60000, CONF_SECONDS, CONF_UNSIGNED};
static const conf_num_t idle_range = {0, 1024, CONF_PLAIN, CONF_UNSIGNED};
static const conf_num_t v4_range = {1, 32, CONF_PLAIN, CONF_UNSIGNED};
static const conf_num_t v6_range = {1, 128, CONF_PLAIN, CONF_UNSIGNED};

static const conf_enum_item_t store_items[] = {{"memory", SUSPECT_STORE_MEMORY},
                                               {"lmdb", SUSPECT_STORE_LMDB},
                                               {"redis", SUSPECT_STORE_REDIS},
                                               {NULL, 0}};
static const conf_enum_t store_enum = {store_items, 0};

static const conf_enum_item_t clock_items[] = {
    {"caller", 0}, {"server", 1}, {NULL, 0}};
static const conf_enum_t clock_enum = {clock_items, 1};

static const conf_enum_item_t fail_items[] = {{"local", SUSPECT_FAIL_LOCAL},
                                              {"open", SUSPECT_FAIL_OPEN},
                                              {"closed", SUSPECT_FAIL_CLOSED},
                                              {NULL, 0}};
static const conf_enum_t fail_enum = {fail_items, 0};

static const conf_enum_item_t keys_items[] = {
    {"seed", SUSPECT_KEYS_SEED}, {"typed", SUSPECT_KEYS_TYPED}, {NULL, 0}};
static const conf_enum_t keys_enum = {keys_items, 0};
static const conf_enum_item_t tag_items[] = {
    {"auto", -1}, {"yes", 1}, {"no", 0}, {NULL, 0}};
static const conf_enum_t tag_enum = {tag_items, 0};

static const conf_enum_item_t fwd_items[] = {
    {"none", SUSPECT_FWD_NONE},
    {"x-forwarded-for", SUSPECT_FWD_XFF},
    {"forwarded", SUSPECT_FWD_FORWARDED},
    {NULL, 0}};
static const conf_enum_t fwd_enum = {fwd_items, 0};

/* header="...": fwd_enum, with a hint for "both", which older files may
 * hold.  Believing Forwarded, else X-Forwarded-For, trusts a client's
 * Forwarded whenever the proxy writes only X-Forwarded-For. */
static suspect_rc_t set_fwd_header(conf_build_t *b, const conf_site_t *at,
                                   void *obj, const conf_attr_t *a,
                                   const char *v, size_t n)
{
    if (n == 4 && strncasecmp(v, "both", 4) == 0) {
        return conf_bad_value(b, at, v, n,
                              "is not accepted: name the one header the "
                              "trusted proxy sets, \"x-forwarded-for\" or "
                              "\"forwarded\" (a client writes the other)");
    }
    return conf_set_enum(b, at, obj, a, v, n);
}

static const conf_enum_item_t format_items[] = {{"auto", SUSPECT_FORMAT_AUTO},
                                                {"json", SUSPECT_FORMAT_JSON},
                                                {"html", SUSPECT_FORMAT_HTML},
                                                {NULL, 0}};
static const conf_enum_t format_enum = {format_items, 0};

static const conf_text_t prefix_text = {
    128, NULL, 0, 1, NULL, NULL, "must be printable ASCII without spaces"};
static const conf_text_t url_text = {
    1024,
    NULL,
    0,
    0,
    "redis://|unix://|redis+sentinel://|redis+cluster://",
    NULL,
    "must be redis://host[:port][/db], unix:///path, "
    "redis+sentinel://host[:port][,host[:port]...]/NAME or "
    "redis+cluster://host[:port][,host[:port]...]"};
static const conf_text_t proxies_text = {
    4096,
    "0123456789abcdefABCDEF.:/,",
    1,
    1,
    NULL,
    NULL,
    "must be addresses or CIDR blocks separated by spaces or commas"};
static const conf_text_t ctype_text = {
    128,
    NULL,
    1,
    0,
    NULL,
    "/",
    "must be a media type such as 'text/html; charset=utf-8'"};

/* ---- <Server> and <Limits> ----------------------------------------------- */

static const conf_text_t index_text = {
    1024,
    NULL,
    1,
    1,
    NULL,
    NULL,
    "must be file names (no '/'), separated by blanks"};

/* index="index.php app.cgi": the web server's index names, in its order:
 * file names, at most SUSPECT_CONF_MAX_INDEX. */
static suspect_rc_t set_index(conf_build_t *b, const conf_site_t *at, void *obj,
                              const conf_attr_t *a, const char *v, size_t n)
{
    unsigned names = 0;

    for (size_t i = 0; i < n; i++) {
        if (v[i] == '/' ||
            (v[i] == '.' && (i == 0 || v[i - 1] == ' ') &&
             (i + 1 == n || v[i + 1] == ' ' ||
              (v[i + 1] == '.' && (i + 2 == n || v[i + 2] == ' '))))) {
            return conf_bad_value(b, at, v, n,
                                  "must be file names (no '/', '.' or "
                                  "'..'), separated by blanks");
        }
        names += v[i] != ' ' && (i == 0 || v[i - 1] == ' ');
    }
    if (names > SUSPECT_CONF_MAX_INDEX) {
        return conf_bad_value(b, at, v, n, "names more than 8 files");
    }
    return conf_set_text(b, at, obj, a, v, n);
}

static const conf_attr_t server_attrs[] = {
    {"listen", conf_set_endpoint, OFF(listen), "listen", 0},
    {"socketMode", conf_set_num, OFF(socket_mode), &mode_range, 0},
    {"workers", conf_set_num, OFF(workers), &workers_range, 0},
    {"mode", conf_set_enum, OFF(mode), &conf_mode_enum, 0},
    {"ioTimeout", conf_set_num, OFF(io_timeout_ms), &io_range, 0},
    {"formMax", conf_set_num, OFF(form_max), &form_range, 0},
    {"paramsMax", conf_set_num, OFF(params_max), &params_range, 0},
    {"requestTimeout", conf_set_num, OFF(request_timeout_ms), &io_range, 0},
    {"maxConnections", conf_set_num, OFF(max_connections), &conns_range, 0},
    {"index", set_index, OFF(index_files), &index_text, 0},
    {NULL, NULL, 0, NULL, 0}};

static const conf_elem_t server_elem = {
    "Server", server_attrs, NULL, NULL, NULL, OFF(server_line), CONF_SINGLE};

static const conf_attr_t limits_attrs[] = {
    {"path", conf_set_file, OFF(limits_path), NULL, CONF_REQUIRED},
    {"reload", conf_set_num, OFF(reload_ms), &reload_range, 0},
    {NULL, NULL, 0, NULL, 0}};

static const conf_elem_t limits_elem = {
    "Limits", limits_attrs, NULL, NULL, NULL, OFF(limits_line), CONF_SINGLE};

/* ---- <Store> ---------------------------------------------------------------
 */

enum {
    ST_TYPE,
    ST_ENTRIES,
    ST_PATH,
    ST_MAP,
    ST_NOSYNC,
    ST_MODE,
    ST_GROUP,
    ST_URL,
    ST_TIMEOUT,
    ST_CLOCK,
    ST_FAIL
};

static const conf_attr_t store_attrs[] = {
    [ST_TYPE] = {"type", conf_set_enum, OFF(store), &store_enum, 0},
    [ST_ENTRIES] = {"maxEntries", conf_set_num, OFF(memory_max_entries),
                    &entries_range, 0},
    [ST_PATH] = {"path", conf_set_file, OFF(lmdb_path), NULL, 0},
    [ST_MAP] = {"mapSize", conf_set_num, OFF(lmdb_map_size), &map_range, 0},
    [ST_NOSYNC] = {"noSync", conf_set_bool, OFF(lmdb_no_sync), NULL, 0},
    [ST_MODE] = {"mode", conf_set_num, OFF(lmdb_mode), &mode_range, 0},
    [ST_GROUP] = {"group", conf_set_group, OFF(lmdb_group), NULL, 0},
    [ST_URL] = {"url", conf_set_text, OFF(redis_url), &url_text, 0},
    [ST_TIMEOUT] = {"timeoutMs", conf_set_num, OFF(redis_timeout_ms),
                    &redis_ms_range, 0},
    [ST_CLOCK] = {"clock", conf_set_enum, OFF(redis_server_clock), &clock_enum,
                  0},
    [ST_FAIL] = {"failMode", conf_set_enum, OFF(fail_mode), &fail_enum, 0},
    {NULL, NULL, 0, NULL, 0}};

/* The attributes each store type uses; maxEntries also sizes the local
 * fallback store of lmdb and redis. */
static const uint32_t store_uses[] = {
    [SUSPECT_STORE_MEMORY] = BIT(ST_TYPE) | BIT(ST_ENTRIES),
    [SUSPECT_STORE_LMDB] = BIT(ST_TYPE) | BIT(ST_ENTRIES) | BIT(ST_PATH) |
                           BIT(ST_MAP) | BIT(ST_NOSYNC) | BIT(ST_MODE) |
                           BIT(ST_GROUP) | BIT(ST_FAIL),
    [SUSPECT_STORE_REDIS] = BIT(ST_TYPE) | BIT(ST_ENTRIES) | BIT(ST_URL) |
                            BIT(ST_TIMEOUT) | BIT(ST_CLOCK) | BIT(ST_FAIL),
};

/* Type-specific checks; what another type uses is ignored, with a warning,
 * and reset so it cannot differ between two files that mean the same. */
static suspect_rc_t store_end(conf_build_t *b, void *obj, uint32_t seen,
                              int line)
{
    suspect_conf_t *c = obj;
    uint32_t unused = seen & ~store_uses[c->store];

    for (int i = 0; unused != 0; i++, unused >>= 1) {
        if ((unused & 1u) &&
            conf_warn(b, line, "Store: %s does not apply to type %s; ignored",
                      store_attrs[i].name, store_items[c->store].name) != 0) {
            return SUSPECT_E_NOMEM;
        }
    }
    if (c->store != SUSPECT_STORE_LMDB) {
        c->lmdb_path = NULL;
        c->lmdb_map_size = 0;
        c->lmdb_no_sync = false;
        c->lmdb_mode = 0600;
        c->lmdb_group = -1;
    } else if (c->lmdb_path == NULL) {
        return conf_fail(b, line, "Store: type lmdb needs path");
    } else if ((c->lmdb_mode & 0600) != 0600 || (c->lmdb_mode & ~0660u) != 0) {
        /* The files hold identities: never others', never executable. */
        return conf_fail(b, line,
                         "Store: mode %04o: the owner needs 0600, and only "
                         "the group may have more (0600, 0640 or 0660)",
                         c->lmdb_mode);
    }
    if (c->store != SUSPECT_STORE_REDIS) {
        c->redis_url = NULL;
        c->redis_timeout_ms = 0;
        c->redis_server_clock = false;
    } else if (c->redis_url == NULL) {
        c->redis_url = SUSPECT_REDIS_DEFAULT_URL;
    }
    if (c->store == SUSPECT_STORE_MEMORY) {
        c->fail_mode = SUSPECT_FAIL_LOCAL;
    }
    return SUSPECT_OK;
}

static const conf_elem_t store_elem = {
    "Store", store_attrs, NULL, NULL, store_end, OFF(store_line), CONF_SINGLE};

/* ---- <Keys> ----------------------------------------------------------------
 */

static const conf_attr_t keys_attrs[] = {
    {"format", conf_set_enum, OFF(key_format), &keys_enum, 0},
    {"prefix", conf_set_text, OFF(key_prefix), &prefix_text, 0},
    {"hashTag", conf_set_enum, OFF(key_hash_tag), &tag_enum, 0},
    {NULL, NULL, 0, NULL, 0}};

static const conf_elem_t keys_elem = {"Keys", keys_attrs,     NULL,       NULL,
                                      NULL,   OFF(keys_line), CONF_SINGLE};

/* hashTag auto: yes with Redis Cluster, whose scripts need an identity's
 * window and lock in one slot; a prefix must not move the tag. */
static suspect_rc_t keys_check(conf_build_t *b)
{
    suspect_conf_t *c = b->conf;
    const char *p = c->key_prefix != NULL ? c->key_prefix : "";

    if (c->key_hash_tag < 0) {
        c->key_hash_tag = c->redis_url != NULL &&
                          strncmp(c->redis_url, "redis+cluster://", 16) == 0;
    }
    if (c->key_hash_tag && strpbrk(p, "{}") != NULL) {
        return conf_fail(b, c->keys_line,
                         "Keys: prefix '%s' holds '{' or '}', which would "
                         "move the hash tag (hashTag=\"no\", or another "
                         "prefix)",
                         p);
    }
    return SUSPECT_OK;
}

/* ---- <Cgi> and <Upstream> -------------------------------------------------
 */

enum { CGI_ROOT, CGI_PROGRAM, CGI_TIMEOUT, CGI_PASS_ENV };

static const conf_text_t pass_env_text = {
    4096,
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_*",
    1,
    1,
    NULL,
    NULL,
    "must be variable names (letters, digits, '_'), a trailing '*' for a "
    "prefix, separated by blanks"};

/* passEnv="SSL_CLIENT_S_DN GEOIP_*" (and <Upstream passParams>): variable
 * names, or prefixes ending in '*'; a '*' elsewhere, or alone (every
 * variable: what the list is there to prevent), is refused. */
static suspect_rc_t set_pass_env(conf_build_t *b, const conf_site_t *at,
                                 void *obj, const conf_attr_t *a, const char *v,
                                 size_t n)
{
    for (size_t i = 0; i < n; i++) {
        bool start = i == 0 || v[i - 1] == ' ';
        bool end = i + 1 == n || v[i + 1] == ' ';

        if (v[i] == '*' && (start || !end)) {
            return conf_bad_value(b, at, v, n,
                                  "may only end a name with '*' (a prefix "
                                  "of at least one letter)");
        }
    }
    return conf_set_text(b, at, obj, a, v, n);
}

static const conf_attr_t cgi_attrs[] = {
    [CGI_ROOT] = {"root", conf_set_abspath, OFF(cgi_root), "dir", 0},
    [CGI_PROGRAM] = {"program", conf_set_abspath, OFF(cgi_program), NULL, 0},
    [CGI_TIMEOUT] = {"timeout", conf_set_num, OFF(cgi_timeout_ms), &run_range,
                     0},
    [CGI_PASS_ENV] = {"passEnv", set_pass_env, OFF(cgi_pass_env),
                      &pass_env_text, 0},
    {NULL, NULL, 0, NULL, 0}};

/* Exactly one of root and program. */
static suspect_rc_t cgi_end(conf_build_t *b, void *obj, uint32_t seen, int line)
{
    suspect_conf_t *c = obj;
    uint32_t which = seen & (BIT(CGI_ROOT) | BIT(CGI_PROGRAM));

    if (which == 0) {
        return conf_fail(b, line, "Cgi: root or program is required");
    }
    if (which != BIT(CGI_ROOT) && which != BIT(CGI_PROGRAM)) {
        return conf_fail(b, line,
                         "Cgi: root and program exclude each other: give one");
    }
    c->has_cgi = true;
    return SUSPECT_OK;
}

static const conf_elem_t cgi_elem = {"Cgi",   cgi_attrs,     NULL,       NULL,
                                     cgi_end, OFF(cgi_line), CONF_SINGLE};

static const conf_attr_t upstream_attrs[] = {
    {"address", conf_set_endpoint, OFF(upstream_address), NULL, CONF_REQUIRED},
    {"scriptFilename", conf_set_abspath, OFF(upstream_script), NULL, 0},
    {"passParams", set_pass_env, OFF(upstream_pass_params), &pass_env_text, 0},
    {"timeout", conf_set_num, OFF(upstream_timeout_ms), &run_range, 0},
    {"connectTimeout", conf_set_num, OFF(upstream_connect_timeout_ms),
     &connect_range, 0},
    {"maxIdle", conf_set_num, OFF(upstream_max_idle), &idle_range, 0},
    {NULL, NULL, 0, NULL, 0}};

/* Marks the upstream as given. */
static suspect_rc_t upstream_end(conf_build_t *b, void *obj, uint32_t seen,
                                 int line)
{
    suspect_conf_t *c = obj;

    (void)b;
    (void)seen;
    (void)line;
    c->has_upstream = true;
    return SUSPECT_OK;
}

static const conf_elem_t upstream_elem = {
    "Upstream",   upstream_attrs,     NULL,       NULL,
    upstream_end, OFF(upstream_line), CONF_SINGLE};

/* ---- <ClientIp> and <Response> -------------------------------------------
 */

static const conf_attr_t client_ip_attrs[] = {
    {"trustedProxies", conf_set_text, OFF(trusted_proxies), &proxies_text, 0},
    {"header", set_fwd_header, OFF(fwd_header), &fwd_enum, 0},
    {"ipv4Prefix", conf_set_num, OFF(ipv4_prefix), &v4_range, 0},
    {"ipv6Prefix", conf_set_num, OFF(ipv6_prefix), &v6_range, 0},
    {NULL, NULL, 0, NULL, 0}};

/* A forwarding header with no trusted proxy is never read: say so. */
static suspect_rc_t client_ip_end(conf_build_t *b, void *obj, uint32_t seen,
                                  int line)
{
    const suspect_conf_t *c = obj;

    (void)seen;
    if (c->fwd_header != SUSPECT_FWD_NONE && c->trusted_proxies == NULL) {
        return conf_warn(b, line,
                         "ClientIp: header is only believed from "
                         "trustedProxies, which is empty; it is never read");
    }
    return SUSPECT_OK;
}

static const conf_elem_t client_ip_elem = {
    "ClientIp",    client_ip_attrs,     NULL,       NULL,
    client_ip_end, OFF(client_ip_line), CONF_SINGLE};

enum { RS_FORMAT, RS_TEMPLATE, RS_TYPE, RS_SHADOW_HEADER };

static const conf_text_t header_text = {
    64,
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-",
    0,
    0,
    NULL,
    NULL,
    "must be a header name (letters, digits and '-')"};

static const conf_attr_t response_attrs[] = {
    [RS_FORMAT] = {"format", conf_set_enum, OFF(format), &format_enum, 0},
    [RS_TEMPLATE] = {"template", conf_set_file, OFF(template_path), NULL, 0},
    [RS_TYPE] = {"templateType", conf_set_text, OFF(template_type), &ctype_text,
                 0},
    [RS_SHADOW_HEADER] = {"shadowHeader", conf_set_text, OFF(shadow_header),
                          &header_text, 0},
    {NULL, NULL, 0, NULL, 0}};

/* Loads the template now, so a reload with a missing one fails whole. */
static suspect_rc_t response_end(conf_build_t *b, void *obj, uint32_t seen,
                                 int line)
{
    suspect_conf_t *c = obj;

    if (c->template_path == NULL) {
        if ((seen & BIT(RS_TYPE)) &&
            conf_warn(b, line,
                      "Response: templateType without template; "
                      "ignored") != 0) {
            return SUSPECT_E_NOMEM;
        }
        c->template_type = NULL;
        return SUSPECT_OK;
    }
    if (c->format == SUSPECT_FORMAT_JSON &&
        conf_warn(b, line,
                  "Response: format json never uses the template "
                  "(it replaces the HTML page)") != 0) {
        return SUSPECT_E_NOMEM;
    }
    return conf_read_template(b, line);
}

static const conf_elem_t response_elem = {
    "Response",   response_attrs,     NULL,       NULL,
    response_end, OFF(response_line), CONF_SINGLE};

/* ---- <Control>, <Metrics> ------------------------------------------------
 */

/* Longest unix socket path (sun_path less its NUL). */
#define SOCKET_PATH_MAX 107

static const conf_text_t group_text = {
    32,
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.",
    0,
    0,
    NULL,
    NULL,
    "must be a group name (letters, digits, '_', '-', '.')"};

static const conf_attr_t control_attrs[] = {
    {"enabled", conf_set_bool, OFF(control_on), NULL, 0},
    {"socket", conf_set_file, OFF(control_path), NULL, 0},
    {"mode", conf_set_num, OFF(control_mode), &mode_range, 0},
    {"group", conf_set_text, OFF(control_group), &group_text, 0},
    {NULL, NULL, 0, NULL, 0}};

/* The socket path must fit a sockaddr_un. */
static suspect_rc_t control_end(conf_build_t *b, void *obj, uint32_t seen,
                                int line)
{
    const suspect_conf_t *c = obj;

    (void)seen;
    if (c->control_path != NULL && strlen(c->control_path) > SOCKET_PATH_MAX) {
        return conf_fail(
            b, line, "Control: socket path longer than %d bytes: '%.40s...'",
            SOCKET_PATH_MAX, c->control_path);
    }
    return SUSPECT_OK;
}

static const conf_elem_t control_elem = {
    "Control",   control_attrs,     NULL,       NULL,
    control_end, OFF(control_line), CONF_SINGLE};

static const conf_attr_t metrics_attrs[] = {
    {"listen", conf_set_endpoint, OFF(metrics_listen), NULL, CONF_REQUIRED},
    {NULL, NULL, 0, NULL, 0}};

/* Prometheus scrapes over TCP. */
static suspect_rc_t metrics_end(conf_build_t *b, void *obj, uint32_t seen,
                                int line)
{
    const suspect_conf_t *c = obj;

    (void)seen;
    if (c->metrics_listen != NULL && strncmp(c->metrics_listen, "tcp:", 4)) {
        return conf_fail(b, line,
                         "Metrics: listen must be tcp:host:port (Prometheus "
                         "scrapes over TCP), not '%s'",
                         c->metrics_listen);
    }
    return SUSPECT_OK;
}

static const conf_elem_t metrics_elem = {
    "Metrics",   metrics_attrs,     NULL,       NULL,
    metrics_end, OFF(metrics_line), CONF_SINGLE};

/* ---- <Suspect> -------------------------------------------------------------
 */

/* Makes room for the routes: no more than the root's child elements. */
static suspect_rc_t root_begin(conf_build_t *b, int line, size_t nchildren,
                               void **obj)
{
    size_t cap = nchildren < SUSPECT_CONF_MAX_ROUTES ? nchildren
                                                     : SUSPECT_CONF_MAX_ROUTES;

    (void)obj;
    b->root_line = line;
    if (cap > 0) {
        b->routes = conf_alloc(b, cap * sizeof(*b->routes));
        if (b->routes == NULL) {
            return conf_nomem(b, line);
        }
    }
    b->routes_cap = cap;
    b->conf->routes = b->routes;
    return SUSPECT_OK;
}

/* Cgi or Upstream, as the mode wants. */
static suspect_rc_t check_target(conf_build_t *b, int line)
{
    suspect_conf_t *c = b->conf;

    if (c->mode != SUSPECT_MODE_FORWARD) {
        const char *mode = conf_mode_name(c->mode);

        if (c->has_cgi &&
            conf_warn(b, c->cgi_line, "Cgi: ignored in %s mode", mode) != 0) {
            return SUSPECT_E_NOMEM;
        }
        if (c->has_upstream &&
            conf_warn(b, c->upstream_line, "Upstream: ignored in %s mode",
                      mode) != 0) {
            return SUSPECT_E_NOMEM;
        }
        c->has_cgi = c->has_upstream = false;
        return SUSPECT_OK;
    }
    if (c->has_cgi && c->has_upstream) {
        return conf_fail(
            b, c->cgi_line > c->upstream_line ? c->cgi_line : c->upstream_line,
            "Cgi and Upstream exclude each other: give one");
    }
    if (!c->has_cgi && !c->has_upstream) {
        return conf_fail(b, c->server_line > 0 ? c->server_line : line,
                         "mode forward needs <Cgi> or <Upstream> (or use "
                         "mode=\"authorizer\" or \"auth-request\")");
    }
    return SUSPECT_OK;
}

/* The checks that need the whole file. */
static suspect_rc_t root_end(conf_build_t *b, void *obj, uint32_t seen,
                             int line)
{
    suspect_rc_t rc;

    (void)obj;
    (void)seen;
    if (b->conf->limits_line == 0) {
        return conf_fail(b, line,
                         "Suspect: <Limits path=\"...\"/> is "
                         "required");
    }
    rc = check_target(b, line);
    if (rc == SUSPECT_OK) {
        rc = keys_check(b);
    }
    if (rc == SUSPECT_OK) {
        rc = conf_routes_check(b);
    }
    if (rc == SUSPECT_OK) {
        rc = conf_outcomes_check(b);
    }
    if (rc == SUSPECT_OK) {
        rc = conf_challenges_check(b);
    }
    if (rc == SUSPECT_OK) {
        rc = conf_actions_apply(b);
    }
    if (rc == SUSPECT_OK && b->conf->nroutes == 0) {
        rc = conf_warn(b, line, "no <Route>: no request is counted");
    }
    return rc;
}

static const conf_elem_t *const root_children[] = {&server_elem,
                                                   &limits_elem,
                                                   &store_elem,
                                                   &keys_elem,
                                                   &cgi_elem,
                                                   &upstream_elem,
                                                   &client_ip_elem,
                                                   &response_elem,
                                                   &control_elem,
                                                   &metrics_elem,
                                                   &conf_log_elem,
                                                   &conf_route_elem,
                                                   &conf_action_elem,
                                                   &conf_allow_elem,
                                                   &conf_deny_elem,
                                                   &conf_device_elem,
                                                   &conf_challenge_elem,
                                                   NULL};

static const conf_attr_t no_attrs[] = {{NULL, NULL, 0, NULL, 0}};

const conf_elem_t conf_root = {
    "Suspect", no_attrs, root_children, root_begin, root_end, 0, 0};
