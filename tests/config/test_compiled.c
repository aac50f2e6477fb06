/*
 * test_compiled.c - suite "suspect-cgi", part three: the compiled
 * configuration (config/compiled/compiled.h) in process.
 *
 * Round trips: two suspect.xml files that between them set every field
 * (one with <Cgi>, lmdb, a template and allow and deny lists with their
 * files, one with <Upstream>, redis, <ClientIp> and lists in attributes) are
 * loaded from real files, encoded and decoded, and every field of the result is
 * compared with the parsed original, routes, identities, sources, rules and
 * lines included.  Damage: every truncation, every flipped byte, a wrong
 * version, producer or length, trailing bytes, and every byte of the payload
 * overwritten with the checksum made to match (so the structural checks, not
 * the checksum, must hold) are refused or decode to something sound, never
 * crash (the sanitizers watch).  Files: trust (mode, links, FIFOs), staleness
 * on each kind of edit of each source (list files included) (one that keeps
 * size and mtime included), the racy window, atomic writes.
 *
 * Length.  About 820 lines: a third of it compares every field of a
 * configuration, field by field, which the round trips, the damage tests
 * and the packed lists all use on the same two fixtures; split, each part
 * would need that comparison again.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compiled/compiled_internal.h"
#include "conf/conf_internal.h"
#include "guard/guard_internal.h"
#include "cgi-wrapper/cgirun.h"
#include "helpers/e2e.h"
#include "helpers/util.h"

/* Every field away from its default, <Cgi root>, lmdb, a template. */
static const char conf_a[] =
    "<Suspect>\n"
    "  <Server listen=\"tcp:127.0.0.1:9001\" socketMode=\"0640\" workers=\"7\""
    " ioTimeout=\"12.5\" formMax=\"32K\" paramsMax=\"64K\"/>\n"
    "  <Limits path=\"limits.xml\" reload=\"3\"/>\n"
    "  <Store type=\"lmdb\" path=\"db/x.lmdb\" mapSize=\"2M\" noSync=\"true\""
    " maxEntries=\"1234\" failMode=\"closed\"/>\n"
    "  <Keys format=\"typed\" prefix=\"app1:\"/>\n"
    "  <Cgi root=\"/srv/cgi\" timeout=\"9\" passEnv=\"SSL_* GEO\"/>\n"
    "  <ClientIp trustedProxies=\"10.0.0.0/8, 192.168.1.1\""
    " header=\"forwarded\" ipv4Prefix=\"24\" ipv6Prefix=\"56\"/>\n"
    "  <Response format=\"html\" template=\"page.html\""
    " templateType=\"text/html; charset=iso-8859-1\"/>\n"
    "  <Control socket=\"run/ctl.sock\" mode=\"0600\" group=\"ops\"/>\n"
    "  <Metrics listen=\"tcp:127.0.0.1:9464\"/>\n"
    "  <Log decisions=\"all\" path=\"decisions.log\""
    " identityKey=\"0123456789abcdefXYZ\" requestUri=\"full\"/>\n"
    "  <Route action=\"Login\" method=\"post put\" path=\"/login\""
    " param=\"op=in\" paramIn=\"form\" missing=\"reject\" status=\"403\">\n"
    "    <Identity type=\"Member\" from=\"form:member cookie:sid\"/>\n"
    "    <Identity type=\"Ip\" from=\"client-ip\"/>\n"
    "    <Deny identity=\"Member=evil Ip=x\"/>\n"
    "    <Allow file=\"allow.txt\"/>\n"
    "  </Route>\n"
    "  <Allow ip=\"10.0.0.0/8 2001:db8::/32\" identity=\"Member=mon\"/>\n"
    "  <Deny file=\"deny.txt\" status=\"451\"/>\n"
    "  <Route action=\"Api\" prefix=\"/api/\" param=\"key\" "
    "missing=\"allow\" cost=\"3\">\n"
    "    <Identity type=\"User\" from=\"env:REMOTE_USER\"/>\n"
    "    <Identity type=\"Key\" from=\"query:k header:X-Key\"/>\n"
    "  </Route>\n"
    "</Suspect>\n";

/* The rest: <Upstream>, redis. */
static const char conf_b[] =
    "<Suspect>\n"
    "  <Limits path=\"@DIR@/limits.xml\"/>\n"
    "  <Store type=\"redis\" url=\"redis://u:p@127.0.0.1:6390/2\""
    " timeoutMs=\"70\" clock=\"server\" failMode=\"open\"/>\n"
    "  <Upstream address=\"unix:/run/php.sock\" scriptFilename=\"/srv/i.php\""
    " timeout=\"8\" connectTimeout=\"0.5\" maxIdle=\"3\""
    " passParams=\"PHP_VALUE APP_*\"/>\n"
    "  <ClientIp header=\"x-forwarded-for\" trustedProxies=\"::1\"/>\n"
    "  <Response format=\"json\"/>\n"
    "  <Control enabled=\"no\"/>\n"
    "  <Log decisions=\"denials\"/>\n"
    "  <Route action=\"Login\" path=\"/x\">\n"
    "    <Identity type=\"Member\" from=\"header:X-M\"/>\n"
    "    <Allow identity=\"Member=m\"/>\n"
    "  </Route>\n"
    "  <Deny ip=\"192.0.2.0/24\" status=\"403\"/>\n"
    "</Suspect>\n";

