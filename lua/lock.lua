-- lock.lua - when one lock ends, read as decide.lua reads it: for the
-- seed's keys on a Redis Cluster, whose window and lock live in different
-- slots, so that no script can hold both.
--
-- KEYS: lock key.
-- ARGV: now_ms ("" = use Redis TIME).
-- Returns: now_ms, lock_until_ms (0 = none).
return {now, lock_until(KEYS[1])}
