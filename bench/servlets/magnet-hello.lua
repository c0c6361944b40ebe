-- Scenario 9, lighttpd mod_magnet: the same answer.
local r = lighty.r
r.resp_header["Content-Type"] = "text/plain"
r.resp_body:set({ "hello! I am a servlet and my state is initialized\n" })
return 200