static const char limits_xml[] =
    "<ArrayOfSuspectUsageSettingEntity>\n"
    "  <SuspectUsageSettingEntity Action=\"Login\" LimitCount=\"3\""
    " LimitDuration=\"60\" BlockDuration=\"600\" />\n"
    "\n"
    "  <SuspectUsageSettingEntity Action=\"Api\" LimitCount=\"100\""
    " LimitDuration=\"1\" Algorithm=\"TokenBucket\" Burst=\"300\" />\n"
    "</ArrayOfSuspectUsageSettingEntity>\n";

/* Writes the fixture with suspect.xml text (@DIR@: the directory); 0 or
 * -1. */
static int write_fixture(const char *text)
{
    char at[TEST_PATH_MAX];
    static const char page[] = "<p>{action}: {retry_after}</p>\n";
    static const char deny[] = "# bad networks\n192.0.2.0/24\nMember=mallory\n";
    static const char allow[] = "Member=office\n";
    const char *pairs[] = {"@DIR@", e2e.dir, NULL};
    char *conf = test_subst(text, pairs);
    int rc = conf == NULL ||
             test_write_file(e2e_path(at, "suspect.xml"), conf, strlen(conf)) ||
             test_write_file(e2e_path(at, "limits.xml"), limits_xml,
                             strlen(limits_xml)) ||
             test_write_file(e2e_path(at, "page.html"), page, strlen(page)) ||
             test_write_file(e2e_path(at, "deny.txt"), deny, strlen(deny)) ||
             test_write_file(e2e_path(at, "allow.txt"), allow, strlen(allow));

    free(conf);
    return rc ? -1 : 0;
}

