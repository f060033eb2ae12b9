#!/bin/bash
# t0676-team-keys-bad-flood: a thousand wrong team keys, each from its own
# loopback address (so the per-address guard never answers for them), at
# once from 64 connections: each gets the same 401, the state and the keys
# store are left byte for byte as they were (a refused key makes no write
# transaction: no file, twin or lock changes), and a real key keeps being
# served while they come.  The flood's rate and the good key's answers
# during it go out as "# " lines.
. "$(dirname "$0")/../lib.sh"

SCORER=${ORGW_SCORE_BIN:-$ORGW_ROOT/scheduler/orgw-score}
[[ $SCORER == /* ]] || SCORER=$ORGW_ROOT/$SCORER
M=deepseek/deepseek-v3.2
N=1000

orgw_start KEYS_SECRET=t0676-team-keys-secret-0123456789
GOOD=$("$SCORER" --config "$ORGW_CONFIG_FILE" key add good 2>/dev/null)
t_match "a good key made" '^orgw-[A-Za-z0-9_-]{43}$' "$GOOD"
BODY="{\"model\":\"$M\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
HTTP_KEY=$GOOD orgw_http POST /v1/chat/completions "$BODY"
t_eq "the good key is served" 200 "$HTTP_STATUS"
orgw_stats_settle "$M" 1

sums() { # the store's files, with their sizes and contents
	local f
	for f in "$ORGW_STATE" "$ORGW_STATE".twin "$ORGW_T"/keys.gdbm \
		"$ORGW_T"/keys.gdbm.twin; do
		[ -e "$f" ] && printf '%s %s\n' "$f" "$(md5sum <"$f")"
	done
}
before=$(sums)
t_match "the state and the keys store exist" 'keys.gdbm ' "$before"
# The good key's pace alone, to set beside its pace during the flood.
q0=$(date +%s%N)
for _ in $(seq 30); do HTTP_KEY=$GOOD orgw_http POST /v1/chat/completions "$BODY"; done
quiet_ms=$((($(date +%s%N) - q0) / 30000000))

# Wrong keys of a team key's shape (the lookup runs for them), the
# i-th from 127.0.(i/250+1).(i%250+1).
node -e '
const n = Number(process.argv[1]);
const a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
for (let i = 0; i < n; i++) {
  let k = "orgw-";
  for (let j = 0; j < 43; j++) k += a[Math.floor(Math.random() * 64)];
  console.log(`127.0.${Math.floor(i / 250) + 1}.${(i % 250) + 1} ${k}`);
}' "$N" >"$ORGW_T/bad"
# ADDRESS KEY lines on stdin: one POST each, 64 at once (node's http,
# each from its own local address); each status on stdout.
bad() {
	node -e '
const http = require("http");
const lines = require("fs").readFileSync(0, "utf8").trim().split("\n");
const url = new URL(process.argv[1] + "/v1/chat/completions");
const body = process.argv[2];
let next = 0;
const out = [];
function one() {
  if (next >= lines.length) return Promise.resolve();
  const [addr, key] = lines[next++].split(" ");
  return new Promise((done) => {
    const rq = http.request({ host: url.hostname, port: url.port,
      path: url.pathname, method: "POST", localAddress: addr,
      agent: false, headers: { Authorization: `Bearer ${key}`,
        "Content-Type": "application/json",
        "Content-Length": Buffer.byteLength(body) } }, (rs) => {
      rs.resume();
      rs.on("end", () => { out.push(rs.statusCode); done(); });
    });
    rq.on("error", (e) => { out.push(`error ${e.code}`); done(); });
    rq.end(body);
  }).then(one);
}
Promise.all(Array.from({ length: 64 }, one)).then(() =>
  process.stdout.write(out.join("\n") + "\n"));' "$ORGW_URL" "$BODY"
}
t0=$(date +%s%N)
bad <"$ORGW_T/bad" >"$ORGW_T/bad.codes" &
flood=$!
# A real key's requests while the flood runs.
good=0 goodn=0
while kill -0 "$flood" 2>/dev/null; do
	HTTP_KEY=$GOOD orgw_http POST /v1/chat/completions "$BODY"
	goodn=$((goodn + 1))
	[ "$HTTP_STATUS" = 200 ] && good=$((good + 1))
done
wait "$flood"
t1=$(date +%s%N)
busy_ms=$(((t1 - t0) / 1000000 / (goodn > 0 ? goodn : 1)))
ms=$(((t1 - t0) / 1000000))
codes=$(sort "$ORGW_T/bad.codes" | uniq -c | awk '{print $2 "x" $1}' | tr '\n' ' ')
t_eq "every wrong key got 401 (codes: $codes)" "401x$N " "$codes"
printf '# %d wrong keys in %d ms (%d a second), 64 at once; the good key: %d of %d served during it, %d ms each (%d ms each alone)\n' \
	"$N" "$ms" "$((N * 1000 / (ms > 0 ? ms : 1)))" "$good" "$goodn" "$busy_ms" "$quiet_ms"
t_check "the good key was served throughout ($good of $goodn)" test "$good" = "$goodn" -a "$goodn" -gt 0
t_eq "no wrong key was held by the per-address guard" 0 "$(grep -c 'held addr' "$ORGW_LOG")"
# The good key's requests wrote (they are counted); take the sums again
# after them and check a second flood alone changes nothing.
orgw_stats_settle "$M" $((31 + goodn))
sleep 1
before=$(sums)
head -n 200 "$ORGW_T/bad" | sed 's/^127\.0\./127.1./' | bad >/dev/null
after=$(sums)
t_eq "200 wrong keys alone: the state, the keys store and their twins unchanged" "$before" "$after"
cut -d' ' -f2 "$ORGW_T/bad" >"$ORGW_T/bad.keys"
t_eq "the wrong keys are in no log line" 0 \
	"$(cat "$ORGW_LOG" "$ORGW_LIGHTTPD_LOG" | grep -c -F -f "$ORGW_T/bad.keys")"
