-- wrk script: each request counts against one of 100,000 member codes,
-- so the store sees many identities and nobody reaches the limit.
math.randomseed(os.time())
request = function()
   return wrk.format(nil, nil, {["X-Member"] = tostring(math.random(1, 100000))})
end
