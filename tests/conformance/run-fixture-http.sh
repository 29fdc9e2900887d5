#!/bin/sh
# Runs the official conformance suite's server scenarios straight against the
# C conformance fixture served over Streamable HTTP (--http 0, no mcpvisor):
# the proof that the fixture's HTTP mode is a conforming server before
# mcpvisor is put in front of it. Stops the fixture with SIGTERM and checks
# that it exited 0 (a sanitizer report would change that).
# Usage: tests/conformance/run-fixture-http.sh [suite options...]
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
fixture=${CONFORMANCE_SERVER:-$root/build/san/conformance-server}
case $fixture in /*) ;; *) fixture=$root/$fixture ;; esac
err=$(mktemp /tmp/conf-fixture.XXXXXX)
"$fixture" --http 0 2>"$err" &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null; rm -f "$err"' INT TERM
port=""
for _ in $(seq 1 500); do
	port=$(sed -n 's/.*listening on \([0-9]*\).*/\1/p' "$err")
	[ -n "$port" ] && break
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.01
done
if [ -z "$port" ]; then
	echo "conformance: the fixture did not start listening" >&2
	cat "$err" >&2
	kill -TERM "$pid" 2>/dev/null
	rm -f "$err"
	exit 2
fi
sh "$root/tests/conformance/run.sh" "http://127.0.0.1:$port/mcp" \
	"$root/tests/node_modules" "$@"
rc=$?
kill -TERM "$pid"
wait "$pid"
src=$?
if [ "$src" -ne 0 ]; then
	echo "conformance: the fixture exited with $src after SIGTERM" >&2
	tail -n 40 "$err" >&2
	rc=1
fi
rm -f "$err"
exit $rc
