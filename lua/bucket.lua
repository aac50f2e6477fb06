-- bucket.lua - the token bucket and the two-window sliding counter
-- (policy/meter.c) of metered rules, atomically, for every identity of a
-- request at once; the meter's side of decide.lua, settle.lua,
-- status.lua, unblock.lua and carry.lua.
--
-- Mirrors suspect_meter_read/take/give/make_room/end_ms() (policy/
-- meter.c) and, for the decision, suspect_policy_evaluate() (policy/
-- evaluate.c) with no reservations: a metered reservation takes its
-- cost at once and a success gives it back.  The C side (policy/redis/
-- redismeter.c) runs meter.c and the evaluator again on the meters this
-- script read and wrote and refuses the answer on any difference, so the
-- two can never silently drift apart.  Numbers are doubles here: every
-- value stays under 2^53 (meter.c), where they are exact, and the
-- quotients, floored, are then exact too.
--
-- Data model, per identity (decide.lua has the rest):
--   lock     = the log's lock key, unchanged ("<identity>|until=<ms>");
--   offences = the log's offences key, unchanged;
--   meter    = the window key + ":tb" (bucket) or ":sc" (counter): a
--              string, "<at>" for a bucket (epoch us when it is full
--              again), "<at> <cur> <prev>" for a counter (window start in
--              epoch ms, hits in it, hits in the one before), with a TTL
--              of suspect_meter_end_ms() - now + SLACK; absent = empty.
--              On a Redis Cluster whose window key has no hash tag (the
--              seed's keys) it is "{<window>}:tb", in the window's slot.
--   carried  = the meter key + ":carried": the set of the journal members
--              carried into the meter, so that a retry counts them once.
-- The .NET system never reads the meter: it sees the locks only.
--
-- ARGV: now_ms ("" = Redis TIME), op, algorithm (1 bucket, 2 counter),
--       limit, window_ms, capacity, cost, block_ms, block factor x 100
--       (0 = no escalation), block ceiling ms, offence period ms, apart
--       (1: each identity's lock lives in another slot, the caller read
--       it), then per identity one more (below).
-- op "decide" / "read" (the latter takes nothing: a Cluster decision
--       that already has a denial):
--       KEYS per identity: lock, meter, offences (apart: meter, offences);
--       ARGV per identity: the lock's value (apart: the lock's end).
--       Returns now, allowed (0/1), then per identity: lock_until_ms,
--       in_window, free_at_ms, new lock (0 = none), 0, 0 (no reservations in
--       flight), offences, new offences (0 = unchanged), the meter read
--       (at, cur, prev) and the meter after (at, cur, prev).
-- op "give": KEYS the meter keys; ARGV[13] the moment the cost was taken.
--       Returns now, meters given back to.
-- op "status": KEYS lock, meter, offences (apart: meter, offences).
--       Returns now, lock_until_ms (0 = none), at, cur, prev, offences,
--       the moment they are forgotten.
-- op "room" (unblock): KEYS lock, meter (apart: meter).  Drops the lock,
--       makes room for one request.  Returns now, the live lock dropped
--       (0 = none), given back, meter read (at, cur, prev), meter after.
-- op "carry": KEYS per identity meter, carried; ARGV per identity
--       "<t> <units> <member> ...": hits a host admitted at t while Redis
--       was away, each taken at its own time once.  Returns now, hits
--       taken.
-- A number argument costs a strtod() (a microsecond of Redis CPU): the
-- ones a decision does not need are read where they are used, and flags
-- are compared as strings (the C side writes 0 for "none", and a block
-- factor above 100 or 0).
local op = ARGV[2]
local counter = ARGV[3] == '2'
local limit = tonumber(ARGV[4])
local window = tonumber(ARGV[5])
local cap = tonumber(ARGV[6])
local cost = tonumber(ARGV[7])
local blocks = ARGV[8] ~= '0'
local escalates = blocks and ARGV[9] ~= '0'
local apart = ARGV[12] == '1'
local U32 = 4294967295

-- Helpers are closures made on every call: each is made only where it
-- is used (a counter's reads, unblock's room, offences that escalate).
local ceil_div, clamp
if counter or op == 'room' then
    ceil_div = function(a, b)
        if a <= 0 then
            return 0
        end
        return math.floor((a + b - 1) / b)
    end

    clamp = function(v)
        if v <= 0 then
            return 0
        end
        if v >= U32 then
            return U32
        end
        return v
    end
end

local iv = math.floor(window * 1000 / (limit ~= 0 and limit or 1))
if iv < 1 then
    iv = 1
end

