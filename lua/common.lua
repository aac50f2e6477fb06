-- common.lua - put in front of every other script by scripts/lua2c, so the
-- data model is read in one place.
--
-- ARGV[1] is always now_ms ("" = use Redis TIME).  A lock is the string
-- "<identity>|until=<epoch ms>" with a TTL; one without "|until=" (written
-- by .NET: value = identity) ends at now + PTTL, a year when it has no TTL.
local now = tonumber(ARGV[1])
if now == nil then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local YEAR_MS = 31536000000
local SLACK = 5000

-- x as string.format('%.0f', x) writes it.  '%.0f' goes through glibc's
-- multi-precision float printing, several times the cost of '%d', so an
-- integer below 2^53 (every ms count) is written with '%d', in two parts
-- above 10^9 ('%d' formats a C long, 32 bits on some platforms).
-- The lock of offence number k (0: no escalation): block x
-- factor^(k-1), floored each step, at most the ceiling
-- (suspect_rule_lock_ms()); pct is the factor x 100.
local function lock_ms(k, block, pct, ceiling)
    local d = block
    if k == 0 or pct <= 100 then
        return d
    end
    local j = 1
    while j < k and d < ceiling do
        d = math.floor(d * pct / 100)
        j = j + 1
    end
    if d > ceiling then
        d = ceiling
    end
    return d
end

local function ms(x)
    if x ~= math.floor(x) or x >= 9007199254740992 or
        x <= -9007199254740992 then
        return string.format('%.0f', x)
    end
    if x < 0 then
        return '-' .. ms(-x)
    end
    if x < 1000000000 then
        return string.format('%d', x)
    end
    local hi = math.floor(x / 1000000000)
    return string.format('%d%09d', hi, x - hi * 1000000000)
end

-- When the lock at key lk ends, 0 when there is none.
local function lock_until(lk)
    local v = redis.call('GET', lk)
    if not v then
        return 0
    end
    local e = string.match(v, '|until=(%d+)$')
    if e then
        return tonumber(e)
    end
    local ttl = redis.call('PTTL', lk)
    if ttl == -1 then
        return now + YEAR_MS
    end
    if ttl > 0 then
        return now + ttl
    end
    return 0
end
