/*
 * compiled.c - the field tables of compiled configurations
 * (compiled_internal.h) and the small helpers of compiled.h.
 *
 * The tables list every field of suspect_conf_t and suspect_conf_route_t
 * that is a number, a flag, an enumeration or a string, in declaration
 * order.  The static assertions below fail the build when one of the
 * structures changes size, as a reminder that a new field must be added
 * here (and COMPILED_VERSION raised), or suspect-cgi would silently lose it.
 */
#include "compiled_internal.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "suspect_failover.h"

#define COFF(f) offsetof(suspect_conf_t, f)
#define ROFF(f) offsetof(suspect_conf_route_t, f)

#if SIZE_MAX == UINT64_MAX
_Static_assert(sizeof(suspect_conf_t) == 576 &&
                   sizeof(suspect_conf_route_t) == 424 &&
                   sizeof(suspect_conf_identity_t) == 232 &&
                   sizeof(suspect_conf_outcome_t) == 128 &&
                   sizeof(suspect_rule_t) == 48,
               "a configuration structure changed: update the tables of "
               "compiled.c and the code of compiled_enc.c and compiled_dec.c, "
               "and raise COMPILED_VERSION");
#endif

const compiled_field_t compiled_conf_fields[] = {
    {COMPILED_STR_REQ, COFF(file), 0},
    {COMPILED_STR_REQ, COFF(dir), 0},
    {COMPILED_STR, COFF(listen), 0},
    {COMPILED_UINT, COFF(socket_mode), 0},
    {COMPILED_UINT, COFF(workers), 0},
    {COMPILED_ENUM, COFF(mode), SUSPECT_MODE_AUTHORIZER},
    {COMPILED_UINT, COFF(io_timeout_ms), 0},
    {COMPILED_SIZE, COFF(form_max), 0},
    {COMPILED_SIZE, COFF(params_max), 0},
    {COMPILED_UINT, COFF(request_timeout_ms), 0},
    {COMPILED_STR, COFF(index_files), 0},
    {COMPILED_SIZE, COFF(max_connections), 0},
    {COMPILED_INT, COFF(server_line), 0},
    {COMPILED_STR_REQ, COFF(limits_path), 0},
    {COMPILED_UINT, COFF(reload_ms), 0},
    {COMPILED_INT, COFF(limits_line), 0},
    {COMPILED_ENUM, COFF(store), SUSPECT_STORE_REDIS},
    {COMPILED_SIZE, COFF(memory_max_entries), 0},
    {COMPILED_STR, COFF(lmdb_path), 0},
    {COMPILED_SIZE, COFF(lmdb_map_size), 0},
    {COMPILED_BOOL, COFF(lmdb_no_sync), 0},
    {COMPILED_UINT, COFF(lmdb_mode), 0},
    {COMPILED_INT, COFF(lmdb_group), 0},
    {COMPILED_STR, COFF(redis_url), 0},
    {COMPILED_UINT, COFF(redis_timeout_ms), 0},
    {COMPILED_BOOL, COFF(redis_server_clock), 0},
    {COMPILED_ENUM, COFF(fail_mode), SUSPECT_FAIL_CLOSED},
    {COMPILED_INT, COFF(store_line), 0},
    {COMPILED_ENUM, COFF(key_format), SUSPECT_KEYS_TYPED},
    {COMPILED_STR, COFF(key_prefix), 0},
    {COMPILED_INT, COFF(key_hash_tag), 0},
    {COMPILED_INT, COFF(keys_line), 0},
    {COMPILED_BOOL, COFF(has_cgi), 0},
    {COMPILED_STR, COFF(cgi_root), 0},
    {COMPILED_STR, COFF(cgi_program), 0},
    {COMPILED_UINT, COFF(cgi_timeout_ms), 0},
    {COMPILED_STR, COFF(cgi_pass_env), 0},
    {COMPILED_INT, COFF(cgi_line), 0},
    {COMPILED_BOOL, COFF(has_upstream), 0},
    {COMPILED_STR, COFF(upstream_address), 0},
    {COMPILED_STR, COFF(upstream_script), 0},
    {COMPILED_STR, COFF(upstream_pass_params), 0},
    {COMPILED_UINT, COFF(upstream_timeout_ms), 0},
    {COMPILED_UINT, COFF(upstream_connect_timeout_ms), 0},
    {COMPILED_UINT, COFF(upstream_max_idle), 0},
    {COMPILED_INT, COFF(upstream_line), 0},
    {COMPILED_STR, COFF(trusted_proxies), 0},
    {COMPILED_ENUM, COFF(fwd_header), SUSPECT_FWD_BOTH},
    {COMPILED_UINT, COFF(ipv4_prefix), 0},
    {COMPILED_UINT, COFF(ipv6_prefix), 0},
    {COMPILED_INT, COFF(client_ip_line), 0},
    {COMPILED_ENUM, COFF(format), SUSPECT_FORMAT_HTML},
    {COMPILED_STR, COFF(template_path), 0},
    /* template_body and template_len: coded by hand */
    {COMPILED_STR, COFF(template_type), 0},
    {COMPILED_INT, COFF(response_line), 0},
    {COMPILED_STR, COFF(shadow_header), 0},
    {COMPILED_BOOL, COFF(control_on), 0},
    {COMPILED_STR, COFF(control_path), 0},
    {COMPILED_UINT, COFF(control_mode), 0},
    {COMPILED_STR, COFF(control_group), 0},
    {COMPILED_INT, COFF(control_line), 0},
    {COMPILED_STR, COFF(metrics_listen), 0},
    {COMPILED_INT, COFF(metrics_line), 0},
    {COMPILED_ENUM, COFF(decisions), SUSPECT_DECISIONS_ALL},
    {COMPILED_STR, COFF(decision_path), 0},
    {COMPILED_STR, COFF(identity_key), 0},
    {COMPILED_BOOL, COFF(full_uri), 0},
    {COMPILED_INT, COFF(log_line), 0},
    {COMPILED_STR, COFF(device_key), 0},
    {COMPILED_STR, COFF(device_old_key), 0},
    {COMPILED_STR, COFF(device_name), 0},
    {COMPILED_UINT, COFF(device_lifetime_s), 0},
    {COMPILED_INT, COFF(device_line), 0},
    {COMPILED_STR, COFF(challenge_key), 0},
    {COMPILED_STR, COFF(challenge_old_key), 0},
    {COMPILED_STR, COFF(challenge_path), 0},
    {COMPILED_STR, COFF(challenge_name), 0},
    {COMPILED_UINT, COFF(challenge_difficulty), 0},
    {COMPILED_UINT, COFF(challenge_lifetime_s), 0},
    {COMPILED_INT, COFF(challenge_line), 0},
    /* actions: applied to the routes at load, not carried; allow, deny:
     * coded by hand after the routes */
    {0, 0, 0}};