-- The meter at k: {at, cur, prev}, zeros when absent.
local function load(k)
    local v = redis.call('GET', k)
    if not v then
        return {0, 0, 0}
    end
    if not counter then
        return {tonumber(v), 0, 0}
    end
    local a, c, p = string.match(v, '^(%-?%d+) (%-?%d+) (%-?%d+)$')
    return {tonumber(a), tonumber(c), tonumber(p)}
end

-- Writes m to k, to live until the meter says nothing any more
-- (suspect_meter_end_ms()) and SLACK after; an empty one is deleted.
local function store(k, m)
    local e
    if not counter then
        e = m[1] > 0 and math.floor((m[1] + 999) / 1000) or 0
    elseif m[2] > 0 then
        e = m[1] + 2 * window
    elseif m[3] > 0 then
        e = m[1] + window
    else
        e = m[1]
    end
    if e <= now then
        redis.call('DEL', k)
        return
    end
    local v = ms(m[1])
    if counter then
        v = v .. ' ' .. ms(m[2]) .. ' ' .. ms(m[3])
    end
    redis.call('SET', k, v, 'PX', ms(e - now + SLACK))
end

-- ---- the counter's windows (made only for a counter) ----

local roll, carried, counter_free_at
if counter then
    roll = function(m, t)
        local k = t - t % window
        if k <= m[1] then
            return
        end
        if k == m[1] + window then
            m[3] = m[2]
        else
            m[3] = 0
        end
        m[2] = 0
        m[1] = k
    end

    carried = function(prev, e)
        if e < 0 then
            e = 0
        end
        return ceil_div(prev * (window - e), window)
    end

    counter_free_at = function(c)
        local r = limit - cost - c[2]
        if r >= 0 and c[3] > 0 then
            return c[1] + window - math.floor(r * window / c[3])
        end
        r = limit - cost
        if r < 0 or c[2] <= 0 then
            return c[1] + window
        end
        return c[1] + window + window - math.floor(r * window / c[2])
    end
end

-- ---- meter.c's interface ----

-- in_window, free_at of m at now
local function read(m)
    if counter then
        local c = {m[1], m[2], m[3]}
        roll(c, now)
        local used = carried(c[3], now - c[1]) + c[2]
        local free_at = 0
        if used + cost > limit then
            free_at = counter_free_at(c)
            if free_at <= now then
                free_at = now + 1
            end
        end
        return clamp(used), free_at
    end
    local debt = m[1] - now * 1000
    if debt <= 0 then
        return 0, 0 -- full (a cost never exceeds the capacity)
    end
    local inw = math.floor((debt + iv - 1) / iv)
    if inw >= U32 then
        inw = U32
    end
    if inw + cost > cap then
        -- the moment the debt is down to (cap - cost) intervals (> 0 here)
        return inw, math.floor((m[1] - (cap - cost) * iv + 999) / 1000)
    end
    return inw, 0
end

local function take(m, at, units)
    if counter then
        local k = at - at % window
        if k >= m[1] then
            roll(m, at)
            m[2] = m[2] + units
        elseif k == m[1] - window then
            m[3] = m[3] + units
        end
        return
    end
    local from = at * 1000
    if m[1] > from then
        from = m[1]
    end
    m[1] = from + units * iv
end

-- ---- locks and offences, as decide.lua keeps them ----

local offences_of
if escalates or op == 'status' then
    offences_of = function(ok)
        local v = redis.call('GET', ok)
        if v then
            local c, u = string.match(v, '^(%d+)|until=(%d+)$')
            if c and tonumber(u) > now then
                return tonumber(c), tonumber(u)
            end
        end
        return 0, 0
    end
end

-- ---- the operations ----

