-- post.lua - wrk script: POST the chat request in $BENCH_BODY_FILE and
-- print one JSON line of results at the end (bench/run.sh reads it).
-- Headers (Authorization, Portkey's) come from wrk -H on the command line.

local f = assert(io.open(os.getenv("BENCH_BODY_FILE"), "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"

function done(summary, latency, requests)
	local s = summary.duration / 1e6
	local e = summary.errors
	io.write(string.format(
		'BENCH_JSON {"requests":%d,"seconds":%.3f,"req_per_s":%.1f,' ..
		'"bytes":%d,"connect_errors":%d,"read_errors":%d,' ..
		'"write_errors":%d,"timeouts":%d,"non2xx":%d,' ..
		'"lat_p50_ms":%.3f,"lat_p90_ms":%.3f,"lat_p99_ms":%.3f,' ..
		'"lat_mean_ms":%.3f}\n',
		summary.requests, s, summary.requests / s, summary.bytes,
		e.connect, e.read, e.write, e.timeout, e.status,
		latency:percentile(50) / 1e3, latency:percentile(90) / 1e3,
		latency:percentile(99) / 1e3, latency.mean / 1e3))
end