static bool str_eq(const char *a, const char *b)
{
    return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static void identity_equal(const suspect_conf_identity_t *a,
                           const suspect_conf_identity_t *b)
{
    CU_ASSERT(str_eq(a->type, b->type));
    CU_ASSERT_EQUAL(a->line, b->line);
    CU_ASSERT_EQUAL_FATAL(a->nsources, b->nsources);
    for (size_t i = 0; i < a->nsources; i++) {
        CU_ASSERT_EQUAL(a->source[i].kind, b->source[i].kind);
        CU_ASSERT(str_eq(a->source[i].name, b->source[i].name));
    }
}

/* An <Allow> or <Deny>, the list file's text and identity included. */
static void list_equal(const suspect_conf_list_t *a,
                       const suspect_conf_list_t *b)
{
    CU_ASSERT_FATAL((a == NULL) == (b == NULL));
    if (a == NULL) {
        return;
    }
    CU_ASSERT(str_eq(a->ip, b->ip));
    CU_ASSERT(str_eq(a->identity, b->identity));
    CU_ASSERT(str_eq(a->file, b->file));
    CU_ASSERT_EQUAL_FATAL(a->file_len, b->file_len);
    CU_ASSERT(a->file_text == b->file_text ||
              memcmp(a->file_text, b->file_text, a->file_len + 1) == 0);
    CU_ASSERT_EQUAL(memcmp(a->file_id, b->file_id, sizeof(a->file_id)), 0);
    CU_ASSERT_EQUAL(a->status, b->status);
    CU_ASSERT_EQUAL(a->line, b->line);
}

static void route_equal(const suspect_conf_route_t *a,
                        const suspect_conf_route_t *b)
{
    CU_ASSERT(str_eq(a->action, b->action));
    CU_ASSERT_EQUAL_FATAL(a->nmethods, b->nmethods);
    for (size_t i = 0; i < a->nmethods; i++) {
        CU_ASSERT(str_eq(a->methods[i], b->methods[i]));
    }
    CU_ASSERT(str_eq(a->path, b->path));
    CU_ASSERT_EQUAL(a->prefix, b->prefix);
    CU_ASSERT(str_eq(a->param_name, b->param_name));
    CU_ASSERT(str_eq(a->param_value, b->param_value));
    CU_ASSERT_EQUAL(a->param_in, b->param_in);
    CU_ASSERT_EQUAL_FATAL(a->nidentities, b->nidentities);
    for (size_t i = 0; i < a->nidentities; i++) {
        identity_equal(&a->identities[i], &b->identities[i]);
    }
    CU_ASSERT_EQUAL(a->missing, b->missing);
    CU_ASSERT_EQUAL(a->status, b->status);
    CU_ASSERT_EQUAL(a->line, b->line);
    CU_ASSERT_EQUAL(a->count, b->count);
    CU_ASSERT_EQUAL(a->shadow, b->shadow);
    CU_ASSERT_EQUAL(a->fail_mode, b->fail_mode);
    CU_ASSERT_EQUAL(a->cost, b->cost);
    list_equal(a->allow, b->allow);
    list_equal(a->deny, b->deny);
}

/* Every field of suspect_conf_t, in declaration order. */
static void conf_equal(const suspect_conf_t *a, const suspect_conf_t *b)
{
    CU_ASSERT(str_eq(a->file, b->file));
    CU_ASSERT(str_eq(a->dir, b->dir));
    CU_ASSERT(str_eq(a->listen, b->listen));
    CU_ASSERT_EQUAL(a->socket_mode, b->socket_mode);
    CU_ASSERT_EQUAL(a->workers, b->workers);
    CU_ASSERT_EQUAL(a->mode, b->mode);
    CU_ASSERT_EQUAL(a->io_timeout_ms, b->io_timeout_ms);
    CU_ASSERT_EQUAL(a->form_max, b->form_max);
    CU_ASSERT_EQUAL(a->params_max, b->params_max);
    CU_ASSERT_EQUAL(a->server_line, b->server_line);
    CU_ASSERT(str_eq(a->limits_path, b->limits_path));
    CU_ASSERT_EQUAL(a->reload_ms, b->reload_ms);
    CU_ASSERT_EQUAL(a->limits_line, b->limits_line);
    CU_ASSERT_EQUAL(a->store, b->store);
    CU_ASSERT_EQUAL(a->memory_max_entries, b->memory_max_entries);
    CU_ASSERT(str_eq(a->lmdb_path, b->lmdb_path));
    CU_ASSERT_EQUAL(a->lmdb_map_size, b->lmdb_map_size);
    CU_ASSERT_EQUAL(a->lmdb_no_sync, b->lmdb_no_sync);
    CU_ASSERT(str_eq(a->redis_url, b->redis_url));
    CU_ASSERT_EQUAL(a->redis_timeout_ms, b->redis_timeout_ms);
    CU_ASSERT_EQUAL(a->redis_server_clock, b->redis_server_clock);
    CU_ASSERT_EQUAL(a->fail_mode, b->fail_mode);
    CU_ASSERT_EQUAL(a->store_line, b->store_line);
    CU_ASSERT_EQUAL(a->key_format, b->key_format);
    CU_ASSERT(str_eq(a->key_prefix, b->key_prefix));
    CU_ASSERT_EQUAL(a->key_hash_tag, b->key_hash_tag);
    CU_ASSERT_EQUAL(a->keys_line, b->keys_line);
    CU_ASSERT_EQUAL(a->has_cgi, b->has_cgi);
    CU_ASSERT(str_eq(a->cgi_root, b->cgi_root));
    CU_ASSERT(str_eq(a->cgi_program, b->cgi_program));
    CU_ASSERT_EQUAL(a->cgi_timeout_ms, b->cgi_timeout_ms);
    CU_ASSERT(str_eq(a->cgi_pass_env, b->cgi_pass_env));
    CU_ASSERT_EQUAL(a->cgi_line, b->cgi_line);
    CU_ASSERT_EQUAL(a->has_upstream, b->has_upstream);
    CU_ASSERT(str_eq(a->upstream_address, b->upstream_address));
    CU_ASSERT(str_eq(a->upstream_script, b->upstream_script));
    CU_ASSERT(str_eq(a->upstream_pass_params, b->upstream_pass_params));
    CU_ASSERT_EQUAL(a->upstream_timeout_ms, b->upstream_timeout_ms);
    CU_ASSERT_EQUAL(a->upstream_connect_timeout_ms,
                    b->upstream_connect_timeout_ms);
    CU_ASSERT_EQUAL(a->upstream_max_idle, b->upstream_max_idle);
    CU_ASSERT_EQUAL(a->upstream_line, b->upstream_line);
    CU_ASSERT(str_eq(a->trusted_proxies, b->trusted_proxies));
    CU_ASSERT_EQUAL(a->fwd_header, b->fwd_header);
    CU_ASSERT_EQUAL(a->ipv4_prefix, b->ipv4_prefix);
    CU_ASSERT_EQUAL(a->ipv6_prefix, b->ipv6_prefix);
    CU_ASSERT_EQUAL(a->client_ip_line, b->client_ip_line);
    CU_ASSERT_EQUAL(a->format, b->format);
    CU_ASSERT(str_eq(a->template_path, b->template_path));
    CU_ASSERT_EQUAL_FATAL(a->template_len, b->template_len);
    CU_ASSERT(a->template_body == b->template_body ||
              memcmp(a->template_body, b->template_body, a->template_len) == 0);
    CU_ASSERT(str_eq(a->template_type, b->template_type));
    CU_ASSERT_EQUAL(a->response_line, b->response_line);
    CU_ASSERT_EQUAL_FATAL(a->nroutes, b->nroutes);
    for (size_t i = 0; i < a->nroutes; i++) {
        route_equal(&a->routes[i], &b->routes[i]);
    }
    list_equal(a->allow, b->allow);
    list_equal(a->deny, b->deny);
}

static void limits_equal(const suspect_limits_t *a, const suspect_limits_t *b)
{
    CU_ASSERT_EQUAL_FATAL(suspect_limits_count(a), suspect_limits_count(b));
    for (size_t i = 0; i < suspect_limits_count(a); i++) {
        const suspect_rule_t *x = suspect_limits_at(a, i);
        const suspect_rule_t *y = suspect_limits_at(b, i);

        CU_ASSERT(str_eq(x->action, y->action));
        CU_ASSERT_EQUAL(x->limit_count, y->limit_count);
        CU_ASSERT_EQUAL(x->window_s, y->window_s);
        CU_ASSERT_EQUAL(x->block_s, y->block_s);
        CU_ASSERT_EQUAL(x->algorithm, y->algorithm);
        CU_ASSERT_EQUAL(x->burst, y->burst);
        CU_ASSERT_EQUAL(suspect_limits_line(a, i), suspect_limits_line(b, i));
        CU_ASSERT_PTR_EQUAL(suspect_limits_find(b, y->action), y);
    }
}

/* Loads the fixture written with text into *s; fatal on failure. */
static void load(const char *text, compiled_t *s)
{
    char at[TEST_PATH_MAX];
    suspect_err_t err;

    suspect_err_clear(&err);
    CU_ASSERT_FATAL(write_fixture(text) == 0);
    if (compiled_load(e2e_path(at, "suspect.xml"), s, &err) != SUSPECT_OK) {
        fprintf(stderr, "compiled_load: %s: %s\n", err.file, err.text);
        CU_FAIL_FATAL("the fixture does not load");
    }
}

/* Encodes s; fatal on failure. */
static unsigned char *encode(const compiled_t *s, size_t *len)
{
    unsigned char *buf = NULL;

    CU_ASSERT_FATAL(compiled_encode(s, &buf, len, NULL) == SUSPECT_OK);
    return buf;
}

static void round_trip(const char *text)
{
    compiled_t s, back;
    unsigned char *buf, *again;
    size_t len, len2;

    load(text, &s);
    buf = encode(&s, &len);
    CU_ASSERT_FATAL(compiled_decode(buf, len, "x", &back, NULL) == SUSPECT_OK);
    conf_equal(s.conf, back.conf);
    limits_equal(s.limits, back.limits);
    CU_ASSERT_STRING_EQUAL(back.conf_path, s.conf_path);
    CU_ASSERT_EQUAL(memcmp(back.id, s.id, sizeof(s.id)), 0);
    again = encode(&back, &len2);
    CU_ASSERT(len2 == len && memcmp(again, buf, len) == 0);
    free(again);
    free(buf);
    compiled_clear(&back);
    compiled_clear(&s);
}

/* Both files, every field; the fixture really is away from defaults. */
static void test_round_trip(void)
{
    compiled_t s;

    round_trip(conf_a);
    round_trip(conf_b);
    load(conf_a, &s);
    CU_ASSERT(s.conf->template_body != NULL && s.conf->nroutes == 2 &&
              s.conf->routes[0].nidentities == 2 &&
              s.conf->routes[0].identities[0].nsources == 2 &&
              s.conf->routes[0].nmethods == 2 && s.conf->lmdb_no_sync &&
              s.conf->key_prefix != NULL && s.conf->trusted_proxies != NULL &&
              s.conf->cgi_pass_env != NULL && s.conf->allow != NULL &&
              s.conf->deny != NULL && s.conf->deny->file_text != NULL &&
              s.conf->deny->status == 451 && s.conf->routes[0].deny != NULL &&
              s.conf->routes[0].allow->file_text != NULL &&
              s.conf->routes[1].cost == 3);
    CU_ASSERT(suspect_limits_find(s.limits, "Api") != NULL &&
              suspect_limits_find(s.limits, "Api")->algorithm ==
                  SUSPECT_ALGO_BUCKET &&
              suspect_limits_find(s.limits, "Api")->burst == 300);
    CU_ASSERT(s.id[COMPILED_SRC_TEMPLATE].ino != 0);
    compiled_clear(&s);
}

/* Whether guards a and b list the same addresses and values. */
static bool same_lookups(const mw_guard_t *a, const mw_guard_t *b)
{
    static const char *const addrs[] = {
        "10.1.2.3",  "10.255.0.1",  "11.0.0.1",    "192.0.2.77",
        "192.0.3.1", "2001:db8::1", "2001:db9::1", NULL};
    static const char *const values[] = {"mon", "mallory", "office", "evil",
                                         "x",   "monitor", NULL};
    bool same = true;

    for (size_t i = 0; addrs[i] != NULL; i++) {
        mw_addr_t ad;

        CU_ASSERT_FATAL(mw_addr_parse(addrs[i], strlen(addrs[i]), &ad) ==
                        SUSPECT_OK);
        same &=
            guard_list_addr(a->allow, &ad) == guard_list_addr(b->allow, &ad);
        same &= guard_list_addr(a->deny, &ad) == guard_list_addr(b->deny, &ad);
    }
    for (size_t i = 0; values[i] != NULL; i++) {
        suspect_identity_t id = test_identity("Member", values[i]);

        same &= guard_list_identity(a->allow, &id) ==
                guard_list_identity(b->allow, &id);
        same &= guard_list_identity(a->deny, &id) ==
                guard_list_identity(b->deny, &id);
        same &= guard_list_identity(a->routes[0].allow, &id) ==
                guard_list_identity(b->routes[0].allow, &id);
        same &= guard_list_identity(a->routes[0].deny, &id) ==
                guard_list_identity(b->routes[0].deny, &id);
    }
    return same;
}

/* The lists packed as suspect-cgi-compile saves them: no text, a pack
 * that decodes, encodes back to the same bytes, and decides every lookup
 * as the lists compiled from the XML. */
static void test_packed_lists(void)
{
    mw_guard_t *g = NULL, *g2 = NULL;
    unsigned char *buf, *again;
    size_t len, len2;
    compiled_t s, back;
    mw_addr_t ad;
    suspect_identity_t mallory = test_identity("Member", "mallory");

    load(conf_a, &s);
    CU_ASSERT_FATAL(mw_guard_new(s.conf, &g, NULL) == SUSPECT_OK);
    CU_ASSERT_FATAL(mw_guard_pack_lists(g, &s, NULL) == SUSPECT_OK);
    CU_ASSERT_EQUAL(s.npacked, 2 + 2 * s.conf->nroutes);
    buf = encode(&s, &len);
    CU_ASSERT_FATAL(compiled_decode(buf, len, "x", &back, NULL) == SUSPECT_OK);
    CU_ASSERT(back.conf->deny->packed != NULL &&
              back.conf->deny->file_text == NULL &&
              back.conf->allow->packed != NULL &&
              back.conf->routes[0].allow->packed != NULL &&
              back.conf->routes[1].allow == NULL);
    again = encode(&back, &len2);
    CU_ASSERT(len2 == len && memcmp(again, buf, len) == 0);
    CU_ASSERT_FATAL(mw_guard_new(back.conf, &g2, NULL) == SUSPECT_OK);
    CU_ASSERT(same_lookups(g, g2));
    CU_ASSERT_FATAL(mw_addr_parse("192.0.2.9", 9, &ad) == SUSPECT_OK);
    CU_ASSERT(guard_list_addr(g2->deny, &ad));
    CU_ASSERT(guard_list_identity(g2->deny, &mallory));
    mw_guard_unref(g2);
    mw_guard_unref(g);
    free(again);
    free(buf);
    compiled_clear(&back);
    compiled_clear(&s);
}

/* Read from its file, a pack is not copied: it lies in the mapping the
 * snapshot holds, which lives as long as the snapshot, whoever holds it
 * last (here a guard, after the compiled configuration is cleared). */
static void test_packed_mapped(void)
{
    mw_guard_t *g = NULL;
    compiled_t s, back;
    const conf_snap_t *snap;
    const unsigned char *map, *pack;
    char path[TEST_PATH_MAX];
    mw_addr_t ad, other;
    suspect_identity_t mallory = test_identity("Member", "mallory");

    load(conf_a, &s);
    CU_ASSERT_FATAL(mw_guard_new(s.conf, &g, NULL) == SUSPECT_OK);
    CU_ASSERT_FATAL(mw_guard_pack_lists(g, &s, NULL) == SUSPECT_OK);
    mw_guard_unref(g);
    e2e_path(path, "packed.snap");
    CU_ASSERT_FATAL(compiled_write(path, &s, NULL) == SUSPECT_OK);
    compiled_clear(&s);
    CU_ASSERT_FATAL(compiled_read(path, &back, NULL) == SUSPECT_OK);
    snap = (const conf_snap_t *)back.conf;
    map = snap->map;
    pack = back.conf->deny->packed;
    CU_ASSERT_FATAL(map != NULL && pack != NULL);
    CU_ASSERT(pack > map &&
              pack + back.conf->deny->packed_len <= map + snap->map_len);
    CU_ASSERT_FATAL(mw_guard_new(back.conf, &g, NULL) == SUSPECT_OK);
    compiled_clear(&back);
    CU_ASSERT_FATAL(mw_addr_parse("192.0.2.9", 9, &ad) == SUSPECT_OK);
    CU_ASSERT_FATAL(mw_addr_parse("198.51.100.9", 12, &other) == SUSPECT_OK);
    CU_ASSERT(guard_list_addr(g->deny, &ad));
    CU_ASSERT(!guard_list_addr(g->deny, &other));
    CU_ASSERT(guard_list_identity(g->deny, &mallory));
    mw_guard_unref(g);
}

/* A pack of two ranges [a, a+1] and [b, b+1] (b a 16-byte number whose
 * last byte is set to bl) and the values v1, v2, then extra bytes;
 * whether compiled_pack_check() takes it. */
static bool pack_ok(unsigned char al, unsigned char ah, unsigned char bl,
                    unsigned char bh, const char *v1, const char *v2,
                    size_t extra)
{
    unsigned char buf[256] = {0}, *p;
    compiled_pack_view_t v;

    p = compiled_pack_ranges(buf, 2);
    p[15] = al;
    p[31] = ah;
    p[47] = bl;
    p[63] = bh;
    p = compiled_pack_ids(p + 64, 2);
    p = compiled_pack_id(p, v1, strlen(v1));
    p = compiled_pack_id(p, v2, strlen(v2));
    return compiled_pack_check(buf, (size_t)(p - buf) + extra, &v) &&
           v.nranges == 2 && v.nids == 2;
}

/* What a pack must be: ranges ordered, apart, lo <= hi; values valid and
 * ordered; nothing after. */
static void test_pack_rules(void)
{
    CU_ASSERT(pack_ok(1, 2, 4, 9, "User=a", "User=b", 0));
    CU_ASSERT(pack_ok(1, 2, 4, 9, "User=a", "User=a", 0)); /* equal */
    CU_ASSERT(pack_ok(1, 2, 4, 9, "User=a", "User=ab", 0));
    CU_ASSERT(!pack_ok(1, 2, 3, 9, "User=a", "User=b", 0)); /* touch */
    CU_ASSERT(!pack_ok(1, 5, 4, 9, "User=a", "User=b", 0)); /* overlap */
    CU_ASSERT(!pack_ok(4, 9, 1, 2, "User=a", "User=b", 0)); /* order */
    CU_ASSERT(!pack_ok(2, 1, 4, 9, "User=a", "User=b", 0)); /* lo > hi */
    CU_ASSERT(!pack_ok(1, 2, 4, 9, "User=b", "User=a", 0));
    CU_ASSERT(!pack_ok(1, 2, 4, 9, "User=ab", "User=a", 0));
    CU_ASSERT(!pack_ok(1, 2, 4, 9, "User=", "User=a", 0));  /* no value */
    CU_ASSERT(!pack_ok(1, 2, 4, 9, "9x=a", "User=a", 0));   /* bad type */
    CU_ASSERT(!pack_ok(1, 2, 4, 9, "Usera", "User=a", 0));  /* no '=' */
    CU_ASSERT(!pack_ok(1, 2, 4, 9, "User=a", "User=b", 1)); /* trailing */
}

/* Recomputes the checksum of buf after an edit of its payload. */
static void resum(unsigned char *buf, size_t len)
{
    uint64_t sum[2];

    for (int i = 0; i < 8; i++) {
        buf[16 + i] = (unsigned char)((len - COMPILED_HEADER) >> (8 * i));
    }
    compiled_sum(buf + COMPILED_HEADER, len - COMPILED_HEADER, sum);
    for (int i = 0; i < 8; i++) {
        buf[24 + i] = (unsigned char)(sum[0] >> (8 * i));
        buf[32 + i] = (unsigned char)(sum[1] >> (8 * i));
    }
}

/* Whether the len bytes at buf are refused (and nothing is left). */
static bool refused(const unsigned char *buf, size_t len)
{
    compiled_t out;
    suspect_err_t err;
    suspect_rc_t rc;

    suspect_err_clear(&err);
    rc = compiled_decode(buf, len, "x", &out, &err);
    if (rc == SUSPECT_OK) {
        compiled_clear(&out);
        return false;
    }
    return rc == SUSPECT_E_PARSE && out.conf == NULL && out.limits == NULL &&
           out.conf_path == NULL && strcmp(err.file, "x") == 0;
}

/* Truncations, flipped bytes, bad header fields, trailing bytes. */
static void test_damage(void)
{
    unsigned char *buf, *copy;
    size_t len, bad = 0, flips = 0;
    compiled_t s;

    load(conf_a, &s);
    buf = encode(&s, &len);
    copy = malloc(len + 1);
    for (size_t n = 0; n < len; n++) {
        bad += !refused(buf, n);
    }
    CU_ASSERT_EQUAL(bad, 0);
    for (size_t i = 0; i < len; i++) {
        memcpy(copy, buf, len);
        copy[i] ^= 0x20;
        flips += refused(copy, len);
    }
    CU_ASSERT_EQUAL(flips, len);
    memcpy(copy, buf, len);
    copy[8] = COMPILED_VERSION + 1; /* version */
    CU_ASSERT(refused(copy, len));
    memcpy(copy, buf, len);
    copy[len] = 0; /* a byte after the payload, length and sum updated */
    resum(copy, len + 1);
    CU_ASSERT(refused(copy, len + 1));
    memcpy(copy, buf, len);
    copy[COMPILED_HEADER + 4] ^= 1; /* the producer's first byte */
    resum(copy, len);
    CU_ASSERT(refused(copy, len));
    free(copy);
    free(buf);
    compiled_clear(&s);
}

/* Whether the len bytes at buf are refused, or decode to what encodes
 * back to exactly them (nothing is lost or made up on the way). */
static bool refused_or_faithful(const unsigned char *buf, size_t len,
                                size_t *refusals)
{
    unsigned char *again = NULL;
    size_t len2 = 0;
    compiled_t out;
    bool ok;

    if (compiled_decode(buf, len, "x", &out, NULL) != SUSPECT_OK) {
        ++*refusals;
        return out.conf == NULL && out.limits == NULL && out.conf_path == NULL;
    }
    ok = compiled_encode(&out, &again, &len2, NULL) == SUSPECT_OK &&
         len2 == len && memcmp(again, buf, len) == 0;
    free(again);
    compiled_clear(&out);
    return ok;
}

/* Every payload byte overwritten and the checksum fixed: the structure
 * alone must keep the decoder sound: each result is refused whole or is
 * exactly what the bytes say (and nothing crashes). */
static void test_structure(void)
{
    static const unsigned char values[] = {0x00, 0xff, 0x7f, 0x09};
    unsigned char *buf, *copy;
    size_t len, refusals = 0, unsound = 0;
    compiled_t s;

    load(conf_b, &s);
    buf = encode(&s, &len);
    copy = malloc(len);
    for (size_t i = COMPILED_HEADER; i < len; i++) {
        for (size_t v = 0; v < sizeof(values); v++) {
            if (buf[i] == values[v]) {
                continue;
            }
            memcpy(copy, buf, len);
            copy[i] = values[v];
            resum(copy, len);
            unsound += !refused_or_faithful(copy, len, &refusals);
        }
    }
    CU_ASSERT_EQUAL(unsound, 0);
    CU_ASSERT(refusals > len);
    free(copy);
    free(buf);
    compiled_clear(&s);
}

/* Writing, reading back, and what is not trusted. */
static void test_files(void)
{
    char at[TEST_PATH_MAX];
    compiled_t s, back;
    suspect_err_t err;
    char path[1024], tmp[1024];

    load(conf_a, &s);
    e2e_path(path, "c.snap");
    CU_ASSERT_FATAL(compiled_write(path, &s, NULL) == SUSPECT_OK);
    CU_ASSERT_FATAL(compiled_read(path, &back, NULL) == SUSPECT_OK);
    conf_equal(s.conf, back.conf);
    compiled_clear(&back);
    CU_ASSERT_EQUAL(chmod(path, 0620), 0);
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(compiled_read(path, &back, &err), SUSPECT_E_CONFIG);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "writable by others"));
    CU_ASSERT_EQUAL(chmod(path, 0600), 0);
    CU_ASSERT_EQUAL(symlink(path, e2e_path(at, "link.snap")), 0);
    CU_ASSERT_EQUAL(compiled_read(e2e_path(at, "link.snap"), &back, NULL),
                    SUSPECT_E_IO);
    CU_ASSERT_EQUAL(mkfifo(e2e_path(at, "fifo.snap"), 0600), 0);
    CU_ASSERT_EQUAL(compiled_read(e2e_path(at, "fifo.snap"), &back, &err),
                    SUSPECT_E_CONFIG);
    CU_ASSERT_EQUAL(compiled_read(e2e_path(at, "none.snap"), &back, NULL),
                    SUSPECT_E_NOTFOUND);
    CU_ASSERT_PTR_NULL(back.conf);
    /* Mapped, not read: an empty file and one cut short are refused, and
     * a file replaced (as compiled_write() replaces it) is read anew. */
    CU_ASSERT_EQUAL(truncate(path, 0), 0);
    CU_ASSERT_EQUAL(compiled_read(path, &back, NULL), SUSPECT_E_PARSE);
    CU_ASSERT_PTR_NULL(back.conf);
    CU_ASSERT_FATAL(compiled_write(path, &s, NULL) == SUSPECT_OK);
    CU_ASSERT_EQUAL(truncate(path, 100), 0);
    CU_ASSERT_EQUAL(compiled_read(path, &back, NULL), SUSPECT_E_PARSE);
    CU_ASSERT_PTR_NULL(back.conf);
    CU_ASSERT_FATAL(compiled_write(path, &s, NULL) == SUSPECT_OK);
    CU_ASSERT_FATAL(compiled_read(path, &back, NULL) == SUSPECT_OK);
    conf_equal(s.conf, back.conf);
    compiled_clear(&back);
    /* A directory that does not exist: an error, and nothing left. */
    e2e_path(tmp, "none/c.snap");
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(compiled_write(tmp, &s, &err), SUSPECT_E_IO);
    CU_ASSERT_EQUAL(err.sys_errno, ENOENT);
    compiled_clear(&s);
}

