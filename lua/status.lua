-- status.lua - one identity's state, read only.
--
-- KEYS: window key, lock key, reservations key, offences key; or window
--       key, reservations key, offences key when the lock lives in another slot (the
--       seed's keys on a Redis Cluster: lock.lua reads it there).
-- ARGV: now_ms ("" = use Redis TIME), limit, window_ms.
-- Returns: now_ms, lock_until_ms, in_window, free_at_ms, reservations,
-- offences, the moment they are forgotten (see decide.lua for the data
-- model; hits with score <= now - window are not counted; a reservation whose
-- end has come counts as a hit).
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local wk, lk, sk, ok = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
if #KEYS == 3 then
    lk, sk, ok = nil, KEYS[2], KEYS[3]
end
local low = '(' .. ms(now - window)

local lu = 0
if lk then
    lu = lock_until(lk)
end
if lu <= now then
    lu = 0
end

local count = redis.call('ZCOUNT', wk, low, '+inf')
local free_at = 0
if count >= limit then
    local r = redis.call('ZRANGEBYSCORE', wk, low, '+inf', 'WITHSCORES',
                         'LIMIT', count - limit, 1)
    free_at = tonumber(r[2]) + window
end
local pending = redis.call('ZCOUNT', sk, '(' .. ms(now), '+inf')
for _, m in ipairs(redis.call('ZRANGEBYSCORE', sk, '-inf', ms(now))) do
    local at = tonumber(string.match(m, '^(%d+):') or '0')
    if at > now - window then
        count = count + 1
    end
end
local offences, until_ms = 0, 0
local v = redis.call('GET', ok)
if v then
    local c, u = string.match(v, '^(%d+)|until=(%d+)$')
    if c and tonumber(u) > now then
        offences, until_ms = tonumber(c), tonumber(u)
    end
end
return {now, lu, count, free_at, pending, offences, until_ms}
