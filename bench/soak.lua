-- wrk script of bench/soak: a mix of identities, and a request count.
--
--   wrk -tTHREADS -s soak.lua URL -- REQUESTS PATH THREADS DONEFILE
--
-- Each thread stops after its share of REQUESTS responses and appends a
-- line to DONEFILE (wrk itself runs for its -d: the caller sends it
-- SIGINT once DONEFILE has a line per thread).  The requests
-- follow examples/suspect.xml's routes on PATH (/app.cgi or /index.php):
--   80%  promotion lookups of 100,000 members (10 a minute each): allowed
--   10%  the same lookups by 5 scrapers: mostly 429 (over the limit)
--   10%  sign-ins to 50 accounts with a wrong password: after 2, each
--        account is locked for a day (block-lock): 429
-- done() prints one line, "soak-status 2xx 429 other-4xx 5xx errors".
local threads = {}

function setup(thread)
   thread:set("id", #threads + 1)
   table.insert(threads, thread)
end

function init(args)
   limit = math.ceil(tonumber(args[1]) / tonumber(args[3]))
   path = args[2]
   donefile = args[4]
   seen, ok, denied, client, server = 0, 0, 0, 0, 0
   math.randomseed(os.time() * 100 + id)
   form = {["Content-Type"] = "application/x-www-form-urlencoded"}
end

function request()
   local r = math.random(100)
   if r <= 80 then
      return wrk.format("GET", path .. "?op=promo&member=m" ..
                           math.random(1, 100000) .. "&code=SPRING")
   elseif r <= 90 then
      return wrk.format("GET", path .. "?op=promo&member=scraper" ..
                           math.random(1, 5) .. "&code=SPRING")
   end
   return wrk.format("POST", path .. "?op=login", form,
                     "member=victim" .. math.random(1, 50) .. "&password=x")
end

function response(status, headers, body)
   seen = seen + 1
   if status == 429 then
      denied = denied + 1
   elseif status >= 500 then
      server = server + 1
   elseif status >= 400 then
      client = client + 1
   else
      ok = ok + 1
   end
   if seen == limit then
      local f = io.open(donefile, "a")
      f:write("done\n")
      f:close()
      wrk.thread:stop()
   end
end

function done(summary, latency, requests)
   local t = {0, 0, 0, 0}
   for _, thread in ipairs(threads) do
      t[1] = t[1] + thread:get("ok")
      t[2] = t[2] + thread:get("denied")
      t[3] = t[3] + thread:get("client")
      t[4] = t[4] + thread:get("server")
   end
   local e = summary.errors
   io.write(string.format("soak-status %d %d %d %d %d\n", t[1], t[2], t[3],
                          t[4], e.connect + e.read + e.write + e.timeout))
end
