/*
 * bench_redis_mix.c - the realistic rows of bench-redis: the decisions the
 * recipes make, on 100,000 identities, through the Redis store and through
 * a bare hiredis client sending the very same EVALSHAs, in the same run
 * (bench_redis.c calls bench_mix_rows()).
 *
 * Shapes (docs/BENCHMARKS.md):
 *   login       a pair per decision, account + client address, LimitCount
 *               5 per 600 s, BlockDuration 600 (a lock for the pair's
 *               identity over the limit);
 *   escalating  the same pair, LimitCount 10, BlockFactor 2 up to a day
 *               (offences kept);
 *   failures    the pair, LimitCount 5, counting only failed attempts: a
 *               reservation (a reservation on both identities), then
 *               its settling (a hit when the attempt failed, one in four,
 *               or always for an attacker), two round trips;
 *   rate        one identity, LimitCount 100 per 60 s, no lock.
 * Decision j of a round is the same on both sides: its identities (one in
 * ten from 100 attacked accounts and 10 attacking addresses, the others
 * spread over 100,000 accounts, each with its own address) and its clock,
 * a simulated 1,000 decisions per second (now = start + j ms), so the sets
 * grow to the same sizes on both sides.  Both sides start on a flushed
 * database, CLIENTS threads share the decisions (thread t makes j = t,
 * t + CLIENTS, ...), each with one connection on the bare side.
 *
 * The bare side builds each EVALSHA as the store does (same SHA1 of the
 * same script, same keys, same arguments, members of the same length);
 * it is what the wire protocol and the script cost, the store's floor.
 * Printed per side: decisions/s, p50 and p99 latency of a decision
 * (reservation + settling for "failures"), Redis CPU per decision (INFO
 * cpu), the scripts' own time per call and the calls per decision (INFO
 * commandstats), the share allowed and the keys left (DBSIZE): the last
 * three must agree between the sides, or the comparison is not of the
 * same work ("MISMATCH").  The ratio is the store's rate over the bare
 * client's, median over the rounds; rounds alternate which side goes
 * first.
 */
#include "bench_mix.h"

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "clock.h"
#include "helpers/util.h"
#include "suspect_redis.h"

/* Generated from the lua directory (lua/scripts.c). */
extern const char redis_lua_decide[], redis_lua_settle[];

#define MAX_ROUNDS  99
#define ACCOUNTS    100000
#define HOT         100
#define ATTACKERS   10
#define RESERVE_TTL 30000
#define EVALSHA     "cmdstat_evalsha:"

typedef struct shape {
    const char *name;
    suspect_rule_t rule;
    size_t n;     /* identities per decision */
    bool reserve; /* reservation + settling */
} shape_t;

static const shape_t shapes[] = {
    {"login", {"Login", 5, 600, 600, 0, 0, 0, 0, 0, 0, 0}, 2, false},
    {"escalating",
     {"OtpVerify", 10, 600, 900, 200, 86400, 0, 0, 0, 0, 0},
     2,
     false},
    {"failures", {"LoginFail", 5, 600, 600, 0, 0, 0, 0, 0, 0, 0}, 2, true},
    {"rate", {"PromoQuery", 100, 60, 0, 0, 0, 0, 0, 0, 0, 0}, 1, false},
};
#define NSHAPES (sizeof(shapes) / sizeof(shapes[0]))

/* What both sides share in a run. */
typedef struct mix {
    const shape_t *shape;
    const char *url, *sock;
    int port; /* the bare client's TCP port, 0: the unix socket */
    int clients;
    long requests;
    int64_t start_ms;
    char sha_decide[41], sha_settle[41];
} mix_t;

typedef struct mworker {
    mix_t *m;
    suspect_store_t *store; /* NULL: the bare side */
    int t;
    double *lat; /* microseconds of each of its decisions */
    long done, allowed, errors;
} mworker_t;

