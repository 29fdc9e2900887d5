#!/bin/sh
# Starts mcpvisor (the sanitized build by default) in front of the C
# conformance fixture server, prefixing off, runs the official conformance
# suite against its endpoint, stops the runtime and checks it exited 0.
# With --http the fixture is a local HTTP server on a port mcpvisor owns
# (args --http {port}, url http://127.0.0.1:{port}/mcp) instead of stdio.
# Usage: tests/conformance/run-against-runtime.sh [--http] [suite options...]
set -u
mode=stdio
if [ "${1:-}" = --http ]; then
	mode=http
	shift
fi
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${MCPVISOR_BIN:-$root/build/san/mcpvisor}
fixture=${CONFORMANCE_SERVER:-$root/build/san/conformance-server}
case $bin in /*) ;; *) bin=$root/$bin ;; esac
case $fixture in /*) ;; *) fixture=$root/$fixture ;; esac
home=$(mktemp -d /tmp/mcpvisor-conf.XXXXXX)
if [ "$mode" = http ]; then
	cat >"$home/mcp.json" <<JSON
{"mcpServers": {"conformance": {"command": "$fixture",
  "args": ["--http", "{port}"], "url": "http://127.0.0.1:{port}/mcp",
  "scope": "app", "prefix": ""}}}
JSON
else
	cat >"$home/mcp.json" <<JSON
{"mcpServers": {"conformance": {"command": "$fixture", "scope": "app",
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
sh "$root/tests/conformance/run.sh" "$url" "$root/tests/node_modules" "$@"
rc=$?
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
