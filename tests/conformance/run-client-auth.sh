#!/bin/sh
# The official suite's client authorization scenarios with mcpvisor as the
# client: for each, the suite (the release pinned in auth/package.json)
# starts its authorization and MCP servers and runs client-driver.mjs with
# the MCP server's URL; the driver signs in with `mcpvisor login` in a new
# home (so a fresh state folder) and calls the tools through `mcpvisor
# serve`. One scenario at a time in single-scenario mode, which fails a
# scenario on a FAILURE or a WARNING check, and on the client's exit code
# unless the scenario expects a refusal. The suite stops the client at 30 s.
# Ends with "Total: N passed, M failed" over the checks; exit 1 when one
# failed, 2 when the suite is not installed.
# Usage: tests/conformance/run-client-auth.sh [--spec-version V]
#            [--checks-only] [--force] SCENARIO...
#        tests/conformance/run-client-auth.sh --requirements REVISION [-o DIR]
# --requirements runs the suite's whole client set of that revision at once
# (its own summary: scored scenarios decide, warnings do not); -o DIR keeps
# each scenario's checks.json.
# --checks-only scores the checks alone (auth-checks.mjs), not the client's
# exit: for 2026-07-28, whose servers refuse the 2025-11-25 requests
# mcpvisor makes after the login; auth/expected-V.txt names the checks that
# need such a request. --force runs a scenario at a revision it is not
# for (a 2026-07-28 one at the 2025-11-25 wire mcpvisor speaks).
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
driver="node $root/tests/conformance/client-driver.mjs"
spec=2025-11-25
case ${1:-} in
--requirements)
	# shellcheck disable=SC2086 # shim is two words or none
	rev=$2
	shift 2
	exec node $shim "$entry" client --requirements "$rev" --timeout 30000 \
		--command "$driver" "$@"
	;;
esac
checks_only=0
force=""
while [ $# -gt 0 ]; do
	case $1 in
	--spec-version)
		spec=$2
		shift 2
		;;
	--checks-only)
		checks_only=1
		shift
		;;
	--force)
		force=--force
		shift
		;;
	*) break ;;
	esac
done
if [ $# -eq 0 ]; then
	echo "usage: $0 [--spec-version V] [--checks-only] [--force] SCENARIO..." \
		"| --requirements REVISION [-o DIR]" >&2
	exit 2
fi
out=$(mktemp -d /tmp/conf-auth.XXXXXX)
pass=0
fail=0
for scenario in "$@"; do
	name=$(echo "$scenario" | tr / -)
	log=$out/$name.log
	# The suite's own hang guard: its client timeout is 30 s.
	# shellcheck disable=SC2086 # shim is two words or none
	timeout -k 5 60 node $shim "$entry" client --scenario "$scenario" \
		--spec-version "$spec" $force --timeout 30000 --command "$driver" \
		-o "$out/$name" >"$log" 2>&1
	rc=$?
	if [ "$checks_only" -eq 1 ]; then
		# Its checks alone, those that need a 2026 request named.
		dir=$(ls -d "$out/$name/$scenario"-* 2>/dev/null | tail -n 1)
		node "$root/tests/conformance/auth-checks.mjs" \
			"$dir/checks.json" "$scenario" \
			"$root/tests/conformance/auth/expected-$spec.txt" >>"$log" 2>&1
		rc=$?
		line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
		p=$(echo "$line" | sed -n 's/^\([0-9]*\) passed.*/\1/p')
		f=$(echo "$line" | sed -n 's/.*, \([0-9]*\) failed$/\1/p')
		w=0
	else
		line=$(grep -E 'Passed: [0-9]+/[0-9]+, [0-9]+ failed' "$log" | tail -n 1)
		p=$(echo "$line" | sed -n 's/.*Passed: \([0-9]*\)\/.*/\1/p')
		f=$(echo "$line" | sed -n 's/.*, \([0-9]*\) failed.*/\1/p')
		w=$(echo "$line" | sed -n 's/.*, \([0-9]*\) warnings.*/\1/p')
	fi
	if [ -z "$p" ]; then
		p=0
		f=1
	fi
	# A warning is a SHOULD the client missed: counted as a failure.
	f=$((f + ${w:-0}))
	[ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && f=1
	if [ "$f" -gt 0 ]; then
		echo "--- $scenario: $p passed, $f failed; the end of its log:"
		# The checks that failed, then what the client and mcpvisor
		# said (the suite's own lines start with a coloured time).
		grep -E 'FAILURE|WARNING' "$log" | tail -n 10
		esc=$(printf '\033')
		grep -v -E "^$esc\[|^$|^Results saved|^Executing client" "$log" |
			tail -n 40
	fi
	echo "$scenario: $p passed, $f failed"
	pass=$((pass + p))
	fail=$((fail + f))
done
rm -rf "$out"
echo "Total: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
