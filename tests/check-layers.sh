#!/bin/sh
# tests/check-layers.sh - the layering rules make check-layers enforces
# beyond the pure core's (Makefile):
#   1. a state back-end (src/store_gdbm.c, store_redis.c, store_mem.c)
#      calls no function defined in src/store.c: store.c calls down into
#      the back-ends through their tables, never the other way;
#   2. the include graph of src/ has no circle, counting a .c and its .h
#      as one module (a module that needs another's header must not be
#      needed by it).
# Prints what breaks a rule and exits 1; else exits 0.
cd "$(dirname "$0")/.." || exit 2
st=0

fns=$(sed -n 's/^\([a-z_][a-z0-9_]*\)(.*/\1/p' src/store.c | sort -u)
for f in src/store_gdbm.c src/store_redis.c src/store_mem.c; do
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
exit $st
