#!/bin/bash
# t0440-off-pin: the response's provider (a display name) is compared with
# the pinned endpoint's provider_name; a mismatch is counted (off_pin) and
# logged, and the response is still relayed.
. "$(dirname "$0")/../lib.sh"

orgw_start
M=acme/off-pin-model
out=$(orgw_chat --model $M)
t_eq "served by the pinned provider: no off-pin" "true Alpha" \
	"$(json_get "$out" 'j.ok + " " + j.provider')"
# Same tag, but now another provider answers for it.
ep=$(json_get "$(curl -sS -H "Authorization: Bearer $UPSTREAM_KEY" \
	"$DOUBLE_URL/api/v1/models/$M/endpoints")" \
	'j.data.endpoints.map(e => e.tag === "alpha" ? {...e, provider_name: "Impostor"} : e)')
double_ctl PUT "endpoints/$M" "$ep" >/dev/null
out=$(orgw_chat --model $M --stream)
t_eq "an off-pin answer is still relayed" "true true Impostor" \
	"$(json_get "$out" 'j.ok + " " + j.done + " " + j.provider')"
orgw_http GET /stats
t_eq "/stats: off_pin counted once" 1 "$(json_get "$HTTP_BODY" "j.models['$M'].off_pin")"
t_match "the mismatch is logged" 'off-pin: model=acme/off-pin-model pinned=alpha served=Impostor' \
	"$(cat "$ORGW_LOG")"
