-- PROPFIND Depth: 1 of the path given to wrk, allprop (bench/dav scenario 1).
wrk.method = "PROPFIND"
wrk.headers["Depth"] = "1"
wrk.headers["Content-Type"] = "application/xml"
wrk.body = '<?xml version="1.0" encoding="utf-8"?>'
   .. '<D:propfind xmlns:D="DAV:"><D:allprop/></D:propfind>'
