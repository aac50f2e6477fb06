-- status.lua - one identity's state, read only.
--
-- KEYS: window key, lock key.
-- ARGV: now_ms ("" = use Redis TIME), limit, window_ms.
-- Returns: now_ms, lock_until_ms, in_window, free_at_ms (see decide.lua for
-- the data model; hits with score <= now - window are not counted).
local now = tonumber(ARGV[1])
if now == nil then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local wk, lk = KEYS[1], KEYS[2]
local low = '(' .. string.format('%.0f', now - window)

local lu = 0
local v = redis.call('GET', lk)
if v then
    local e = string.match(v, '|until=(%d+)$')
    if e then
        lu = tonumber(e)
    else
        local ttl = redis.call('PTTL', lk)
        if ttl == -1 then
            lu = now + 31536000000
        elseif ttl > 0 then
            lu = now + ttl
        end
    end
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
return {now, lu, count, free_at}
