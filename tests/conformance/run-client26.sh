#!/bin/sh
# The official suite's client scenarios of MCP 2026-07-28 (the release
# pinned in auth/package.json) that are not about authorization, with
# mcpvisor as the client under test: for each, the suite starts its
# scenario server (one that speaks only 2026-07-28) and runs
# client-driver.mjs with its URL, which puts mcpvisor (a `url` server)
# between the SDK 1.x client and it; mcpvisor finds out the server's
# revision and speaks it. The authorization scenarios of the set are
# run-client-auth.sh's. Ends with "Total: N passed, M failed" over the
# scenarios' checks; exit 1 when one failed, 2 when the suite is not
# installed.
# Usage: tests/conformance/run-client26.sh [SCENARIO...]
# MCPVISOR_BIN: the runtime (default build/san/mcpvisor).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
entry=$root/tests/conformance/auth/node_modules/@modelcontextprotocol/conformance/dist/index.js
if [ ! -f "$entry" ]; then
	echo "$0: $entry not found: run make npm-deps" >&2
	exit 2
fi
major=$(node -p 'process.versions.node.split(".")[0]')
shim=""
[ "$major" -lt 22 ] && shim="--import $root/tests/conformance/globsync-shim.mjs"
[ $# -gt 0 ] || set -- tools_call request-metadata \
	sep-2322-client-request-state http-standard-headers \
	http-custom-headers http-invalid-tool-headers json-schema-ref-no-deref
out=$(mktemp -d /tmp/conf-client26.XXXXXX)
pass=0
fail=0
for scenario in "$@"; do
	log=$out/$scenario.log
	# The suite's own hang guard: its client timeout is 30 s.
	# shellcheck disable=SC2086 # shim is two words or none
	timeout -k 5 60 node $shim "$entry" client --scenario "$scenario" \
		--spec-version 2026-07-28 --timeout 30000 \
		--command "node $root/tests/conformance/client-driver.mjs" \
		-o "$out/results" >"$log" 2>&1
	rc=$?
	line=$(grep -E 'Passed: [0-9]+/[0-9]+, [0-9]+ failed' "$log" | tail -n 1)
	p=$(echo "$line" | sed -n 's/.*Passed: \([0-9]*\)\/.*/\1/p')
	f=$(echo "$line" | sed -n 's/.*, \([0-9]*\) failed.*/\1/p')
	w=$(grep -c 'WARNING' "$log")
	if [ -z "$p" ]; then
		p=0
		f=1
	fi
	[ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
	if [ "$f" -gt 0 ] || [ "$w" -gt 0 ]; then
		echo "--- $scenario: $p passed, $f failed; the end of its log:"
		grep -E 'FAILURE|WARNING|client-driver|Error' "$log" | tail -n 15
	fi
	echo "$scenario: $p passed, $f failed"
	pass=$((pass + p))
	fail=$((fail + f))
done
rm -rf "$out"
echo "Total: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