/* splitmix64: decision j's random numbers, the same on both sides. */
static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* The keys of decision j, and whether it comes from an attacker. */
static bool keys_of(const mix_t *m, long j, suspect_key_t *keys)
{
    uint64_t r = mix64((uint64_t)j);
    bool hot = r % 10 == 0;
    unsigned acct =
        hot ? (unsigned)(r >> 8) % HOT : (unsigned)((r >> 8) % ACCOUNTS);
    char a[32], b[32];
    suspect_identity_t id;

    snprintf(a, sizeof(a), "user%u", acct);
    if (hot) {
        snprintf(b, sizeof(b), "10.9.8.%u", (unsigned)(r >> 40) % ATTACKERS);
    } else {
        snprintf(b, sizeof(b), "10.%u.%u.%u", acct >> 16, (acct >> 8) & 255,
                 acct & 255);
    }
    id = test_identity("Id", a);
    suspect_key_build(NULL, m->shape->rule.action, &id, &keys[0], NULL);
    id = test_identity("Id", b);
    suspect_key_build(NULL, m->shape->rule.action, &id, &keys[1], NULL);
    return hot;
}

/* decide.lua's arguments as the store formats them: KEYS window, lock,
 * slots, offences per identity; ARGV now, limit, window, block, member,
 * ttl, factor, ceiling, offence period, each identity's lock value. */
typedef struct bare_cmd {
    const char *argv[64];
    size_t len[64];
    int argc;
    char more[2 * 4][SUSPECT_KEY_MAX + 16];
    char nums[16][24];
    int nnum;
} bare_cmd_t;

static void arg(bare_cmd_t *c, const char *s, size_t len)
{
    c->argv[c->argc] = s;
    c->len[c->argc++] = len;
}

static void num(bare_cmd_t *c, long long v)
{
    char *s = c->nums[c->nnum++];
    arg(c, s, (size_t)snprintf(s, 24, "%lld", v));
}

/* key + suffix into buffer i of c. */
static void more(bare_cmd_t *c, int i, const suspect_key_t *k, const char *sfx)
{
    size_t sl = strlen(sfx);
    memcpy(c->more[i], k->buf, k->window_len);
    memcpy(c->more[i] + k->window_len, sfx, sl);
    arg(c, c->more[i], k->window_len + sl);
}

static void bare_decide(bare_cmd_t *c, const mix_t *m, const suspect_key_t *k,
                        int64_t now, const char *member, size_t mlen)
{
    const suspect_rule_t *ru = &m->shape->rule;
    bool esc = suspect_rule_escalates(ru);
    size_t n = m->shape->n;

    c->argc = c->nnum = 0;
    arg(c, "EVALSHA", 7);
    arg(c, m->sha_decide, 40);
    num(c, (long long)(4 * n));
    for (size_t i = 0; i < n; i++) {
        arg(c, k[i].buf, k[i].window_len);
        arg(c, k[i].buf, k[i].lock_len);
        more(c, (int)(2 * i), &k[i], ":slots");
        more(c, (int)(2 * i + 1), &k[i], ":offences");
    }
    num(c, now);
    num(c, ru->limit_count);
    num(c, (long long)ru->window_s * 1000);
    num(c, (long long)ru->block_s * 1000);
    arg(c, member, mlen);
    num(c, m->shape->reserve ? RESERVE_TTL : 0);
    num(c, esc ? ru->block_factor_pct : 0);
    num(c, esc ? suspect_rule_lock_ms(ru, UINT32_MAX) : 0);
    num(c, esc ? suspect_rule_offence_ms(ru) : 0);
    for (size_t i = 0; i < n; i++) {
        /* the identity: after "Action:" */
        const char *v = (const char *)memchr(k[i].buf, ':', k[i].window_len);
        v++;
        arg(c, v, k[i].window_len - (size_t)(v - k[i].buf));
    }
}

