#!/bin/sh
# tests/check-layers.sh - the layering rules make check-layers enforces
# beyond the pure core's (Makefile):
#   1. a state back-end (src/store_gdbm*.c, store_redis*.c, store_mem.c)
#      calls no function defined in src/store.c: store.c calls down into
#      the back-ends through their tables, never the other way;
#   2. the include graph of src/ has no circle, counting a .c and its .h
#      as one module (a module that needs another's header must not be
#      needed by it);
#   3. only the state modules include the store's header (src/store.h):
#      the back-ends, the state (state.c and its modules state_*.c:
#      route, admit, fail, batch, ops, upkeep), the scoring runs
#      (scorerun.c), its views (stats.c), the keys store (keystore.c,
#      teamauth.c) and the operator tool (scheduler/); the gateway and
#      the rest reach the state through them;
#   4. no key prefix of the state or the keys store (the STATEKEY_P_*
#      of src/statekeys.h) is spelled as a literal outside the schema
#      module src/statekeys.[ch]: keys are made and parsed through its
#      table, so a family is one row there;
#   5. comments and documents under src, scheduler, cgi-bin, tests (but
#      node_modules and fixtures), deploy and bench cite only what a
#      reader of the tree can open: no SPEC.md (nor a bare SPEC),
#      OPENROUTER.md, STYLE.md or /work/shared (files beside the project,
#      not in it), and a "section N" (or "§N") names its file, e.g.
#      docs/design.md or an RFC, on its line or the line before.
#   6. nothing in src/ or cgi-bin/ includes a header of scheduler/: the
#      operator tool's modules are its own, built into orgw-score only,
#      never into liborgw.a or the gateway;
#   7. a module's private header, src/M_impl.h or scheduler/M_impl.h,
#      is included only by that module's own files (M.c, M.h, M_*.c,
#      M_*.h in the same directory; relay_impl.h by relay.c and
#      relay_*.c), never by another module or directory: what a module's
#      files share among themselves is no part of its interface;
#   8. README.md's Layout section names every source file of src/,
#      scheduler/ and cgi-bin/ (a new module says there what it is for).
# Prints what breaks a rule and exits 1; else exits 0.
cd "$(dirname "$0")/.." || exit 2
st=0

fns=$(sed -n 's/^\([a-z_][a-z0-9_]*\)(.*/\1/p' src/store.c | sort -u)
for f in src/store_gdbm*.c src/store_redis*.c src/store_mem.c; do
	for fn in $fns; do
		if grep -nE "(^|[^a-z0-9_])$fn[[:space:]]*\(" "$f" |
			grep -vE '^[0-9]+:[[:space:]]*(/?\*|//)' >/tmp/orgw-layers.$$; then
			echo "check-layers: $f calls $fn(), defined in src/store.c:"
			sed 's/^/  /' /tmp/orgw-layers.$$
			st=1
		fi
	done
done
rm -f /tmp/orgw-layers.$$

for f in src/*.c src/*.h; do
	m=$(basename "${f%.*}")
	sed -n 's/^#include "\([^"]*\)\.h".*/\1/p' "$f" | while read -r d; do
		[ "$d" = "$m" ] || echo "$m $d"
	done
done >/tmp/orgw-layers-graph.$$
if ! tsort </tmp/orgw-layers-graph.$$ >/dev/null 2>/tmp/orgw-layers-loop.$$; then
	echo "check-layers: the include graph of src/ has a circle:"
	sed 's/^/  /' /tmp/orgw-layers-loop.$$
	st=1
fi
rm -f /tmp/orgw-layers-graph.$$ /tmp/orgw-layers-loop.$$

