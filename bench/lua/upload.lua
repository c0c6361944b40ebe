-- POSTs a body of SIZE bytes to the scenario's path, over and over.
-- Arguments: SIZE.
function init(args)
   wrk.method = "POST"
   wrk.body = string.rep("b", tonumber(args[1]))
   wrk.headers["Content-Type"] = "application/octet-stream"
end
