#!/bin/bash
# t0350-crontab: deploy/crontab holds one valid job line: five time fields
# meaning "every 3 hours" (0 */3 * * *), and a command that sh accepts,
# runs orgw-score with ORGW_CONFIG under `flock -n` and appends its output
# to a log.  Then the line is run for real (paths swapped for the test's):
# it scores and logs, and with the flock held it does nothing.
#
#   ORGW_SCORE_BIN   the scorer binary (default scheduler/orgw-score)
. "$(dirname "$0")/../lib.sh"

SCORER=${ORGW_SCORE_BIN:-$ORGW_ROOT/scheduler/orgw-score}
[[ $SCORER == /* ]] || SCORER=$ORGW_ROOT/$SCORER
CRONTAB=$ORGW_ROOT/deploy/crontab

t_check "deploy/crontab exists" test -f "$CRONTAB"

# Job lines: not blank, not a comment, not a NAME=value environment line.
mapfile -t jobs < <(grep -vE '^[[:space:]]*(#|$)' "$CRONTAB" |
	grep -vE '^[[:space:]]*[A-Za-z_][A-Za-z0-9_]*[[:space:]]*=')
t_eq "exactly one job line" 1 "${#jobs[@]}"
line=${jobs[0]}
read -r f1 f2 f3 f4 f5 cmd <<<"$line"

# field VALUE MIN MAX: one crontab(5) time field (lists, ranges, steps, *).
field_ok() {
	local v=$1 min=$2 max=$3 item range step a b
	[ -n "$v" ] || return 1
	IFS=, read -ra items <<<"$v"
	for item in "${items[@]}"; do
		range=${item%%/*}
		step=
		[[ $item == */* ]] && step=${item#*/}
		if [ -n "$step" ]; then
			[[ $step =~ ^[0-9]+$ ]] && [ "$step" -ge 1 ] && [ "$step" -le "$max" ] || return 1
		fi
		[ "$range" = '*' ] && continue
		if [[ $range =~ ^([0-9]+)-([0-9]+)$ ]]; then
			a=${BASH_REMATCH[1]} b=${BASH_REMATCH[2]}
		elif [[ $range =~ ^[0-9]+$ ]]; then
			a=$range b=$range
		else
			return 1
		fi
		[ $((10#$a)) -ge "$min" ] && [ $((10#$b)) -le "$max" ] && [ $((10#$a)) -le $((10#$b)) ] || return 1
	done
}
t_check "minute field '$f1' is valid (0-59)" field_ok "$f1" 0 59
t_check "hour field '$f2' is valid (0-23)" field_ok "$f2" 0 23
t_check "day-of-month field '$f3' is valid (1-31)" field_ok "$f3" 1 31
t_check "month field '$f4' is valid (1-12)" field_ok "$f4" 1 12
t_check "day-of-week field '$f5' is valid (0-7)" field_ok "$f5" 0 7
t_eq "the schedule is every 3 hours on the hour" "0 */3 * * *" "$f1 $f2 $f3 $f4 $f5"

# expand VALUE MIN MAX: the values a valid field selects, space-separated.
expand() {
	local v=$1 min=$2 max=$3 item range step a b i out=
	IFS=, read -ra items <<<"$v"
	for item in "${items[@]}"; do
		range=${item%%/*}
		step=1
		[[ $item == */* ]] && step=${item#*/}
		if [ "$range" = '*' ]; then
			a=$min b=$max
		elif [[ $range =~ ^([0-9]+)-([0-9]+)$ ]]; then
			a=${BASH_REMATCH[1]} b=${BASH_REMATCH[2]}
		else
			a=$range b=$range
			[[ $item == */* ]] && b=$max
		fi
		for ((i = 10#$a; i <= 10#$b; i += step)); do
			out="$out $i"
		done
	done
	echo $out
}
t_eq "it fires at these hours: 8 runs a day" "0 3 6 9 12 15 18 21" "$(expand "$f2" 0 23)"
t_eq "on minute 0 only" "0" "$(expand "$f1" 0 59)"
t_eq "every day" 31 "$(expand "$f3" 1 31 | wc -w)"

t_check "the command is valid sh (sh -n)" sh -n -c "$cmd"
t_match "it sets ORGW_CONFIG" '(^|[[:space:]])ORGW_CONFIG=/[^[:space:]]+' "$cmd"
t_match "it runs under flock -n with a lock file" 'flock -n /[^[:space:]]+' "$cmd"
t_match "it runs orgw-score by absolute path" 'flock -n [^[:space:]]+ /[^[:space:]]*/orgw-score([[:space:]]|$)' "$cmd"
t_match "it appends stdout and stderr to a log" '>>[[:space:]]*/[^[:space:]]+[[:space:]]+2>&1$' "$cmd"
t_check "no '%' in the command (cron would turn it into a newline)" \
	bash -c '! grep -q "%" <<<"$1"' _ "$cmd"
lockf=$(sed -nE 's/.*flock -n ([^[:space:]]+).*/\1/p' <<<"$cmd")
t_check "the flock file is not the state store's own lock (*.gdbm.lock)" \
	bash -c '[[ $1 != *.gdbm.lock && $1 != *state*.lock ]]' _ "$lockf"
t_check "crontab(1) would accept the file (it ends with a newline)" \
	test "$(tail -c 1 "$CRONTAB" | od -An -c | tr -d ' ')" = '\n'

# --- run the line for real ----------------------------------------------------
orgw_start TARGET_MODEL=cron/one,cron/two
conf=$(sed -nE 's/.*ORGW_CONFIG=([^[:space:]]+).*/\1/p' <<<"$cmd")
bin=$(sed -nE 's/.*flock -n [^[:space:]]+ ([^[:space:]]+).*/\1/p' <<<"$cmd")
logf=$(sed -nE 's/.*>>[[:space:]]*([^[:space:]]+).*/\1/p' <<<"$cmd")
run=${cmd//"$conf"/"$ORGW_CONFIG_FILE"}
run=${run//"$lockf"/"$ORGW_T/orgw-score.lock"}
run=${run//"$bin"/"$SCORER"}
run=${run//"$logf"/"$ORGW_T/orgw-score.log"}
echo "# running: $run"
sh -c "$run"
t_eq "the cron command exits 0" 0 "$?"
t_match "its log ends with the run's summary" \
	'^orgw-score [0-9-]+ [0-9:]+Z: 2 models, 2 scored, 0 failed' "$(tail -n 1 "$ORGW_T/orgw-score.log")"
t_eq "it wrote the candidates" "alpha alpha" \
	"$(json_get "$(orgw_curl /stats)" "j.models['cron/one'].candidates[0].tag + ' ' + j.models['cron/two'].candidates[0].tag")"
sh -c "$run"
t_eq "a second run appends" 2 "$(grep -c '^orgw-score .*: 2 models' "$ORGW_T/orgw-score.log")"

# While another run holds the flock, the line does nothing.
exec 9>"$ORGW_T/orgw-score.lock"
flock -n 9
t_eq "the test holds the lock" 0 "$?"
n0=$(double_ctl GET 'log?path=endpoints' | json_get - 'j.requests.length')
sz0=$(stat -c %s "$ORGW_T/orgw-score.log")
sh -c "$run"
rc=$?
exec 9>&-
t_eq "with the lock held, flock -n gives up at once (exit 1)" 1 "$rc"
t_eq "and orgw-score did not run (no fetch, nothing logged)" "$n0 $sz0" \
	"$(double_ctl GET 'log?path=endpoints' | json_get - 'j.requests.length') $(stat -c %s "$ORGW_T/orgw-score.log")"
