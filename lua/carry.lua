-- carry.lua - writes back what a host decided on its own while Redis was
-- unreachable (the failover wrapper's fail mode "local"), atomically.
--
-- KEYS: window key 1, lock key 1, window key 2, lock key 2, ...
-- ARGV: now_ms ("" = use Redis TIME), then per identity: its lock value
--       (the identity), and "<lock_until> <window_ms> <t> <member> ..."
--       (lock_until 0 = no lock; then the hits admitted at t, each with
--       the unique member the host drew for it).
-- Returns: locks written, hits added.
--
-- A lock is written only when it ends after the lock Redis holds (read as
-- common.lua reads it): carrying back never shortens a lock.  Its value
-- carries its end and its TTL is what is left of it.  Hits still in their
-- window are added with their own times; members are fixed by the host, so
-- sending the same hits twice (a retry after a timeout) counts them once.
-- The window's TTL is raised, never lowered, to outlive the newest hit.
local locks, hits = 0, 0

for i = 1, #KEYS / 2 do
    local wk, lk = KEYS[2 * i - 1], KEYS[2 * i]
    local next_field = string.gmatch(ARGV[2 * i + 1], '%S+')
    local lu = tonumber(next_field())
    local window = tonumber(next_field())
    if lu > now and lu > lock_until(lk) then
        redis.call('SET', lk, ARGV[2 * i] .. '|until=' .. ms(lu), 'PX',
                   ms(lu - now))
        locks = locks + 1
    end
    local newest = 0
    for t in next_field do
        local member = next_field()
        t = tonumber(t)
        if t > now - window then
            hits = hits + redis.call('ZADD', wk, ms(t), member)
            if t > newest then
                newest = t
            end
        end
    end
    if newest > 0 then
        local keep = newest + window + SLACK - now
        if redis.call('PTTL', wk) < keep then
            redis.call('PEXPIRE', wk, ms(keep))
        end
    end
end
return {locks, hits}
