#!/bin/bash
# t0700-soak-short: the two soaks, short.
#  1. tests/soak.sh for 10 s, with a kill every 3 s and a scoring
#     run every 2 s so the short run still sees several of each: 64
#     OpenAI-SDK clients, streaming and not, the double drawing
#     429/503/reset/cut/slow faults; 0 broken outside killed workers, 0 hung,
#     state readable, /stats equal to the completed requests.
#  2. tests/soak-long.sh (SOAK_MODE=long) for 30 s: 8 clients,
#     requests of 2-10 s streamed and not, some left early, a worker killed
#     every 12 s (two kills), PSS sampled every 3 s; every answer checked word
#     by word, 0 hung, 0 broken outside the killed workers, /stats exact apart
#     from the requests the kills cut.
#  3. tests/soak-attacks.sh (SOAK_MODE=attacks) for 12 s: 8 clients beside
#     non-reading /metrics clients (each holds its socket 6 s and comes
#     back: two rounds), invented model ids and key guessing, every normal
#     request served, /healthz always 200, /stats exact.
d=$(dirname "$0")/..
rc=0
SOAK_SECONDS=${SOAK_SECONDS:-10} SOAK_KILL_EVERY_MS=${SOAK_KILL_EVERY_MS:-3000} \
	SOAK_SCORE_EVERY_MS=${SOAK_SCORE_EVERY_MS:-2000} bash "$d/soak.sh" || rc=1
SOAK_MODE=long SOAK_SECONDS=${SOAK_LONG_SECONDS:-30} SOAK_CLIENTS=8 \
	SOAK_LEN_MIN_S=2 SOAK_LEN_MAX_S=10 SOAK_KILL_EVERY_MS=12000 \
	SOAK_SAMPLE_EVERY_MS=3000 bash "$d/soak.sh" || rc=1
SOAK_MODE=attacks SOAK_SECONDS=${SOAK_ATTACK_SECONDS:-12} bash "$d/soak.sh" || rc=1
exit $rc
