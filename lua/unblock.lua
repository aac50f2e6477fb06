-- unblock.lua - lets one identity in on its next request: drops its lock
-- and, when its window is full, its oldest hits, so that limit - 1 remain
-- and the next hit fits (a lock-out action would lock it again at once
-- otherwise).  The other hits stay: it is not a reset.  Hits that have
-- left the window go too: they count for nobody here, and a .NET host
-- whose clock runs a little behind might still count them.
--
-- KEYS: window key, lock key (the seed's or the typed format's; a lock
-- the .NET system wrote is dropped alike).  The lock key is absent when
-- the lock lives in another slot (the seed's keys on a Redis Cluster): the
-- caller reads and drops it there.
-- ARGV: now_ms ("" = use Redis TIME), limit, window_ms.
-- Returns: now_ms, the end of the live lock dropped (0 = none), hits
-- dropped from the window, hits kept in it.
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local wk, lk = KEYS[1], KEYS[2]
local cut = ms(now - window)

local lu = 0
if lk then
    lu = lock_until(lk)
    if lu <= now then
        lu = 0
    end
    redis.call('DEL', lk)
end

local count = redis.call('ZCOUNT', wk, '(' .. cut, '+inf')
local old = redis.call('ZCOUNT', wk, '-inf', cut)
local dropped = 0
if count >= limit then
    dropped = count - limit + 1
end
if old + dropped > 0 then
    redis.call('ZREMRANGEBYRANK', wk, 0, old + dropped - 1)
end
return {now, lu, dropped, count - dropped}