/* Sets the mtime of path to ns (the ctime moves on: the kernel's). */
static void set_mtime(const char *path, int64_t ns)
{
    struct timespec ts[2] = {{0, UTIME_OMIT},
                             {ns / 1000000000, ns % 1000000000}};

    CU_ASSERT_EQUAL(utimensat(AT_FDCWD, path, ts, 0), 0);
}

/* Whether a fresh load is still fresh after edit() (false = stale). */
static bool fresh_after(void (*edit)(const compiled_t *s))
{
    char at[TEST_PATH_MAX];
    char abs[1024];
    compiled_t s;
    bool fresh;

    load(conf_a, &s);
    CU_ASSERT_FATAL(
        compiled_abs_path(e2e_path(at, "suspect.xml"), abs, sizeof(abs)) == 0);
    CU_ASSERT_FATAL(compiled_fresh(&s, abs));
    edit(&s);
    fresh = compiled_fresh(&s, abs);
    compiled_clear(&s);
    return fresh;
}

/* suspect.xml rewritten in place: same size, same inode, mtime put back:
 * only the ctime tells. */
static void edit_conf_same(const compiled_t *s)
{
    char at[TEST_PATH_MAX];
    char *text = strdup(conf_a);

    text[strlen(text) - 3] = 'X'; /* "</Suspect>" -> "</SuspecX>" */
    CU_ASSERT(
        test_write_file(e2e_path(at, "suspect.xml"), text, strlen(text)) == 0);
    set_mtime(e2e_path(at, "suspect.xml"), s->id[COMPILED_SRC_CONF].mtime_ns);
    free(text);
}

