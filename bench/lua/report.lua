-- Appended to every scenario script: prints wrk's results as one JSON line
-- (prefixed "WRKJSON ") so that bench/run does not have to parse the text.
function done(summary, latency, requests)
   local e = summary.errors
   io.write(string.format(
      'WRKJSON {"requests":%d,"duration_us":%d,"bytes":%d,"connect":%d,' ..
      '"read":%d,"write":%d,"status":%d,"timeout":%d,' ..
      '"p50_us":%d,"p99_us":%d,"max_us":%d}\n',
      summary.requests, summary.duration, summary.bytes, e.connect,
      e.read, e.write, e.status, e.timeout,
      latency:percentile(50), latency:percentile(99), latency.max))
end
