-- settle.lua - settles a reservation (decide.lua with a ttl took it):
-- a hit at the moment it was taken when the attempt failed or the
-- reservation's end has come (suspect_policy_settle_counts()), else dropped.  A reservation no
-- longer there (reset, or already moved into the window) is left alone.
--
-- KEYS, per identity: window key, reservations key.
-- ARGV: now_ms ("" = use Redis TIME), window_ms, the reservation's member
--       ("<taken at ms>:<member>"), its end (ms), failed (0/1).
-- Returns: the reservations settled (one per identity that still had it).
local window = tonumber(ARGV[2])
local member = ARGV[3]
local resv_end = tonumber(ARGV[4])
local failed = ARGV[5] == '1'
local at = string.match(member, '^(%d+):')
local settled = 0

for i = 1, #KEYS / 2 do
    local wk, sk = KEYS[2 * i - 1], KEYS[2 * i]
    if redis.call('ZREM', sk, member) == 1 then
        settled = settled + 1
        if at and (failed or resv_end <= now) then
            redis.call('ZADD', wk, at, member)
            if redis.call('PTTL', wk) < window + SLACK then
                redis.call('PEXPIRE', wk, ms(window + SLACK))
            end
        end
    end
end
return settled
