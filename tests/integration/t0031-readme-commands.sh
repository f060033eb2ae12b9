#!/bin/bash
# t0031-readme-commands: every command the README shows is run by a test.
# Each command line of its ```sh blocks, and each command it quotes inline
# (`make ...`, `orgw-score ...`, `dpkg ...`), must match a row below that
# names the test which runs it and a line of that test that does; or a row
# that says why no test can (an interactive editor, a real OpenRouter key).
# A command added to the README without a row fails here.
. "$(dirname "$0")/../lib.sh"

cd "$ORGW_ROOT" || exit 1
# README command (ERE) @@ the test that runs it @@ what in that test runs it
# (ERE), or "-" and the reason.
rows=$(cat <<'ROWS'
^make run( |$) @@ tests/integration/t0010-fresh-make.sh @@ make -C .* run
^OPENROUTER_API_KEY=sk-or-v1-\.\.\. make run @@ - @@ needs a real OpenRouter key; t0010 runs make run against the double
^make test( |$) @@ - @@ it is what runs these scripts (tests/run.sh)
^make (check|lint|check-layers)$ @@ - @@ steps of make test itself
^make (fuzz|clean)$ @@ - @@ clang's libFuzzer for minutes, and a clean of the tree the tests run in
^make bench$ @@ tests/integration/t0600-bench-smoke.sh @@ bench/run\.sh
^make soak$ @@ tests/integration/t0700-soak-short.sh @@ tests/soak\.sh|soak\.sh
^make dist$ @@ tests/lib.sh @@ make --no-print-directory -s dist
^make (install|uninstall)$ @@ tests/integration/t0040-install.sh @@ inst (install|uninstall)
^make deb( |$) @@ tests/integration/t0045-deb.sh @@ make -s -C "\$ORGW_ROOT" deb
^dpkg -i build/deb/orgw_ @@ tests/integration/t0045-deb.sh @@ dpkg -i "\$deb"
^dpkg --purge orgw$ @@ tests/integration/t0045-deb.sh @@ dpkg --purge orgw
^editor /etc/orgw/orgw.conf @@ tests/integration/t0045-deb.sh @@ cat >>/etc/orgw/orgw.conf
^systemctl enable --now orgw @@ tests/integration/t0045-deb.sh @@ sed -n 's/\^ExecStart=//p'
^lighty-enable-mod orgw @@ tests/integration/t0045-deb.sh @@ lighty-enable-mod orgw
^systemctl edit orgw$ @@ - @@ opens an editor on a drop-in; t0500 checks the unit it changes
^export (ANTHROPIC_|CLAUDE_CODE_) @@ tests/agents/agent.mjs @@ ANTHROPIC_BASE_URL
^claude -p @@ tests/integration/t0195-agents.sh @@ agent "claude -p
^codex exec @@ tests/agents/agent.mjs @@ codex exec
^opencode run @@ tests/agents/agent.mjs @@ opencode run
^orgw-score --dry-run @@ tests/integration/t0310-score-ranking.sh @@ --dry-run
^orgw-score status @@ tests/integration/t0355-operator.sh @@ ^op status
^orgw-score cool  @@ tests/integration/t0355-operator.sh @@ ^op cool
^orgw-score conversations @@ tests/integration/t0635-conversations.sh @@ score conversations
^orgw-score key add .*--budget-usd-day @@ tests/integration/t0660-keys-cli.sh @@ op add alice --models .* --budget-usd-day
^orgw-score key export$ @@ tests/integration/t0660-keys-cli.sh @@ key export
^orgw-score --version$ @@ tests/integration/t0020-version.sh @@ orgw-score" --version
^orgw\.fcgi --version$ @@ tests/integration/t0020-version.sh @@ orgw\.fcgi\}" --version
^orgw\.fcgi --check-config$ @@ tests/integration/t0040-install.sh @@ --check-config
^man -l docs/man/orgw-score\.8$ @@ tests/integration/t0030-man.sh @@ man -P cat -l docs/man/orgw-score\.8
^STATE_BACKEND=gdbm orgw-score --dump \| STATE_BACKEND=redis orgw-score --load$ @@ tests/integration/t0920-redis-dump-load.sh @@ --dump
ROWS
)

# The README's commands: ```sh block lines (comments and blanks out, the
# trailing comment cut), then inline ones by their first word.
mapfile -t cmds < <(
	awk '/^```sh/ { on = 1; next } /^```/ { on = 0 }
	     on && !/^[[:space:]]*#/ && NF { sub(/[[:space:]]+#.*/, ""); print }' README.md
	grep -o '`[^`]*`' README.md | tr -d '`' |
		grep -E '^(make|orgw-score|orgw\.fcgi|dpkg|lighty-enable-mod|systemctl|man|STATE_BACKEND=[a-z]+ orgw-score|editor|claude|codex|opencode) '
)
t_check "the README shows at least 20 commands" test "${#cmds[@]}" -ge 20

unmatched= unrun=
for c in "${cmds[@]}"; do
	hit=
	while IFS= read -r row; do
		re=${row%% @@ *} rest=${row#* @@ }
		file=${rest%% @@ *} what=${rest#* @@ }
		grep -qE -- "$re" <<<"$c" || continue
		hit=1
		if [ "$file" != - ] && ! grep -qE -- "$what" "$file" 2>/dev/null; then
			unrun="$unrun [$c: $file has no /$what/]"
		fi
		break
	done <<<"$rows"
	[ -n "$hit" ] || unmatched="$unmatched [$c]"
done
t_eq "every README command has a row naming its test" "" "$unmatched"
t_eq "every named test has the line that runs it" "" "$unrun"