static void bare_settle(bare_cmd_t *c, const mix_t *m, const suspect_key_t *k,
                        int64_t now, const char *slot, size_t slen, int64_t end,
                        bool failed)
{
    c->argc = c->nnum = 0;
    arg(c, "EVALSHA", 7);
    arg(c, m->sha_settle, 40);
    num(c, (long long)(2 * m->shape->n));
    for (size_t i = 0; i < m->shape->n; i++) {
        arg(c, k[i].buf, k[i].window_len);
        more(c, (int)(2 * i), &k[i], ":slots");
    }
    num(c, now);
    num(c, (long long)m->shape->rule.window_s * 1000);
    arg(c, slot, slen);
    num(c, end);
    arg(c, failed ? "1" : "0", 1);
}

/* One bare decision (and settling): false on a transport or script
 * error. */
static bool bare_one(redisContext *ctx, const mix_t *m, const suspect_key_t *k,
                     long j, int64_t now, bool fail, bool *allowed)
{
    bare_cmd_t c;
    char member[40], slot[64];
    redisReply *r;
    int64_t at;

    /* a hit id is 36 characters, a slot's 16 */
    if (m->shape->reserve) {
        snprintf(member, sizeof(member), "%016llx", (unsigned long long)j);
    } else {
        snprintf(member, sizeof(member), "%08x-0000-4000-8000-%012llx",
                 (unsigned)j, (unsigned long long)j);
    }
    bare_decide(&c, m, k, now, member, strlen(member));
    r = redisCommandArgv(ctx, c.argc, c.argv, c.len);
    if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements < 2) {
        if (r != NULL && r->type == REDIS_REPLY_ERROR && j < 8) {
            fprintf(stderr, "bench-redis: bare decide.lua: %s\n", r->str);
        }
        freeReplyObject(r);
        return false;
    }
    *allowed = r->element[1]->integer == 1;
    at = r->element[0]->integer;
    freeReplyObject(r);
    if (!m->shape->reserve || !*allowed) {
        return true;
    }
    snprintf(slot, sizeof(slot), "%lld:%s", (long long)at, member);
    bare_settle(&c, m, k, now + 1, slot, strlen(slot), at + RESERVE_TTL, fail);
    r = redisCommandArgv(ctx, c.argc, c.argv, c.len);
    if (r == NULL || r->type != REDIS_REPLY_INTEGER) {
        freeReplyObject(r);
        return false;
    }
    freeReplyObject(r);
    return true;
}

/* One store decision (and settling). */
static bool store_one(suspect_store_t *s, const mix_t *m,
                      const suspect_key_t *k, int64_t now, bool fail,
                      bool *allowed)
{
    const shape_t *sh = m->shape;
    suspect_decision_t d;
    suspect_ticket_t tk;
    suspect_err_t err;

    suspect_err_clear(&err);
    if (!sh->reserve) {
        if (suspect_store_decide(s, &sh->rule, k, sh->n, now, &d, &err) !=
            SUSPECT_OK) {
            fprintf(stderr, "bench-redis: store: %s\n", err.text);
            return false;
        }
        *allowed = d.allowed;
        return true;
    }
    if (suspect_store_reserve(s, &sh->rule, k, sh->n, now, RESERVE_TTL, &d, &tk,
                              NULL) != SUSPECT_OK) {
        return false;
    }
    *allowed = d.allowed;
    return !d.allowed || suspect_store_settle(s, &sh->rule, k, sh->n, &tk, fail,
                                              now + 1, NULL) == SUSPECT_OK;
}