/* The limits file replaced by rename, same bytes, mtime put back. */
static void edit_limits_rename(const compiled_t *s)
{
    char at[TEST_PATH_MAX], to[TEST_PATH_MAX];
    CU_ASSERT(test_write_file(e2e_path(at, "l.new"), limits_xml,
                              strlen(limits_xml)) == 0);
    set_mtime(e2e_path(at, "l.new"), s->id[COMPILED_SRC_LIMITS].mtime_ns);
    CU_ASSERT_EQUAL(rename(e2e_path(at, "l.new"), e2e_path(to, "limits.xml")),
                    0);
}

static void edit_template_grow(const compiled_t *s)
{
    char at[TEST_PATH_MAX];
    (void)s;
    CU_ASSERT(test_write_file(e2e_path(at, "page.html"), "<p>x</p>\n\n", 10) ==
              0);
}

static void edit_template_gone(const compiled_t *s)
{
    char at[TEST_PATH_MAX];
    (void)s;
    CU_ASSERT_EQUAL(unlink(e2e_path(at, "page.html")), 0);
}

/* The deny list file rewritten in place, same size, mtime put back. */
static void edit_list_same(const compiled_t *s)
{
    static const char deny[] = "# bad networks\n192.0.2.0/24\nMember=mallorY\n";
    char at[TEST_PATH_MAX];

    CU_ASSERT(test_write_file(e2e_path(at, "deny.txt"), deny, strlen(deny)) ==
              0);
    set_mtime(e2e_path(at, "deny.txt"), (int64_t)s->conf->deny->file_id[3]);
}

