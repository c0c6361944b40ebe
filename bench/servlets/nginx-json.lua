-- Scenario 10, nginx: n generated items as JSON, with cjson when the
-- module has it, else built as strings (LuaJIT compiles the loop); sent
-- with its length, as the others.
local ok, cjson = pcall(require, "cjson")
local n = tonumber(ngx.var.arg_n) or 100
local body
if ok then
  local items = {}
  for i = 1, n do
    items[i] = { id = i, name = "item " .. i, price = i * 3 + 0.25, tags = { "a", "b" } }
  end
  body = cjson.encode(items)
else
  local out = {}
  for i = 1, n do
    out[i] = '{"id":' .. i .. ',"name":"item ' .. i .. '","price":' .. (i * 3 + 0.25) .. ',"tags":["a","b"]}'
  end
  body = "[" .. table.concat(out, ",") .. "]"
end
ngx.header["Content-Type"] = "application/json"
ngx.header["Content-Length"] = #body
ngx.print(body)
