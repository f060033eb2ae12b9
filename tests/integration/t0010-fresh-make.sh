#!/bin/bash
# t0010-fresh-make: the first `make run` on a machine without the -dev
# packages builds and starts orgw.
#
# A fresh machine is played by a pkg-config stand-in that answers nothing
# (as pkg-config does before libcjson-dev is installed) until the install
# step has run, and by an install step (DEPS=) that only marks "installed".
# Before the fix, make asked pkg-config when it read the Makefile, before
# `deps` ran, and src/chat.c did not find cJSON.h.  The copy of the tree is
# built in a temporary directory, so the tree under test is not touched.
. "$(dirname "$0")/../lib.sh"

T=$(mktemp -d "${TMPDIR:-/tmp}/orgw-t0010.XXXXXX") || exit 1
RUN_PID=
cleanup() {
	if [ -n "$RUN_PID" ] && orgw__alive "$RUN_PID"; then
		# run-local.sh stops what it started on INT; make passes it on.
		kill -INT -- "-$RUN_PID" 2>/dev/null
		for _ in $(seq 50); do
			orgw__alive "$RUN_PID" || break
			sleep 0.1
		done
		orgw__alive "$RUN_PID" && kill -KILL -- "-$RUN_PID" 2>/dev/null
		wait "$RUN_PID" 2>/dev/null
	fi
	rm -rf "$T"
}
trap cleanup EXIT

real_pc=$(command -v pkg-config) || {
	t_fail "pkg-config is installed"
	exit 1
}
mkdir -p "$T/bin" "$T/tree"
cat >"$T/bin/pkg-config" <<EOF
#!/bin/sh
# Answers nothing until the install step has run, as on a fresh machine.
[ -e "$T/installed" ] || exit 1
exec "$real_pc" "\$@"
EOF
cat >"$T/deps.sh" <<EOF
#!/bin/sh
echo "stand-in deps: installing"
: >"$T/installed"
EOF
chmod +x "$T/bin/pkg-config" "$T/deps.sh"

# The tree as it is (tracked and new files; no build products).
(cd "$ORGW_ROOT" && git ls-files -co --exclude-standard -z |
	tar --null -T - -cf -) | tar -C "$T/tree" -xf - ||
	t_fail "copy the tree"

export PATH="$T/bin:$PATH"

# The stand-in bites: without the install step the build cannot find the
# headers, so a pass below is the install step's doing.
out=$(make -C "$T/tree" -j2 all 2>&1)
rc=$?
t_check "without the install step the build fails (the stand-in works)" \
	test "$rc" -ne 0
t_match "... for want of a header pkg-config would have pointed at" \
	'No such file or directory' "$out"
rm -rf "$T/tree/build"

port=$(orgw__free_port)
setsid make -C "$T/tree" run DEPS="sh $T/deps.sh" ORGW_PORT="$port" \
	</dev/null >"$T/run.log" 2>&1 &
RUN_PID=$!
up=
for _ in $(seq 600); do
	grep -q '^orgw is running' "$T/run.log" && up=1 && break
	orgw__alive "$RUN_PID" || break
	sleep 0.5
done
if [ -n "$up" ]; then
	t_ok "the first make run builds and starts orgw"
else
	t_fail "the first make run builds and starts orgw" "$(tail -n 30 "$T/run.log")"
	exit 1
fi

first_cc=$(grep -n '^  CC ' "$T/run.log" | head -n 1 | cut -d: -f1)
installed=$(grep -n '^stand-in deps: installing' "$T/run.log" | head -n 1 | cut -d: -f1)
t_check "the install step ran before the first compile" \
	test -n "$installed" -a -n "$first_cc" -a "${installed:-0}" -lt "${first_cc:-0}"

key=$(head -n 1 "$T/tree/run/client-key")
body=$(curl -sS --max-time 30 "http://127.0.0.1:$port/v1/chat/completions" \
	-H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
	-d '{"model":"deepseek/deepseek-v3.2","messages":[{"role":"user","content":"Say hello."}]}')
t_check "it answers a chat completion (the bundled double behind it)" \
	json_ok "$body" 'j.choices[0].message.content.length > 0'
