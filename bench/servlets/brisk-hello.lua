-- Scenario 9, brisk: the Gerbil httpd's example servlet as written.
local state = "not initialized"
function handler_init(cfg) state = "initialized" end
function handle_request(req, res)
  res:write(200, {["Content-Type"] = "text/plain"},
            "hello! I am a servlet and my state is " .. state .. "\n")
end
