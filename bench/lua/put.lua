-- PUT of a 1 MiB body to N names under the path given to wrk, in turn, each
-- replacing the last one's file (bench/dav scenario 2). Arguments: N.
local names, i = 20, 0
local body = string.rep("0123456789abcdef", 65536)

function init(args)
   names = tonumber(args[1]) or names
end

function request()
   i = i % names + 1
   return wrk.format("PUT", wrk.path .. string.format("f%02d.bin", i),
                     {["Content-Type"] = "application/octet-stream"}, body)
end
