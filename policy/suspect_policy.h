/*
 * suspect_policy.h - rules, identities, keys and decisions.
 *
 * A rule is one line of the limits file: an action, LimitCount hits per
 * LimitDuration seconds and an optional BlockDuration.  For a request, the
 * caller resolves one or more identities (MemberCode, ClientIp, ...), turns
 * each into a key with suspect_key_build(), and asks a store to decide
 * (suspect_store.h).  Every store gives the same decision, defined once here
 * by suspect_policy_evaluate(), which is pure: no I/O, the time is a
 * parameter.
 *
 * Semantics (the sliding window of the .NET SuspectUsageManager and the
 * block-lock of its RateLimitManager):
 *   - a hit with timestamp t is in the window at now when t > now - window;
 *   - basic: a full window (in_window >= limit) denies until enough hits
 *     leave it for one more to fit;
 *   - block-lock: a live lock denies until it ends; a full window creates a
 *     lock of block_s seconds and denies;
 *   - several identities: deny if any denies, lock every identity that is
 *     over, record the hit on all of them only when the request is allowed;
 *   - denied hits are never recorded and never extend a lock.
 *
 * Beyond the .NET system (docs/policy.md):
 *   - reservations: a request whose outcome only its response tells (count
 *     only failed logins) holds a reservation on every identity while it
 *     runs; a
 *     reservation counts against the limit like a hit, but never locks;
 *     settling it makes it a hit at the moment it was taken (the attempt
 *     failed, or its response never came) or drops it (it succeeded); one
 *     not settled by its end is a hit;
 *   - repeat offenders: with a BlockFactor, the k-th lock of an identity
 *     within its offence period lasts block_s * factor^(k-1), at most
 *     block_max_s; an identity that gets no new lock for offence_s seconds
 *     after its last lock ended starts again at block_s.
 */
#ifndef SUSPECT_POLICY_H
#define SUSPECT_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "suspect_error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SUSPECT_ACTION_MAX      64 /* longest action name, bytes */
#define SUSPECT_MAX_IDENTITIES  8  /* identities decided in one step */
#define SUSPECT_MAX_PARTS       4  /* values in one composite identity */
#define SUSPECT_LIMIT_COUNT_MAX 1000000u
#define SUSPECT_DURATION_MAX    31536000u /* one year, in seconds */

#define SUSPECT_FACTOR_MAX_PCT 10000u /* BlockFactor 100, in hundredths */

/* A decision's own fail mode (suspect_rule_t.fail_mode), for a caller that
 * sets one per route or action; the failover store (suspect_failover.h)
 * applies it instead of its own. */
#define SUSPECT_RULE_FAIL_STORE  0 /* the store's mode (default) */
#define SUSPECT_RULE_FAIL_LOCAL  1
#define SUSPECT_RULE_FAIL_OPEN   2
#define SUSPECT_RULE_FAIL_CLOSED 3

/*
 * One protected action.  block_s == 0 is the basic strategy.  The fields
 * after block_s are zero in a rule of the seed's four fields: no
 * escalation, the store's fail mode.
 */
typedef struct suspect_rule {
    const char *action;
    uint32_t limit_count; /* hits allowed per window, >= 1 */
    uint32_t window_s;    /* LimitDuration, >= 1 */
    uint32_t block_s;     /* BlockDuration, 0 = no lock */
    /* Repeat offenders (with block_s > 0): BlockFactor x 100; 0 or 100 =
     * every lock lasts block_s (no offences are kept). */
    uint32_t block_factor_pct;
    uint32_t block_max_s; /* MaxBlockDuration; 0 = SUSPECT_DURATION_MAX */
    uint32_t offence_s;   /* OffenceDuration; 0 = block_max_s */
    uint32_t fail_mode;   /* SUSPECT_RULE_FAIL_*, set per decision */
    /* How the action counts (SUSPECT_ALGO_*; 0 = the seed's sliding log)
     * and, for a token bucket, its capacity (0 = limit_count). */
    uint32_t algorithm;
    uint32_t burst;
    /* Tokens (or hits) this request takes; 0 = 1.  Set per decision, like
     * fail_mode; more than 1 only with a bucket or a counter. */
    uint32_t cost;
} suspect_rule_t;