static void *mwork(void *p)
{
    mworker_t *w = p;
    mix_t *m = w->m;
    redisContext *ctx = NULL;

    if (w->store == NULL) {
        ctx = m->port > 0 ? redisConnect("127.0.0.1", m->port)
                          : redisConnectUnix(m->sock);
        if (ctx == NULL || ctx->err) {
            w->errors++;
            redisFree(ctx);
            return NULL;
        }
    }
    for (long j = w->t; j < m->requests; j += m->clients) {
        suspect_key_t k[2];
        bool hot = keys_of(m, j, k), allowed = false, ok;
        bool fail = hot || mix64((uint64_t)j + 1) % 4 == 0;
        int64_t now = m->start_ms + j;
        double t0 = now_s();

        ok = ctx != NULL ? bare_one(ctx, m, k, j, now, fail, &allowed)
                         : store_one(w->store, m, k, now, fail, &allowed);
        w->lat[w->done++] = (now_s() - t0) * 1e6;
        w->errors += !ok;
        w->allowed += allowed;
    }
    redisFree(ctx);
    return NULL;
}

/* A number after field in an INFO section (after "line", the start of a
 * line, when not NULL), or 0. */
static double info_field(test_redis_t *srv, const char *section,
                         const char *line, const char *field)
{
    redisReply *r = test_redis_cmd(srv, "INFO %s", section);
    double v = 0;
    const char *p = NULL;

    if (r != NULL && r->type == REDIS_REPLY_STRING) {
        p = line != NULL ? strstr(r->str, line) : r->str;
    }
    if (p != NULL && (p = strstr(p, field)) != NULL) {
        v = strtod(p + strlen(field), NULL);
    }
    freeReplyObject(r);
    return v;
}

