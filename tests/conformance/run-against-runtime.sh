#!/bin/sh
# Starts mcpvisor (the sanitized build by default) in front of the C
# conformance fixture server, prefixing off, runs the official conformance
# suite against its endpoint, stops the runtime and checks it exited 0.
# With --http the fixture is a local HTTP server on a port mcpvisor owns
# (args --http {port}, url http://127.0.0.1:{port}/mcp) instead of stdio.
# With --requirements REV the suite is 0.2.0-alpha.12 (tests/conformance/auth)
# running what revision REV requires (2026-07-28: the stateless wire;
# 2025-11-25), and the last line counts the checks of the scenarios REV
# scores: "N passed, M failed" (a scored scenario that did not run is one
# failure); those it runs without scoring are counted apart, above it.
# Usage: tests/conformance/run-against-runtime.sh [--http]
#            [--requirements REV] [suite options...]
set -u
mode=stdio
reqs=""
while [ $# -gt 0 ]; do
	case $1 in
	--http)
		mode=http
		shift
		;;
	--requirements)
		reqs=$2
		shift 2
		;;
	*) break ;;
	esac
done
root=$(cd "$(dirname "$0")/../.." && pwd)
modules=$root/tests/node_modules
[ -n "$reqs" ] && modules=$root/tests/conformance/auth/node_modules
bin=${MCPVISOR_BIN:-$root/build/san/mcpvisor}
fixture=${CONFORMANCE_SERVER:-$root/build/san/conformance-server}
case $bin in /*) ;; *) bin=$root/$bin ;; esac
case $fixture in /*) ;; *) fixture=$root/$fixture ;; esac
. "$root/tests/conformance/scored.sh"

home=$(mktemp -d /tmp/mcpvisor-conf.XXXXXX)
# An app server is everyone's and never sees a client's roots; the
# 2026-07-28 set asks a client's roots through the bridge, so there the
# fixture is the client's own (one per principal's session).
scope=app
[ "$reqs" = 2026-07-28 ] && scope=session
if [ "$mode" = http ]; then
	cat >"$home/mcp.json" <<JSON
{"mcpServers": {"conformance": {"command": "$fixture",
  "args": ["--http", "{port}"], "url": "http://127.0.0.1:{port}/mcp",
  "scope": "$scope", "prefix": ""}}}
JSON
else
	cat >"$home/mcp.json" <<JSON
{"mcpServers": {"conformance": {"command": "$fixture", "scope": "$scope",
  "prefix": ""}}}
JSON
fi
"$bin" serve --config "$home/mcp.json" --port 0 --home "$home" \
	>"$home/serve.out" 2>"$home/serve.err" &
pid=$!
cleanup() {
	kill -TERM "$pid" 2>/dev/null
	rm -rf "$home"
}
trap cleanup INT TERM
url=""
for _ in $(seq 1 500); do
	url=$(sed -n 's/^mcpvisor: endpoint //p' "$home/serve.out")
	[ -n "$url" ] && break
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.01
done
if [ -z "$url" ]; then
	echo "conformance: the runtime did not start" >&2
	cat "$home/serve.err" >&2
	cleanup
	exit 2
fi
if [ -z "$reqs" ]; then
	sh "$root/tests/conformance/run.sh" "$url" "$modules" "$@"
	rc=$?
else
	sh "$root/tests/conformance/run.sh" "$url" "$modules" \
		--requirements "$reqs" "$@" >"$home/suite.out" 2>&1
	rc=$?
	cat "$home/suite.out"
	scored_total \
		"$modules/@modelcontextprotocol/conformance/requirements/$reqs.yaml" \
		"$home/suite.out" "$reqs"
fi
kill -TERM "$pid"
wait "$pid"
src=$?
if [ "$src" -ne 0 ]; then
	echo "conformance: the runtime exited with $src after SIGTERM" >&2
	tail -n 40 "$home/serve.err" >&2
	rc=1
fi
rm -rf "$home"
exit $rc