for f in src/*.c src/*.h cgi-bin/*.c scheduler/*.c; do
	case $f in
	src/store.c | src/store.h | src/store_*.c | src/store_*.h | \
		src/state.c | src/state_*.c | src/scorerun.c | src/stats.c | \
		src/keystore.c | src/teamauth.c | \
		scheduler/*.c) continue ;;
	esac
	if grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"store\.h"' \
		"$f" >/dev/null; then
		echo "check-layers: $f includes src/store.h; only the state" \
			"modules do (it goes through state.h, keystore.h...)"
		st=1
	fi
done

names=$(sed -n 's/^#define STATEKEY_P_[A-Z_]*[[:space:]]*"\([A-Z_]*\):*"$/\1/p' \
	src/statekeys.h)
if [ -z "$names" ]; then
	echo "check-layers: no STATEKEY_P_* prefixes found in src/statekeys.h"
	st=1
fi
for n in $names; do
	# A literal is the name right after a quote, then ':' or the end of
	# the string; comment lines do not count.
	grep -nE "\"$n(:|\")" src/*.c src/*.h cgi-bin/*.c scheduler/*.c |
		grep -vE '^src/statekeys\.[ch]:' |
		grep -vE '^[^:]+:[0-9]+:[[:space:]]*(/?\*|//)' \
			>/tmp/orgw-layers-keys.$$
	if [ -s /tmp/orgw-layers-keys.$$ ]; then
		echo "check-layers: key prefix $n spelled outside" \
			"src/statekeys.[ch] (use its table):"
		sed 's/^/  /' /tmp/orgw-layers-keys.$$
		st=1
	fi
done
rm -f /tmp/orgw-layers-keys.$$

# Rule 5 reads every file under those directories (this one names what
# it looks for); grep -I passes over binary files.
cite_files() {
	find src scheduler cgi-bin tests deploy bench \
		\( -name node_modules -o -path tests/fixtures \) -prune -o \
		-type f ! -path tests/check-layers.sh -print
}
cite_files | xargs grep -nHIE \
	'(^|[^A-Za-z_])SPEC([^A-Za-z_]|$)|OPENROUTER\.md|STYLE\.md|/work/shared' \
	>/tmp/orgw-layers-cite.$$
if [ -s /tmp/orgw-layers-cite.$$ ]; then
	echo "check-layers: a citation of a file outside the tree (cite" \
		"docs/*.md, or give the reason):"
	sed 's/^/  /' /tmp/orgw-layers-cite.$$
	st=1
fi
# A "section N" passes when its line or the one before names an in-tree
# path ending in .md (docs/design.md, deploy/README.md) or an RFC.
cite_files | xargs grep -lIE '(sections?|§) ?[0-9]' | xargs -r awk '
	FNR == 1 { prev = "" }
	/(sections?|§) ?[0-9]/ && prev !~ cite && $0 !~ cite {
		print FILENAME ":" FNR ":" $0
	}
	{ prev = $0 }' cite='[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]*[.]md|RFC ?[0-9]' \
	>/tmp/orgw-layers-cite.$$
if [ -s /tmp/orgw-layers-cite.$$ ]; then
	echo "check-layers: a \"section N\" without its file (say" \
		"\"docs/design.md section N\") on its line or the line before:"
	sed 's/^/  /' /tmp/orgw-layers-cite.$$
	st=1
fi
rm -f /tmp/orgw-layers-cite.$$
for h in scheduler/*.h; do
	n=$(basename "$h")
	# By its name (were -Ischeduler ever added) or by a path.
	grep -nE "^[[:space:]]*#[[:space:]]*include[[:space:]]*\"([^\"]*/)?$n\"" \
		src/*.c src/*.h cgi-bin/*.c >/tmp/orgw-layers-tool.$$
	if [ -s /tmp/orgw-layers-tool.$$ ]; then
		echo "check-layers: $h, the operator tool's, included" \
			"outside scheduler/:"
		sed 's/^/  /' /tmp/orgw-layers-tool.$$
		st=1
	fi
done
rm -f /tmp/orgw-layers-tool.$$
for h in src/*_impl.h scheduler/*_impl.h; do
	[ -e "$h" ] || continue
	d=$(dirname "$h")
	n=$(basename "$h")
	m=${n%_impl.h}
	grep -lE "^[[:space:]]*#[[:space:]]*include[[:space:]]*\"([^\"]*/)?$n\"" \
		src/*.c src/*.h cgi-bin/*.c scheduler/*.c scheduler/*.h |
		while read -r f; do
			case $f in
			"$d/$m.c" | "$d/$m.h" | "$d/$m"_*.c | "$d/$m"_*.h) ;;
			*) echo "$f" ;;
			esac
		done >/tmp/orgw-layers-impl.$$
	if [ -s /tmp/orgw-layers-impl.$$ ]; then
		echo "check-layers: $h, the private header of $m, included" \
			"outside its module:"
		sed 's/^/  /' /tmp/orgw-layers-impl.$$
		st=1
	fi
done
rm -f /tmp/orgw-layers-impl.$$
layout=$(sed -n '/^## Layout/,/^## /p' README.md)
for f in src/*.c scheduler/*.c cgi-bin/*.c; do
	n=$(basename "$f" | sed 's/\./\\./g')
	printf '%s\n' "$layout" | grep -qE "(^|[^A-Za-z0-9_.-])$n([^A-Za-z0-9_]|$)" || {
		echo "check-layers: README.md's Layout section does not name $f"
		st=1
	}
done
exit $st