static double cpu_server(test_redis_t *srv)
{
    return info_field(srv, "cpu", NULL, "used_cpu_sys:") +
           info_field(srv, "cpu", NULL, "used_cpu_user:");
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One side's figures. */
typedef struct mside {
    double rps, p50, p99, redis_us, script_us, calls, allowed;
    long long keys;
} mside_t;

/* Runs one side (store NULL: the bare client) on a flushed database. */
static int run_mside(test_redis_t *srv, mix_t *m, bool bare, mside_t *o)
{
    suspect_redis_opts_t opts = {m->url, 1000, 1000, 0, NULL};
    suspect_store_t *store = NULL;
    pthread_t tid[256];
    mworker_t w[256];
    double *lat = calloc((size_t)m->requests, sizeof(double));
    double c0, calls0, usec0, t0, dt;
    long done = 0, allowed = 0, errors = 0;

    freeReplyObject(test_redis_cmd(srv, "FLUSHALL"));
    if (lat == NULL ||
        (!bare && suspect_redis_new(&opts, &store, NULL) != SUSPECT_OK)) {
        free(lat);
        return -1;
    }
    /* the store's connections, and its SCRIPT LOADs, before the clock */
    if (store != NULL && suspect_redis_ping(store, NULL) != SUSPECT_OK) {
        errors++;
    }
    m->start_ms = wall_ms();
    c0 = cpu_server(srv);
    calls0 = info_field(srv, "commandstats", EVALSHA, "calls=");
    usec0 = info_field(srv, "commandstats", EVALSHA, ",usec=");
    t0 = now_s();
    for (int i = 0; i < m->clients; i++) {
        w[i] = (mworker_t){m, store, i, lat + done, 0, 0, 0};
        done += (m->requests - i + m->clients - 1) / m->clients;
        pthread_create(&tid[i], NULL, mwork, &w[i]);
    }
    for (int i = 0; i < m->clients; i++) {
        pthread_join(tid[i], NULL);
        allowed += w[i].allowed;
        errors += w[i].errors;
    }
    dt = now_s() - t0;
    o->redis_us = (cpu_server(srv) - c0) * 1e6 / (double)m->requests;
    o->calls = info_field(srv, "commandstats", EVALSHA, "calls=") - calls0;
    o->script_us =
        (info_field(srv, "commandstats", EVALSHA, ",usec=") - usec0) / o->calls;
    o->calls /= (double)m->requests;
    o->keys = test_redis_int(srv, "DBSIZE");
    o->rps = (double)m->requests / dt;
    o->allowed = 100.0 * (double)allowed / (double)m->requests;
    qsort(lat, (size_t)m->requests, sizeof(double), cmp_d);
    o->p50 = lat[m->requests / 2];
    o->p99 = lat[m->requests * 99 / 100];
    free(lat);
    suspect_store_free(store);
    if (errors > 0) {
        fprintf(stderr, "bench-redis: %s: %ld decisions failed\n",
                m->shape->name, errors);
        return -1;
    }
    return 0;
}

/* SCRIPT LOAD of text into sha. */
static int load(test_redis_t *srv, const char *text, char sha[41])
{
    redisReply *r = test_redis_cmd(srv, "SCRIPT LOAD %s", text);
    int rc =
        r != NULL && r->type == REDIS_REPLY_STRING && r->len == 40 ? 0 : -1;
    if (rc == 0) {
        memcpy(sha, r->str, 41);
    }
    freeReplyObject(r);
    return rc;
}

static void print_side(const char *who, const mside_t *s)
{
    printf("    %-5s %6.0f decisions/s, p50 %5.0f us, p99 %6.0f us, "
           "redis %5.1f us CPU, script %5.1f us x %.2f calls, "
           "%5.1f%% allowed, %lld keys\n",
           who, s->rps, s->p50, s->p99, s->redis_us, s->script_us, s->calls,
           s->allowed, s->keys);
}

/* The same work on both sides: calls, share allowed, keys left. */
static bool same_work(const mside_t *a, const mside_t *b)
{
    double dk = (double)(a->keys - b->keys);
    return a->calls - b->calls < 0.01 && b->calls - a->calls < 0.01 &&
           a->allowed - b->allowed < 1 && b->allowed - a->allowed < 1 &&
           dk * dk <= 0.0001 * (double)a->keys * (double)a->keys + 4;
}

int bench_mix_rows(test_redis_t *srv, const char *url, int port, int clients,
                   long requests, int rounds)
{
    mix_t m = {.url = url,
               .sock = srv->sock,
               .port = port,
               .clients = clients,
               .requests = requests};
    int ok = 1;

    if (load(srv, redis_lua_decide, m.sha_decide) != 0 ||
        load(srv, redis_lua_settle, m.sha_settle) != 0) {
        return -1;
    }
    printf("bench-redis realistic: %d identities, %d clients, %ld decisions "
           "per side and round, %d rounds; store / bare hiredis, same "
           "EVALSHAs\n",
           ACCOUNTS, clients, requests, rounds);
    for (size_t s = 0; s < NSHAPES; s++) {
        double ratio[MAX_ROUNDS], p99r[MAX_ROUNDS];
        m.shape = &shapes[s];
        printf("  %s: LimitCount %u, %zu identit%s%s\n", m.shape->name,
               m.shape->rule.limit_count, m.shape->n,
               m.shape->n > 1 ? "ies" : "y",
               m.shape->reserve ? ", reserve + settle" : "");
        for (int i = 0; i < rounds && i < MAX_ROUNDS; i++) {
            mside_t st, bs;
            int rc = i % 2 == 0 ? run_mside(srv, &m, false, &st) |
                                      run_mside(srv, &m, true, &bs)
                                : run_mside(srv, &m, true, &bs) |
                                      run_mside(srv, &m, false, &st);
            if (rc != 0) {
                return -1;
            }
            ratio[i] = st.rps / bs.rps;
            p99r[i] = st.p99 / bs.p99;
            printf("   round %d: ratio %.2fx, p99 %.2fx%s\n", i + 1, ratio[i],
                   p99r[i], same_work(&st, &bs) ? "" : "  MISMATCH");
            print_side("store", &st);
            print_side("bare", &bs);
            ok = ok && same_work(&st, &bs);
        }
        qsort(ratio, (size_t)rounds, sizeof(double), cmp_d);
        qsort(p99r, (size_t)rounds, sizeof(double), cmp_d);
        printf("  %s median ratio: %.2fx (target >= 0.9x), p99 %.2fx\n",
               m.shape->name, ratio[rounds / 2], p99r[rounds / 2]);
    }
    return ok ? 0 : -1;
}
