-- Scenario 10, lighttpd mod_magnet (no JSON library): n generated items
-- built as strings.
local r = lighty.r
local q = r.req_attr["uri.query"] or ""
local n = tonumber(q:match("n=(%d+)")) or 100
local out = {}
for i = 1, n do
  out[i] = '{"id":' .. i .. ',"name":"item ' .. i .. '","price":' .. (i * 3 + 0.25) .. ',"tags":["a","b"]}'
end
r.resp_header["Content-Type"] = "application/json"
r.resp_body:set({ "[", table.concat(out, ","), "]" })
return 200
