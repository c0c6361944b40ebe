-- Sends DEPTH requests for PATH back to back on each connection, then
-- waits for all DEPTH answers before sending the next batch.
-- Arguments: DEPTH, PATH.
local batch

function init(args)
   local depth = tonumber(args[1])
   local path = args[2]
   local one = wrk.format("GET", path)
   local t = {}
   for i = 1, depth do
      t[i] = one
   end
   batch = table.concat(t)
end

function request()
   return batch
end
