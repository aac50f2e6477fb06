-- settle.lua - settles a slot in flight (decide.lua with a ttl took it):
-- a hit at the moment it was taken when the attempt failed or the slot's
-- end has come (suspect_policy_settle_counts()), else dropped.  A slot no
-- longer there (reset, or already moved into the window) is left alone.
--
-- KEYS, per identity: window key, slots key.
-- ARGV: now_ms ("" = use Redis TIME), window_ms, the slot's member
--       ("<taken at ms>:<member>"), its end (ms), failed (0/1).
-- Returns: the slots settled (one per identity that still had it).
local window = tonumber(ARGV[2])
local slot = ARGV[3]
local slot_end = tonumber(ARGV[4])
local failed = ARGV[5] == '1'
local at = string.match(slot, '^(%d+):')
local settled = 0

for i = 1, #KEYS / 2 do
    local wk, sk = KEYS[2 * i - 1], KEYS[2 * i]
    if redis.call('ZREM', sk, slot) == 1 then
        settled = settled + 1
        if at and (failed or slot_end <= now) then
            redis.call('ZADD', wk, at, slot)
            if redis.call('PTTL', wk) < window + SLACK then
                redis.call('PEXPIRE', wk, ms(window + SLACK))
            end
        end
    end
end
return settled
