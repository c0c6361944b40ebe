-- Requests one of N files at random: /<dir>/<prefix><index><suffix>.
-- Arguments: N, format string (e.g. "/small/f%04d.html").
-- The request strings are built once in init(), so picking one costs wrk
-- a single table lookup per request.
local reqs = {}
local n = 0

function init(args)
   n = tonumber(args[1])
   local fmt = args[2]
   for i = 1, n do
      reqs[i] = wrk.format("GET", string.format(fmt, i - 1))
   end
   math.randomseed(os.time() + (tonumber(tostring({}):match("0x(%x+)"), 16) or 0) % 1000)
end

function request()
   return reqs[math.random(n)]
end
