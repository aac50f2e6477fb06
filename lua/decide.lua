-- decide.lua - the whole decision of one request, atomically; or, with a
-- ttl, its reservation (a reservation instead of a hit).
--
-- Mirrors suspect_policy_evaluate() (policy/evaluate.c), the definition of
-- the decision.  The C side runs that evaluator again on the states this
-- script returns and refuses the answer if the writes differ, so the two can
-- never silently drift apart.
--
-- KEYS, per identity: window key, lock key, reservations key, offences
--       key; or,
--       for one identity whose lock lives in another slot of a Redis
--       Cluster (the seed's keys there), window key, reservations key, offences
--       key: the caller read the lock (lock.lua) and writes a new one.
-- ARGV: now_ms ("" = use Redis TIME), limit, window_ms, block_ms (0 =
--       basic), member (unique id of this hit; "" = record nothing),
--       ttl_ms (0 = a decision; else the reservation's life), block factor x 100
--       (0 = no escalation), block ceiling ms, offence period ms, then the
--       lock value of each identity (without the lock key: its end).
-- Returns: now_ms, allowed (0/1), then per identity: lock_until_ms,
--          in_window, free_at_ms, new_lock_until_ms (0 = no new lock),
--          reservations, their earliest end, offences, new offences
--          (0 = unchanged).
--
-- Data model (the window and lock shared with the .NET
-- SuspectUsageManager/RateLimitManager):
--   window   = sorted set, score = epoch ms of the hit, member unique;
--   lock     = string "<identity>|until=<epoch ms>" with a TTL (PX); a lock
--              without "|until=" (written by .NET: value = identity) ends
--              at now + PTTL;
--   reservations = sorted set, score = the reservation's end,
--              member "<taken at ms>:<member>"; one whose end has come is
--              moved into the window at its taken-at time first;
--   offences = string "<count>|until=<epoch ms>" with a TTL.
-- The .NET system reads the window and lock only: it does not see reservations
-- in flight or the escalation (it locks for BlockDuration).
--
-- A Redis Cluster decision whose identities live in several slots runs this
-- once per identity (policy/redis/rediscross.c): each but the last takes a
-- reservation for a second instead of a hit, dropped again when another
-- identity denies, a hit at its end otherwise.
--
-- Hits are counted with ZCOUNT (now - window, +inf) and trimmed only when
-- older than now - window - SLACK: a request decided late (its caller read
-- the clock, then was descheduled, or its host's clock is behind) must still
-- see the hits in its own window that a request with a later clock would
-- otherwise have trimmed.  Exact for delays and skews up to SLACK.  The
-- trim is made where the window is written (a hit recorded, a reservation
-- moved in): a window only denied does not grow, and its key expires.
--
-- Cost (docs/BENCHMARKS.md): what Redis spends on this script is its
-- redis.call()s, its number <-> string conversions and what it allocates
-- (a table, a string, a local function: each made again on every call,
-- and collected), so: one ZRANGEBYSCORE ... LIMIT 0 1 reads an identity's
-- earliest reservation (the rest of them only when it has one),
-- each bound is formatted once per script and only when used, constants
-- are passed as strings, the answer is made at its size, and the code
-- stays inline.  Only commands of examples/redis/suspect-acl.conf are
-- used.  A number argument costs a strtod(): the ones every decision
-- needs are read here, the others where they are used, and flags are
-- compared as strings (the C side writes 0 for "none": a block factor is
-- 0 unless the rule escalates, which needs a block).  An allowed identity is then ZRANGEBYSCORE (reservations), GET (lock),
-- ZCOUNT, ZADD, ZREMRANGEBYSCORE, PEXPIRE; a denied one the first three
-- (and a ZRANGEBYSCORE for when one more hit fits, and the lock's SET,
-- when it is over the limit).
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local blocks = ARGV[4] ~= '0'
local member = ARGV[5]
local reserves = ARGV[6] ~= '0'
local escalates = ARGV[7] ~= '0'
local apart = #KEYS == 3
local n = apart and 1 or #KEYS / 4
local now_s = ARGV[1]
if now_s == '' then
    now_s = ms(now)
end
local low = '(' .. ms(now - window)
local old, keep -- formatted when a window is written

-- The answer, made at its size for one or two identities (the common
-- cases: a table that grows is reallocated at each power of two).
local out
if n == 1 then
    out = {now, 0, 0, 0, 0, 0, 0, 0, 0, 0}
else
    out = {now, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
end
local allowed = true
for i = 1, n do
    local wk, lk, sk, ok = KEYS[4 * i - 3], KEYS[4 * i - 2], KEYS[4 * i - 1],
                           KEYS[4 * i]
    if apart then
        lk, sk, ok = nil, KEYS[2], KEYS[3]
    end
    -- Reservations: those whose end has come move into the window
    -- (at their taken-at time) first; then how many, the earliest end.
    local pending, pending_end = 0, 0
    local first = redis.call('ZRANGEBYSCORE', sk, '-inf', '+inf',
                             'WITHSCORES', 'LIMIT', '0', '1')
    if first[1] then
        if tonumber(first[2]) <= now then
            local ended = redis.call('ZRANGEBYSCORE', sk, '-inf', now_s)
            for _, m in ipairs(ended) do
                local at = string.match(m, '^(%d+):')
                if at then
                    redis.call('ZADD', wk, at, m)
                end
            end
            redis.call('ZREMRANGEBYSCORE', sk, '-inf', now_s)
            if not old then
                old, keep = ms(now - window - SLACK), ms(window + SLACK)
            end
            redis.call('ZREMRANGEBYSCORE', wk, '-inf', old)
            redis.call('PEXPIRE', wk, keep)
            first = redis.call('ZRANGEBYSCORE', sk, '-inf', '+inf',
                               'WITHSCORES', 'LIMIT', '0', '1')
        end
        if first[1] then
            pending = redis.call('ZCOUNT', sk, '-inf', '+inf')
            pending_end = tonumber(first[2])
        end
    end
    local lu
    if apart then
        lu = tonumber(ARGV[10])
    else
        lu = lock_until(lk)
    end
    local count = redis.call('ZCOUNT', wk, low, '+inf')
    local offences = 0
    if escalates then
        local v = redis.call('GET', ok)
        if v then
            local c, u = string.match(v, '^(%d+)|until=(%d+)$')
            if c and tonumber(u) > now then
                offences = tonumber(c)
            end
        end
    end
    local free_at, new_lock, new_offences = 0, 0, 0
    if count >= limit then
        local r = redis.call('ZRANGEBYSCORE', wk, low, '+inf', 'WITHSCORES',
                             'LIMIT', count - limit, 1)
        free_at = tonumber(r[2]) + window
    end
    if lu > now then
        allowed = false
    elseif count + pending >= limit then
        allowed = false
        if count >= limit and blocks then
            local k = escalates and offences + 1 or 0
            local d = lock_ms(k, tonumber(ARGV[4]), tonumber(ARGV[7]),
                              tonumber(ARGV[8]))
            new_lock = now + d
            if not apart then
                redis.call('SET', lk, ARGV[9 + i] .. '|until=' ..
                           ms(new_lock), 'PX', ms(d))
            end
            if k > 0 then
                local period = tonumber(ARGV[9])
                new_offences = k
                redis.call('SET', ok, k .. '|until=' .. ms(new_lock + period),
                           'PX', ms(d + period))
            end
        end
    end
    local o = 8 * i - 5
    out[o] = lu
    out[o + 1] = count
    out[o + 2] = free_at
    out[o + 3] = new_lock
    out[o + 4] = pending
    out[o + 5] = pending_end
    out[o + 6] = offences
    out[o + 7] = new_offences
end
if allowed and member ~= '' then
    local ttl = reserves and tonumber(ARGV[6])
    for i = 1, n do
        if reserves then
            local sk = apart and KEYS[2] or KEYS[4 * i - 1]
            redis.call('ZADD', sk, ms(now + ttl), now_s .. ':' .. member)
            if redis.call('PTTL', sk) < ttl + window + SLACK then
                redis.call('PEXPIRE', sk, ms(ttl + window + SLACK))
            end
        else
            local wk = KEYS[4 * i - 3]
            if not old then
                old, keep = ms(now - window - SLACK), ms(window + SLACK)
            end
            redis.call('ZADD', wk, now_s, member)
            redis.call('ZREMRANGEBYSCORE', wk, '-inf', old)
            redis.call('PEXPIRE', wk, keep)
        end
    end
end
if allowed then
    out[2] = 1
end
return out
