#!/bin/bash
# t0030-man: the man pages are the reference, so they must keep up with the
# code: every setting src/conf.c accepts (and each secret's NAME_FILE) has
# an entry in orgw.conf(5), every option and command `orgw-score --help`
# lists is in orgw-score(8), both options of orgw.fcgi in orgw.fcgi(8);
# every page is clean under `groff -ww -mandoc -z` and `mandoc -T lint`,
# and `make man` fills in the version.
. "$(dirname "$0")/../lib.sh"

man=$ORGW_ROOT/docs/man
score=$ORGW_ROOT/scheduler/orgw-score
fcgi=${ORGW_FCGI_BIN:-$ORGW_ROOT/cgi-bin/orgw.fcgi}

# missing_from TEXT ERE NAME...: the names (quoted) for which ERE, with %s
# replaced by the name, matches no line of TEXT.
missing_from() {
	local text=$1 ere=$2 n out=
	shift 2
	for n in "$@"; do
		# shellcheck disable=SC2059 # the ERE is the format
		grep -qE "$(printf "$ere" "$n")" <<<"$text" || out="$out '$n'"
	done
	printf '%s' "$out"
}

# The settings: the names of src/conf.c's table, as the code has them.
mapfile -t settings < <(sed -n 's/.*\.name = "\([A-Z0-9_]*\)".*/\1/p' \
	"$ORGW_ROOT/src/conf.c")
t_check "src/conf.c names at least 30 settings" test "${#settings[@]}" -ge 30
t_eq "orgw.conf(5) has an entry for every setting" "" \
	"$(missing_from "$(cat "$man/orgw.conf.5")" '^\.It Ev %s$' "${settings[@]}")"
# The secrets that may come from a file (src/confload.c).
mapfile -t files < <(sed -n 's/.*\.file_name = "\([A-Z0-9_]*\)".*/\1/p' \
	"$ORGW_ROOT/src/confload.c")
t_check "src/confload.c names NAME_FILE secrets" test "${#files[@]}" -ge 1
# They are the .Ev names of the paragraph that says NAME_FILE.
secrets=$(awk '/^The secrets$/ { on = 1 } on && /^\.Ev / { print $2 }
	       on && /NAME_FILE|Ns _FILE/ { exit }' "$man/orgw.conf.5")
t_eq "orgw.conf(5) lists every secret that has a NAME_FILE" "" \
	"$(missing_from "$secrets" '^%s$' "${files[@]%_FILE}")"

# Options: every --word in the help text, as an Fl of an entry (.It).
help=$("$score" --help)
mapfile -t opts < <(printf '%s\n' "$help" | grep -oE -- '--[a-z][a-z-]*' | sort -u)
t_check "orgw-score --help lists options" test "${#opts[@]}" -ge 10
t_eq "orgw-score(8) has every option of --help" "" \
	"$(missing_from "$(cat "$man/orgw-score.8")" '^\.It (.* )?Fl -%s( |$)' "${opts[@]#--}")"
# Commands: the first word of each indented line of the two command
# lists ("  status [MODEL]", "  key add NAME"), as a Cm of the page.
mapfile -t cmds < <(printf '%s\n' "$help" |
	awk '/^Operator commands/ { on = 1; next }
	     /^Team keys/ { on = 2; next }
	     /^$/ { on = 0 }
	     on == 1 && /^  [a-z]/ { print $1 }
	     on == 2 && /^  key [a-z]/ { print "key " $2 }
	     on == 2 && /\| key [a-z]/ { sub(/.*\| /, ""); print "key " $2 }' |
	sort -u)
t_check "orgw-score --help lists commands" test "${#cmds[@]}" -ge 14
t_eq "orgw-score(8) has every command of --help" "" \
	"$(missing_from "$(cat "$man/orgw-score.8")" '^\.It Cm %s( |$)' "${cmds[@]}")"

# orgw.fcgi: the options its usage line names.
usage=$("$fcgi" --no-such-option 2>&1)
mapfile -t opts < <(printf '%s\n' "$usage" | grep -oE -- '--[a-z][a-z-]*' | sort -u)
t_check "orgw.fcgi's usage names options" test "${#opts[@]}" -ge 2
t_eq "orgw.fcgi(8) has every option of its usage" "" \
	"$(missing_from "$(cat "$man/orgw.fcgi.8")" '^\.It Fl -%s$' "${opts[@]#--}")"

# The pages as installed (make man: the version filled in), linted.
make -s -C "$ORGW_ROOT" man >/dev/null
want=$(cat "$ORGW_ROOT/VERSION")
for p in "$man"/*.[578]; do
	b=build/man/${p##*/}
	t_check "$b: .Os says orgw $want" grep -qx "\.Os orgw $want" "$ORGW_ROOT/$b"
	out=$(groff -ww -mandoc -z "$ORGW_ROOT/$b" 2>&1)
	t_eq "$b: groff -ww -mandoc -z is silent" "" "$out"
	if command -v mandoc >/dev/null; then
		out=$(mandoc -T lint -W warning "$ORGW_ROOT/$b" 2>&1)
		t_eq "$b: mandoc -T lint -W warning is silent" "" "$out"
	else
		t_skip "$b: mandoc is not installed (ORGW_DEPS_TEST=1 make deps-test)"
	fi
done

# The README's way to read a page from the tree.
t_check "man -l docs/man/orgw-score.8 (the README's command) shows the page" \
	sh -c "cd '$ORGW_ROOT' && man -P cat -l docs/man/orgw-score.8 2>/dev/null | grep -q 'key add'"
