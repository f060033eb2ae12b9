#!/bin/bash
# rtt.sh - quick round trip: N sequential non-streamed requests straight to
# the OpenRouter double and through lighttpd + orgw, alternated in rounds of
# 25 (bench/seq.mjs), plus the memory of each idle worker.  A smaller,
# faster companion to run.sh for checking one change.
#
#   bash bench/rtt.sh            # 4 workers, 100 requests per path
#   ORGW_WORKERS=256 ROUNDS=8 bash bench/rtt.sh
set -u
cd "$(dirname "$0")/.." || exit 1
. tests/lib.sh

ROUNDS=${ROUNDS:-4}
ORGW_WORKERS=${ORGW_WORKERS:-4} orgw_start
cat >"$ORGW_T/targets.json" <<J
{"body": {"model": "deepseek/deepseek-v3.2", "max_tokens": 64,
          "messages": [{"role": "system", "content": "be brief"},
                       {"role": "user", "content": "hi"}]},
 "targets": [
  {"name": "direct", "url": "$DOUBLE_URL/api/v1/chat/completions",
   "headers": {"Authorization": "Bearer $UPSTREAM_KEY"}},
  {"name": "orgw", "url": "$ORGW_URL/v1/chat/completions",
   "headers": {"Authorization": "Bearer $ORGW_KEY"}}]}
J
out=$(node bench/seq.mjs --targets "$ORGW_T/targets.json" --warmup 15 \
	--rounds "$ROUNDS" --per_round 25) || exit 1
json_get "$out" '`sequential, ${j.targets.orgw.n} requests per path: direct ${j.targets.direct.median_ms} ms, orgw ${j.targets.orgw.median_ms} ms, added ${(j.targets.orgw.median_ms - j.targets.direct.median_ms).toFixed(3)} ms (median of round medians)`'
echo
for p in $(orgw_worker_pids); do
	awk '/^(Rss|Pss|Private_Dirty):/ { printf "%s %.2f MiB  ", $1, $2 / 1024 }
		END { print "" }' "/proc/$p/smaps_rollup"
done | sed 's/^/idle worker: /'