-- The answer is built as it goes: per identity 11 values and the meter
-- (3), read and then, once every identity is allowed, after its take.
local function decide(record)
    local per = apart and 2 or 3
    local n = #KEYS / per
    -- sized for one identity at once (a table that grows is reallocated)
    local res = {now, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
    local meters = {}
    for i = 1, n do
        local lk, mk, ok
        local lu
        if apart then
            mk, ok = KEYS[2 * i - 1], KEYS[2 * i]
            lu = tonumber(ARGV[12 + i])
        else
            lk, mk, ok = KEYS[3 * i - 2], KEYS[3 * i - 1], KEYS[3 * i]
            lu = lock_until(lk)
        end
        local m = load(mk)
        meters[i] = m
        local inw, free_at = read(m)
        local offences = 0
        if escalates then
            offences = offences_of(ok)
        end
        local new_lock, new_offences = 0, 0
        if lu > now then
            res[2] = 0
        elseif inw + cost > cap then
            res[2] = 0
            if blocks then
                local k = 0
                if escalates then
                    k = offences + 1
                end
                local d = lock_ms(k, tonumber(ARGV[8]), tonumber(ARGV[9]),
                                  tonumber(ARGV[10]))
                new_lock = now + d
                if not apart then
                    redis.call('SET', lk, ARGV[12 + i] .. '|until=' ..
                               ms(new_lock), 'PX', ms(d))
                end
                if k > 0 then
                    new_offences = k
                    local period = tonumber(ARGV[11])
                    redis.call('SET', ok, k .. '|until=' ..
                               ms(new_lock + period), 'PX', ms(d + period))
                end
            end
        end
        local o = 14 * i - 12
        res[o + 1] = lu
        res[o + 2] = inw
        res[o + 3] = free_at
        res[o + 4] = new_lock
        res[o + 5] = 0
        res[o + 6] = 0
        res[o + 7] = offences
        res[o + 8] = new_offences
        res[o + 9] = m[1]
        res[o + 10] = m[2]
        res[o + 11] = m[3]
        res[o + 12] = m[1]
        res[o + 13] = m[2]
        res[o + 14] = m[3]
    end
    if res[2] == 1 and record then
        for i = 1, n do
            local m, o = meters[i], 14 * i - 12
            take(m, now, cost)
            store(KEYS[per * i - 1], m)
            res[o + 12] = m[1]
            res[o + 13] = m[2]
            res[o + 14] = m[3]
        end
    end
    return res
end

if op == 'decide' or op == 'read' then
    return decide(op == 'decide')
end

if op == 'give' then
    local function give(m, at, units)
        if counter then
            local k = at - at % window
            local i = 0
            if k == m[1] then
                i = 2
            elseif k == m[1] - window then
                i = 3
            end
            if i > 0 then
                m[i] = m[i] - math.min(m[i], units)
            end
            return
        end
        m[1] = m[1] - units * iv
    end

    local at = tonumber(ARGV[13])
    local done = 0
    for i = 1, #KEYS do
        if redis.call('EXISTS', KEYS[i]) == 1 then
            local m = load(KEYS[i])
            give(m, at, cost)
            store(KEYS[i], m)
            done = done + 1
        end
    end
    return {now, done}
end

if op == 'status' then
    local lu, mk, ok = 0, KEYS[1], KEYS[2]
    if not apart then
        lu = lock_until(KEYS[1])
        mk, ok = KEYS[2], KEYS[3]
        if lu <= now then
            lu = 0
        end
    end
    local m = load(mk)
    local c, u = offences_of(ok)
    return {now, lu, m[1], m[2], m[3], c, u}
end

if op == 'room' then
    local function make_room(m)
        if counter then
            roll(m, now)
            local e = now - m[1]
            if e < 0 then
                e = 0
            end
            local before = carried(m[3], e) + m[2]
            if before + cost <= limit then
                return 0
            end
            local r = limit - cost - m[2]
            if r >= 0 then
                m[3] = math.min(math.floor(r * window / (window - e)), m[3])
            else
                m[3] = 0
                m[2] = math.min(limit - cost, m[2])
            end
            return clamp(before - carried(m[3], e) - m[2])
        end
        local target = now * 1000 + (cap - cost) * iv
        if m[1] <= target then
            return 0
        end
        local given = clamp(ceil_div(m[1] - target, iv))
        m[1] = target
        return given
    end

    local lu, mk = 0, KEYS[1]
    if not apart then
        lu = lock_until(KEYS[1])
        if lu <= now then
            lu = 0
        end
        redis.call('DEL', KEYS[1])
        mk = KEYS[2]
    end
    local m = load(mk)
    local before = {m[1], m[2], m[3]}
    local given = make_room(m)
    if given > 0 then
        store(mk, m)
    end
    return {now, lu, given, before[1], before[2], before[3], m[1], m[2], m[3]}
end

if op == 'carry' then
    local taken = 0
    for i = 1, #KEYS / 2 do
        local mk, ck = KEYS[2 * i - 1], KEYS[2 * i]
        local m = load(mk)
        local next_field = string.gmatch(ARGV[12 + i], '%S+')
        local any = false
        for t in next_field do
            local units = tonumber(next_field())
            local member = next_field()
            t = tonumber(t)
            if redis.call('SADD', ck, member) == 1 then
                take(m, t, units)
                taken = taken + 1
                any = true
            end
        end
        if any then
            store(mk, m)
            redis.call('PEXPIRE', ck,
                       ms(math.max(2 * window, cap * iv / 1000) + SLACK))
        end
    end
    return {now, taken}
end

return redis.error_reply('bucket.lua: unknown op ' .. tostring(op))
