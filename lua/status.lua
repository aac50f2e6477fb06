-- status.lua - one identity's state, read only.
--
-- KEYS: window key, lock key.
-- ARGV: now_ms ("" = use Redis TIME), limit, window_ms.
-- Returns: now_ms, lock_until_ms, in_window, free_at_ms (see decide.lua for
-- the data model; hits with score <= now - window are not counted).
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local wk, lk = KEYS[1], KEYS[2]
local low = '(' .. ms(now - window)

local lu = lock_until(lk)
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
return {now, lu, count, free_at}
