-- Scenario 10, brisk: n generated items as JSON (brisk.json.encode).
function handle_request(req, res)
  local n = tonumber(req.args.n) or 100
  local items = {}
  for i = 1, n do
    items[i] = { id = i, name = "item " .. i, price = i * 3 + 0.25, tags = { "a", "b" } }
  end
  res:write(200, {["Content-Type"] = "application/json"}, brisk.json.encode(items))
end