/* How an action counts (suspect_rule_t.algorithm; docs/limits-file.md). */
#define SUSPECT_ALGO_LOG    0 /* exact sliding log of hits (the seed's) */
#define SUSPECT_ALGO_BUCKET 1 /* token bucket (GCRA): exact, one number */
#define SUSPECT_ALGO_COUNTER                                                   \
    2 /* two-window sliding counter: approximate,                              \
         three numbers */

/* The most a request may take (suspect_rule_t.cost). */
#define SUSPECT_COST_MAX 1000u

/* What a request may hold at most: the bucket's capacity, else the limit. */
uint32_t suspect_rule_capacity(const suspect_rule_t *rule);

/* What this request takes: rule->cost, or 1. */
uint32_t suspect_rule_cost(const suspect_rule_t *rule);

/* The limits file's name of an algorithm (SUSPECT_ALGO_*): "SlidingLog",
 * "TokenBucket", "SlidingCounter"; NULL for another number. */
const char *suspect_algorithm_name(uint32_t algorithm);

/* True when rule escalates its locks (and so keeps offence counts). */
bool suspect_rule_escalates(const suspect_rule_t *rule);

/*
 * How long the lock of an identity's offence number offence (1 = its first
 * lock within the period) lasts under rule, in ms: block_s * factor^(k-1),
 * each step rounded down to the ms, at most block_max_s.  0 for a rule
 * without locks.
 */
int64_t suspect_rule_lock_ms(const suspect_rule_t *rule, uint32_t offence);

/* The offence period of rule in ms (offence_s, else block_max_s, else
 * SUSPECT_DURATION_MAX). */
int64_t suspect_rule_offence_ms(const suspect_rule_t *rule);

/* The outcome of one decision.  Never an error code: see suspect_store.h. */
typedef struct suspect_decision {
    bool allowed;
    bool locked;                /* denied by a lock (existing or created now) */
    int tripped;                /* index of the identity that denied, -1 */
    uint32_t limit;             /* the rule's limit_count */
    uint32_t remaining;         /* hits left after this one (0 when denied) */
    int64_t restriction_end_ms; /* epoch ms the denial ends, 0 when allowed */
    int64_t retry_after_ms;     /* restriction_end_ms - now, 0 when allowed */
    int degraded;               /* SUSPECT_DEGRADED_* (suspect_failover.h) */
    unsigned locks_created;     /* locks this decision created (0..n) */
    bool busy;                  /* denied: attempts in flight hold the rest */
    uint32_t offences; /* the reported identity's offence count (its lock
                          included) under an escalating rule, else 0 */
} suspect_decision_t;

/* How long a denial for attempts in flight asks the client to wait at
 * most: room comes back when one of them is settled, which is usually soon. */
#define SUSPECT_BUSY_RETRY_MS 1000

/*
 * What a store knows about one identity at now, after dropping hits that
 * left the window.  free_at_ms is meaningful when in_window >= limit_count:
 * the moment the hit number (in_window - limit_count), counting from 0 at
 * the oldest hit in the window, leaves the window (its timestamp plus
 * window_s * 1000).
 */
typedef struct suspect_window_state {
    int64_t lock_until_ms; /* locked while now < lock_until_ms; 0 = none */
    uint32_t in_window;    /* hits, including reservations past their end */
    int64_t free_at_ms;
    uint32_t pending;       /* reservations in flight (ending after now) */
    int64_t pending_end_ms; /* the earliest end of those; 0 = none */
    uint32_t offences;      /* offences still remembered at now (escalating
                               rules; 0 once the period is over) */
} suspect_window_state_t;

/* What the store must write after suspect_policy_evaluate(). */
typedef struct suspect_plan {
    /* add now to every window: a hit, or (suspect_store_reserve()) a
     * reservation */
    bool record;
    int64_t lock_until_ms[SUSPECT_MAX_IDENTITIES]; /* new lock end, 0 = none */
    /* With a new lock under an escalating rule: the identity's offence
     * count from now on and when it is forgotten; 0 = unchanged. */
    uint32_t offences[SUSPECT_MAX_IDENTITIES];
    int64_t offence_until_ms[SUSPECT_MAX_IDENTITIES];
} suspect_plan_t;