/* A route's allow list file gone. */
static void edit_list_gone(const compiled_t *s)
{
    char at[TEST_PATH_MAX];
    (void)s;
    CU_ASSERT_EQUAL(unlink(e2e_path(at, "allow.txt")), 0);
}

static void edit_nothing(const compiled_t *s)
{
    (void)s;
}

static void test_stale(void)
{
    char at[TEST_PATH_MAX];
    char abs[1024];
    compiled_t s;

    CU_ASSERT(fresh_after(edit_nothing));
    CU_ASSERT(!fresh_after(edit_conf_same));
    CU_ASSERT(!fresh_after(edit_limits_rename));
    CU_ASSERT(!fresh_after(edit_template_grow));
    CU_ASSERT(!fresh_after(edit_template_gone));
    CU_ASSERT(!fresh_after(edit_list_same));
    CU_ASSERT(!fresh_after(edit_list_gone));
    /* Another suspect.xml path: not this one's. */
    load(conf_a, &s);
    CU_ASSERT_FATAL(
        compiled_abs_path(e2e_path(at, "other.xml"), abs, sizeof(abs)) == 0);
    CU_ASSERT(!compiled_fresh(&s, abs));
    compiled_clear(&s);
}

/* Sources changed within a clock tick of now may not be saved. */
static void test_racy(void)
{
    const int64_t s = 1000000000;
    compiled_t snap;
    int64_t t;

    load(conf_a, &snap);
    t = snap.id[COMPILED_SRC_CONF].ctime_ns;
    CU_ASSERT(compiled_racy(&snap, t));
    CU_ASSERT(!compiled_racy(&snap, t + 3600 * s));
    memset(snap.id, 0, sizeof(snap.id));
    snap.id[0].mtime_ns = snap.id[0].ctime_ns = 1700000000 * s + 123;
    CU_ASSERT(compiled_racy(&snap, snap.id[0].mtime_ns + s / 20));
    CU_ASSERT(!compiled_racy(&snap, snap.id[0].mtime_ns + s / 5));
    /* whole seconds: a file system that keeps no more */
    snap.id[0].mtime_ns = snap.id[0].ctime_ns = 1700000000 * s;
    CU_ASSERT(compiled_racy(&snap, 1700000001 * s + s / 2));
    CU_ASSERT(!compiled_racy(&snap, 1700000003 * s));
    CU_ASSERT(compiled_racy(&snap, 1700000000 * s - s / 2)); /* clock back */
    /* a list file is a source too */
    t = (int64_t)snap.conf->deny->file_id[4];
    CU_ASSERT(compiled_racy(&snap, t + s / 20));
    compiled_clear(&snap);
}

