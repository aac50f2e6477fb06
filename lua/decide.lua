-- decide.lua - the whole decision of one request, atomically.
--
-- Mirrors suspect_policy_evaluate() (policy/evaluate.c), the definition of
-- the decision.  The C side runs that evaluator again on the states this
-- script returns and refuses the answer if the writes differ, so the two can
-- never silently drift apart.
--
-- KEYS: window key 1, lock key 1, window key 2, lock key 2, ...
-- ARGV: now_ms ("" = use Redis TIME), limit, window_ms, block_ms (0 = basic),
--       member (unique id of this hit), then the lock value of each identity.
-- Returns: now_ms, allowed (0/1), then per identity: lock_until_ms,
--          in_window, free_at_ms, new_lock_until_ms (0 = no new lock).
--
-- Data model (shared with the .NET SuspectUsageManager/RateLimitManager):
--   window = sorted set, score = epoch ms of the hit, member unique;
--   lock   = string "<identity>|until=<epoch ms>" with a TTL (PX); a lock
--            without "|until=" (written by .NET: value = identity) ends at
--            now + PTTL.
--
-- Hits are counted with ZCOUNT (now - window, +inf) and trimmed only when
-- older than now - window - SLACK: a request decided late (its caller read
-- the clock, then was descheduled, or its host's clock is behind) must still
-- see the hits in its own window that a request with a later clock would
-- otherwise have trimmed.  Exact for delays and skews up to SLACK.
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local block = tonumber(ARGV[4])
local member = ARGV[5]
local n = #KEYS / 2


local out = {now, 0}
local allowed = true
for i = 1, n do
    local wk, lk = KEYS[2 * i - 1], KEYS[2 * i]
    local lu = lock_until(lk)
    local low = '(' .. ms(now - window)
    redis.call('ZREMRANGEBYSCORE', wk, '-inf', ms(now - window - SLACK))
    local count = redis.call('ZCOUNT', wk, low, '+inf')
    local free_at, new_lock = 0, 0
    if count >= limit then
        local r = redis.call('ZRANGEBYSCORE', wk, low, '+inf', 'WITHSCORES',
                             'LIMIT', count - limit, 1)
        free_at = tonumber(r[2]) + window
    end
    if lu > now then
        allowed = false
    elseif count >= limit then
        allowed = false
        if block > 0 then
            new_lock = now + block
            redis.call('SET', lk, ARGV[5 + i] .. '|until=' .. ms(new_lock),
                       'PX', ms(block))
        end
    end
    out[#out + 1] = lu
    out[#out + 1] = count
    out[#out + 1] = free_at
    out[#out + 1] = new_lock
end
if allowed then
    for i = 1, n do
        local wk = KEYS[2 * i - 1]
        redis.call('ZADD', wk, ms(now), member)
        redis.call('PEXPIRE', wk, ms(window + SLACK))
    end
    out[2] = 1
end
return out