/*
 * The decision for n (1..SUSPECT_MAX_IDENTITIES) identities whose states are
 * st[0..n-1], and what to write.  Pure; cannot fail.  When several
 * identities deny, the decision reports the one whose restriction ends last.
 */
void suspect_policy_evaluate(const suspect_rule_t *rule,
                             const suspect_window_state_t *st, size_t n,
                             int64_t now_ms, suspect_plan_t *plan,
                             suspect_decision_t *out);

/*
 * Settling a reservation that ends at expires_ms, at now_ms: true when it
 * becomes a hit (at the moment it was taken), false when it is dropped.
 * failed: the response said the attempt failed, or never came.  A
 * reservation past its end is a hit whatever the response said: the store
 * counted it as one already.
 */
bool suspect_policy_settle_counts(bool failed, int64_t expires_ms,
                                  int64_t now_ms);

/* ---- identities and keys ------------------------------------------------ */

/*
 * One identity: a type name (MemberCode, SessionId, AccountId, ClientIp, or
 * any identifier) and one value, or several for a composite identity (e.g.
 * MemberCode + promo code), joined with '_' as the .NET code does.
 * The values are borrowed and need not be NUL-terminated.
 */
typedef struct suspect_identity {
    const char *type;
    size_t nparts;
    struct {
        const char *ptr;
        size_t len;
    } part[SUSPECT_MAX_PARTS];
} suspect_identity_t;

typedef enum suspect_key_format {
    SUSPECT_KEYS_SEED = 0, /* {prefix}{Action}:{Value}         (default) */
    SUSPECT_KEYS_TYPED = 1 /* {prefix}{Action}:{Type}:{Value} */
} suspect_key_format_t;

typedef struct suspect_keyopts {
    suspect_key_format_t format;
    const char *prefix;   /* NULL or "" = none; printable, no spaces */
    size_t max_value_len; /* cap on an escaped value, 0 = default (256) */
    /* Redis Cluster: what follows the prefix goes in braces, a hash tag
     * ({prefix}{{Action}:{Value}}), so that an identity's window and lock
     * share a slot; '{' and '}' are then escaped in values and refused in
     * the prefix. */
    bool hash_tag;
} suspect_keyopts_t;

#define SUSPECT_KEY_MAX         1024
#define SUSPECT_LOCK_SUFFIX     ":locked"
#define SUSPECT_LOCK_SUFFIX_LEN 7

/*
 * A built key: buf holds the window key followed by ":locked", so the
 * window key is (buf, window_len) and the lock key (buf, lock_len), and buf
 * is NUL-terminated after the lock key.
 */
typedef struct suspect_key {
    size_t window_len;
    size_t lock_len;
    char buf[SUSPECT_KEY_MAX];
} suspect_key_t;

/*
 * Builds the keys of identity id for action.  Values are escaped so that no
 * two identities share a key: '%', ':', control bytes, DEL, spaces and bytes
 * that are not valid UTF-8 become %XX ('_' too inside a composite), except
 * that a value made only of hex digits, ':', '.' and '/' (an IP address or
 * prefix) is kept as it is, for keys equal to the .NET system's.  A value
 * longer than the cap once escaped keeps its head and gets "%~" and a
 * SHA-256 digest of the whole value.  With opts->hash_tag, the key after
 * the prefix is in braces (see suspect_keyopts_t).  opts may be NULL for
 * the defaults.  Fails with SUSPECT_E_INVAL on an empty value, a bad
 * action or type name, too many parts, or a prefix with braces when tagged.
 */
suspect_rc_t suspect_key_build(const suspect_keyopts_t *opts,
                               const char *action, const suspect_identity_t *id,
                               suspect_key_t *out, suspect_err_t *err);

/* True when name is a valid action or identity type name: a letter or '_',
 * then letters, digits, '_', '-' or '.', at most SUSPECT_ACTION_MAX bytes. */
bool suspect_name_valid(const char *name, size_t len);

#ifdef __cplusplus
}
#endif

#endif