/* suspect_limits_from_rules(), which decoding relies on: the checks of
 * the loader, lines kept, lookups built. */
static void test_from_rules(void)
{
    suspect_rule_t rules[] = {{"A", 2, 60, 0, 0, 0, 0, 0, 0, 0, 0},
                              {"B.x", 1, 1, 30, 0, 0, 0, 0, 0, 0, 0}};
    const int lines[] = {3, 9};
    suspect_limits_t *lim = NULL;
    suspect_err_t err;

    CU_ASSERT_FATAL(suspect_limits_from_rules(rules, lines, 2, "l.xml", &lim,
                                              NULL) == SUSPECT_OK);
    CU_ASSERT_EQUAL(suspect_limits_count(lim), 2);
    CU_ASSERT_EQUAL(suspect_limits_line(lim, 1), 9);
    CU_ASSERT_EQUAL(suspect_limits_find(lim, "B.x")->block_s, 30);
    CU_ASSERT_PTR_NOT_EQUAL(suspect_limits_find(lim, "A")->action,
                            rules[0].action);
    suspect_limits_unref(lim);
    lim = NULL;
    rules[1].action = "A";
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(
        suspect_limits_from_rules(rules, lines, 2, "l.xml", &lim, &err),
        SUSPECT_E_CONFIG);
    CU_ASSERT(err.line == 9 && strstr(err.text, "duplicates line 3"));
    rules[1].action = "1bad";
    CU_ASSERT_EQUAL(suspect_limits_from_rules(rules, NULL, 2, NULL, &lim, NULL),
                    SUSPECT_E_CONFIG);
    rules[1].action = "B";
    rules[1].window_s = 0;
    CU_ASSERT_EQUAL(suspect_limits_from_rules(rules, NULL, 2, NULL, &lim, NULL),
                    SUSPECT_E_CONFIG);
    CU_ASSERT_PTR_NULL(lim);
    CU_ASSERT_FATAL(suspect_limits_from_rules(NULL, NULL, 0, NULL, &lim,
                                              NULL) == SUSPECT_OK);
    CU_ASSERT_EQUAL(suspect_limits_count(lim), 0);
    suspect_limits_unref(lim);
}

