local greeting, state = "hi", "not initialized"
function handler_init(cfg)
  -- cfg.config is [servlets] config; cfg.root and cfg.url say where.
  greeting = cfg.config.greeting or greeting
  state = "initialized"
end
function handle_request(req, res)
  res:write(200, {["Content-Type"] = "text/plain"},
            greeting .. "! I am a servlet and my state is " .. state .. "\n")
end
