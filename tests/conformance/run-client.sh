#!/bin/sh
# Runs the official conformance suite's client scenarios that concern a
# client of Streamable HTTP servers with mcpvisor as the client: for each,
# the suite starts its scenario server and runs client-driver.mjs with its
# URL, which puts mcpvisor (a `url` server) between the SDK client and it.
# Ends with "Total: N passed, M failed" over the scenarios' checks; exit 1
# when one failed.
# Usage: tests/conformance/run-client.sh [SCENARIO...]
# CLIENT_DRIVER_DIRECT=1 leaves mcpvisor out (checks the driver itself).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
pkg=$root/tests/node_modules/@modelcontextprotocol/conformance
entry=$pkg/dist/index.js
if [ ! -f "$entry" ]; then
	echo "$0: $entry not found: run make npm-deps" >&2
	exit 2
fi
major=$(node -p 'process.versions.node.split(".")[0]')
shim=""
[ "$major" -lt 22 ] && shim="--import $root/tests/conformance/globsync-shim.mjs"
[ $# -gt 0 ] || set -- initialize tools_call elicitation-sep1034-client-defaults \
	sse-retry
out=$(mktemp -d /tmp/conf-client.XXXXXX)
pass=0
fail=0
for scenario in "$@"; do
	log=$out/$scenario.log
	# shellcheck disable=SC2086 # shim is two words or none
	node $shim "$entry" client --scenario "$scenario" --timeout 30000 \
		--command "node $root/tests/conformance/client-driver.mjs" \
		-o "$out/results" >"$log" 2>&1
	rc=$?
	line=$(grep -E 'Passed: [0-9]+/[0-9]+, [0-9]+ failed' "$log" | tail -n 1)
	p=$(echo "$line" | sed -n 's/.*Passed: \([0-9]*\)\/.*/\1/p')
	f=$(echo "$line" | sed -n 's/.*, \([0-9]*\) failed.*/\1/p')
	if [ -z "$p" ]; then
		p=0
		f=1
	fi
	[ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
	if [ "$f" -gt 0 ]; then
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