/* The names: absolute, per user, per suspect.xml. */
static void test_names(void)
{
    char a[256], b[256], c[256], abs[1024], cwd[1024];

    CU_ASSERT_FATAL(compiled_file_name("/d", "/etc/s.xml", a, sizeof(a)) == 0);
    CU_ASSERT_FATAL(compiled_file_name("/d", "/etc/t.xml", b, sizeof(b)) == 0);
    CU_ASSERT_FATAL(compiled_file_name("/d", "/etc/s.xml", c, sizeof(c)) == 0);
    CU_ASSERT_STRING_EQUAL(a, c);
    CU_ASSERT_STRING_NOT_EQUAL(a, b);
    CU_ASSERT_EQUAL(strncmp(a, "/d/cgi-", 7), 0);
    CU_ASSERT_EQUAL(strlen(strrchr(a, '-')), strlen("-0123456789abcdef.snap"));
    CU_ASSERT_EQUAL(compiled_file_name("/d", "/etc/s.xml", a, 10), -1);
    CU_ASSERT_FATAL(getcwd(cwd, sizeof(cwd)) != NULL);
    CU_ASSERT_FATAL(compiled_abs_path("x.xml", abs, sizeof(abs)) == 0);
    CU_ASSERT_EQUAL(strncmp(abs, cwd, strlen(cwd)), 0);
    CU_ASSERT_STRING_EQUAL(abs + strlen(abs) - 6, "/x.xml");
}

int cgirun_add_snap_tests(struct CU_Suite *s)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {
        {"compiled configuration: round trip, every field", test_round_trip},
        {"compiled configuration: lists packed as compiled", test_packed_lists},
        {"compiled configuration: packs read where the file maps them",
         test_packed_mapped},
        {"compiled configuration: what a packed list must be", test_pack_rules},
        {"compiled configuration: damage refused", test_damage},
        {"compiled configuration: structure checked", test_structure},
        {"compiled configuration: files and trust", test_files},
        {"compiled configuration: stale on every edit", test_stale},
        {"compiled configuration: racy sources", test_racy},
        {"compiled configuration: names", test_names},
        {"compiled configuration: limits from rules", test_from_rules},
    };

    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL) {
            return -1;
        }
    }
    return 0;
}