const compiled_field_t compiled_route_fields[] = {
    {COMPILED_STR_REQ, ROFF(action), 0},
    {COMPILED_STR_REQ, ROFF(path), 0},
    {COMPILED_BOOL, ROFF(prefix), 0},
    {COMPILED_STR, ROFF(param_name), 0},
    {COMPILED_STR, ROFF(param_value), 0},
    {COMPILED_ENUM, ROFF(param_in), SUSPECT_PARAM_REQUEST},
    {COMPILED_ENUM, ROFF(missing), SUSPECT_MISSING_REJECT},
    {COMPILED_INT, ROFF(status), 0},
    {COMPILED_INT, ROFF(line), 0},
    {COMPILED_BOOL, ROFF(refuse), 0},
    /* count; its patterns are coded by hand after the identities */
    {COMPILED_ENUM, ROFF(count), SUSPECT_COUNT_UNLESS_OK},
    {COMPILED_ENUM, ROFF(shadow), SUSPECT_SHADOW_ON},
    {COMPILED_ENUM, ROFF(fail_mode), SUSPECT_RULE_FAIL_CLOSED},
    {COMPILED_UINT, ROFF(cost), 0},
    {COMPILED_STR, ROFF(pass_methods), 0},
    {COMPILED_UINT, ROFF(max_calls), 0},
    /* allow, deny: coded by hand after the identities */
    {0, 0, 0}};

/* Drops the references and the path; s is all zero after. */
void compiled_clear(compiled_t *s)
{
    suspect_conf_unref(s->conf);
    suspect_limits_unref(s->limits);
    free(s->conf_path);
    for (size_t i = 0; i < s->npacked; i++) {
        free(s->packed[i].p);
    }
    free(s->packed);
    memset(s, 0, sizeof(*s));
}

/* XXH3, 128 bits (libxxhash): every request of suspect-cgi checks the
 * whole file, megabytes with long lists, and a checksum against damage
 * needs no key. */
void compiled_sum(const void *p, size_t n, uint64_t sum[2])
{
    XXH128_hash_t h = XXH3_128bits(p, n);

    sum[0] = h.low64;
    sum[1] = h.high64;
}
