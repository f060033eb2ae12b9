#!/bin/bash
# t0700-soak-short: the soak of tests/soak.sh for 10 s (issue 7), with a
# kill every 3 s and a scoring run every 2 s so the short run still sees
# several of each: 64 OpenAI-SDK clients, streaming and not, the double
# drawing 429/503/reset/cut/slow faults; 0 broken outside killed workers,
# 0 hung, state readable, /stats equal to the completed requests.
export SOAK_SECONDS=${SOAK_SECONDS:-10}
export SOAK_KILL_EVERY_MS=${SOAK_KILL_EVERY_MS:-3000}
export SOAK_SCORE_EVERY_MS=${SOAK_SCORE_EVERY_MS:-2000}
exec bash "$(dirname "$0")/../soak.sh"
