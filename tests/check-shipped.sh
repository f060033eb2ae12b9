#!/bin/sh
# tests/check-shipped.sh - the shipped binaries (cgi-bin/orgw.fcgi,
# scheduler/orgw-score) carry no test-only code: neither the unit tests'
# in-memory state back-end (src/store_mem.c) nor the test clock
# (src/clock_test.c, ORGW_TEST_NOW).  The test builds of the same
# programs (build/release/*-test) must have both, so that the names looked
# for are the right ones.  Run by make lint after make all.
# Prints what is wrong and exits 1; else exits 0.
cd "$(dirname "$0")/.." || exit 2
B=${ORGW_BUILD:-build/release}
st=0

# Symbols of store_mem.c and clock_test.c (defined text or data), and
# the test clock's variable as text.
test_only() { # BINARY: prints what of the test-only code it holds
	nm "$1" 2>/dev/null |
		grep -E ' [TtDdRrBb] (store_mem_[a-z_]+|clock_test_offset_s)$' |
		sed 's/.* /symbol /'
	if grep -F -q ORGW_TEST_NOW "$1"; then
		echo "string ORGW_TEST_NOW"
	fi
}

for bin in cgi-bin/orgw.fcgi scheduler/orgw-score; do
	if [ ! -x "$bin" ]; then
		echo "check-shipped: $bin is missing (make all)"
		st=1
		continue
	fi
	found=$(test_only "$bin")
	if [ -n "$found" ]; then
		echo "check-shipped: $bin holds test-only code:"
		echo "$found" | sed 's/^/  /'
		st=1
	fi
done

for bin in "$B/orgw.fcgi-test" "$B/orgw-score-test"; do
	[ -x "$bin" ] || continue
	found=$(test_only "$bin")
	for want in "symbol store_mem_backend" "symbol clock_test_offset_s" \
		"string ORGW_TEST_NOW"; do
		if ! echo "$found" | grep -x "$want" >/dev/null; then
			echo "check-shipped: the test build $bin lacks $want" \
				"(so this check looks for the wrong names)"
			st=1
		fi
	done
done
exit $st
