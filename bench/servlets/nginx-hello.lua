-- Scenario 9, nginx (content_by_lua_file): the same answer, with its
-- length (as brisk's and lighttpd's), rather than chunked.
local body = "hello! I am a servlet and my state is initialized\n"
ngx.header["Content-Type"] = "text/plain"
ngx.header["Content-Length"] = #body
ngx.print(body)
