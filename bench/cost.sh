#!/bin/sh
# What one tools/call costs mcpvisor, counted rather than timed, so that a
# change to the hot path can be measured before and after on a busy
# machine: instructions and allocations per call (valgrind's callgrind on
# the release `mcpvisor serve`), for a 2025-11-25 session and for a
# 2026-07-28 call, and system calls per 10,000 calls (strace -f). Each
# figure is the difference of two runs that differ only in the number of
# sequential calls (COST_BASE and COST_BASE + COST_CALLS), divided by
# COST_CALLS, so that start, initialize, warm-up and stop cancel out; the
# system calls also under 32 sessions at once (two windows, the
# difference over the difference of their calls; COST_CONCURRENT=0 skips).
# The same instructions for the two paths that go out through libcurl:
# `mcpvisor relay` (callgrind on the relay; the runtime it posts to is
# not watched) and a url server (callgrind on `mcpvisor serve`, the demo
# fixture's --http as the server); COST_HTTPC=0 skips them.
# Alone: `sh bench/cost.sh` (MCPVISOR=, LOADGEN=, ECHO_SERVER=,
# DEMO_SERVER= to measure other builds; COST_OUT=FILE for the JSON,
# bench/results/cost.json by default). make bench runs it once and puts
# the figures in latest.json. Every process it starts is stopped by pid.
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
MCPVISOR=${MCPVISOR:-$ROOT/build/mcpvisor}
LG=${LOADGEN:-$ROOT/build/bench/loadgen}
ECHO=${ECHO_SERVER:-$ROOT/build/bench/echo-server}
DEMO=${DEMO_SERVER:-$ROOT/build/demo-server}
BASE=${COST_BASE:-1000}
CALLS=${COST_CALLS:-10000}
OUT=${COST_OUT:-$ROOT/bench/results/cost.json}

for b in "$MCPVISOR" "$LG" "$ECHO"; do
	if [ ! -x "$b" ]; then
		echo "cost: $b is not built (make build/mcpvisor" \
			"build/bench/loadgen build/bench/echo-server)" >&2
		exit 1
	fi
done
for t in valgrind strace python3; do
	if ! command -v "$t" >/dev/null 2>&1; then
		echo "cost: $t is missing (sh scripts/deps.sh bench)" >&2
		exit 1
	fi
done

WORK=$(mktemp -d /tmp/mcpvisor-cost.XXXXXX) || exit 1
WRAP_PID=""
RT_PID=""
LG_PID=""
DEMO_PID=""
CONFIG=$WORK/mcp.json

cleanup() {
	for p in $LG_PID $RT_PID $WRAP_PID $DEMO_PID; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in $LG_PID $WRAP_PID $DEMO_PID; do
		wait "$p" 2>/dev/null
	done
	if [ -n "${COST_KEEP:-}" ]; then
		echo "cost: kept $WORK" >&2
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

cat >"$WORK/mcp.json" <<EOF
{"mcpServers":{"echo":{"command":"$ECHO","scope":"app","prefix":""}}}
EOF
cat >"$WORK/mcp-tools100.json" <<EOF
{"mcpServers":{"echo":{"command":"$ECHO","args":["--tools","100"],"scope":"app","prefix":""}}}
EOF

rt_field() { # file key: a field of the runtime file (one per line)
	sed -n "s/.*\"$2\": *\"\{0,1\}\([^\",]*\).*/\1/p" "$1" | head -n 1
}

# start NAME WRAPPER...: mcpvisor serve under WRAPPER, in the background;
# waits (60 s at most: valgrind is slow to start) for its runtime file.
start() {
	name=$1
	shift
	home=$WORK/home-$name
	mkdir -p "$home"
	"$@" "$MCPVISOR" serve --config "$CONFIG" --port 0 \
		--home "$home" >"$WORK/$name.log" 2>&1 &
	WRAP_PID=$!
	rt=$home/run/runtime.json
	i=0
	while [ "$i" -lt 1200 ]; do
		if [ -s "$rt" ] && grep -q '"url"' "$rt"; then
			URL=$(rt_field "$rt" url)
			RT_PID=$(rt_field "$rt" pid)
			return 0
		fi
		kill -0 "$WRAP_PID" 2>/dev/null || break
		sleep 0.05
		i=$((i + 1))
	done
	echo "cost: mcpvisor under $1 did not start:" >&2
	tail -n 5 "$WORK/$name.log" >&2
	return 1
}

# stop: SIGTERM to mcpvisor (the wrapper exits with it and writes its
# counts), SIGKILL to both if still there 60 s later.
stop() {
	kill -TERM "$RT_PID" 2>/dev/null
	i=0
	while kill -0 "$WRAP_PID" 2>/dev/null && [ "$i" -lt 1200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	kill -KILL "$RT_PID" "$WRAP_PID" 2>/dev/null
	wait "$WRAP_PID" 2>/dev/null
	WRAP_PID="" RT_PID=""
}

# calls N [--modern]: N sequential tools/call (after the loadgen's 50
# warm-up calls, the same in both runs), checked; fails the figure if any
# answer is wrong.
calls() {
	n=$1
	shift
	"$LG" --url "$URL" --timeout-ms 60000 "$@" latency --calls "$n" \
		>"$WORK/lg.out" 2>>"$WORK/lg.err" &
	LG_PID=$!
	wait "$LG_PID"
	LG_PID=""
	if ! grep -q '"ok":true' "$WORK/lg.out"; then
		echo "cost: the loadgen failed: $(head -c 300 "$WORK/lg.out")" \
			"$(tail -n 2 "$WORK/lg.err")" >&2
		return 1
	fi
}

# One callgrind file of mcpvisor for N calls: cg-KIND-N.
cg_run() { # kind n [--modern]
	kind=$1 n=$2
	shift 2
	start "cg-$kind-$n" valgrind --tool=callgrind -q \
		"--callgrind-out-file=$WORK/cg-$kind-$n.%p" || return 1
	pid=$RT_PID
	calls "$n" "$@" || {
		stop
		return 1
	}
	stop
	mv "$WORK/cg-$kind-$n.$pid" "$WORK/cg-$kind-$n" 2>/dev/null || {
		echo "cost: callgrind wrote nothing for $kind $n" >&2
		return 1
	}
}

# One callgrind file of `mcpvisor relay` for N calls (cg-relay-N), the
# relay posting to the runtime of HOME. The loadgen waits for the relay
# to exit, so the file is whole when it returns.
cg_relay_run() { # home n
	"$LG" --stdio --timeout-ms 60000 latency --calls "$2" -- \
		valgrind --tool=callgrind -q \
		"--callgrind-out-file=$WORK/cg-relay-$2.%p" \
		"$MCPVISOR" relay --home "$1" >"$WORK/lg.out" \
		2>>"$WORK/lg.err" &
	LG_PID=$!
	wait "$LG_PID"
	LG_PID=""
	if ! grep -q '"ok":true' "$WORK/lg.out"; then
		echo "cost: the loadgen failed through the relay:" \
			"$(head -c 300 "$WORK/lg.out")" >&2
		return 1
	fi
	for f in "$WORK/cg-relay-$2".*; do
		mv "$f" "$WORK/cg-relay-$2" 2>/dev/null && return 0
	done
	echo "cost: callgrind wrote nothing for the relay" >&2
	return 1
}

# The relay's pair: a runtime of the stdio echo (not under a tool), and
# the relay under callgrind in front of it for BASE and MANY calls.
relay_pair() {
	start relay-rt env || return 1
	ok=0
	cg_relay_run "$WORK/home-relay-rt" "$BASE" &&
		cg_relay_run "$WORK/home-relay-rt" "$MANY" && ok=1
	stop
	[ "$ok" = 1 ]
}

# The url server's pair: the demo fixture over HTTP on a free port, and
# mcpvisor serve under callgrind with it as a url server.
http_pair() {
	if [ ! -x "$DEMO" ]; then
		echo "cost: $DEMO is not built (make build/demo-server)" >&2
		return 1
	fi
	port=$("$LG" freeport)
	"$DEMO" --http "$port" >"$WORK/demo.log" 2>&1 &
	DEMO_PID=$!
	cat >"$WORK/mcp-http.json" <<END
{"mcpServers":{"echo":{"url":"http://127.0.0.1:$port/mcp","type":"http","scope":"app","prefix":""}}}
END
	CONFIG=$WORK/mcp-http.json
	ok=0
	cg_run http "$BASE" && cg_run http "$MANY" && ok=1
	CONFIG=$WORK/mcp.json
	kill -TERM "$DEMO_PID" 2>/dev/null
	wait "$DEMO_PID" 2>/dev/null
	DEMO_PID=""
	[ "$ok" = 1 ]
}

# One strace directory under 32 sessions for SECS seconds (no warm-up, so
# that every call counts); the loadgen's count of calls in st32-SECS.calls.
st32_run() { # secs
	secs=$1
	mkdir -p "$WORK/st32-$secs"
	start "st32-$secs" strace -f -ff -o "$WORK/st32-$secs/t" || return 1
	"$LG" --url "$URL" --timeout-ms 60000 throughput --sessions 32 \
		--seconds "$secs" --warmup 0 >"$WORK/lg.out" 2>>"$WORK/lg.err" &
	LG_PID=$!
	wait "$LG_PID"
	LG_PID=""
	stop
	if ! grep -q '"ok":true' "$WORK/lg.out"; then
		echo "cost: the loadgen failed: $(head -c 300 "$WORK/lg.out")" >&2
		return 1
	fi
	sed -n 's/.*"calls":\([0-9]*\).*/\1/p' "$WORK/lg.out" \
		>"$WORK/st32-$secs.calls"
}

# One strace directory (a file per process and thread) for N calls.
st_run() { # n
	n=$1
	mkdir -p "$WORK/st-$n"
	start "st-$n" strace -f -ff -o "$WORK/st-$n/t" || return 1
	calls "$n" || {
		stop
		return 1
	}
	stop
}

MANY=$((BASE + CALLS))
args=""
echo "cost: callgrind and strace on $MCPVISOR, $BASE and $MANY calls" >&2
if cg_run v2025 "$BASE" && cg_run v2025 "$MANY"; then
	args="$args --callgrind $WORK/cg-v2025-$BASE $WORK/cg-v2025-$MANY"
fi
CONFIG=$WORK/mcp-tools100.json
if cg_run tools100 "$BASE" && cg_run tools100 "$MANY"; then
	args="$args --callgrind-tools100 $WORK/cg-tools100-$BASE"
	args="$args $WORK/cg-tools100-$MANY"
fi
CONFIG=$WORK/mcp.json
if cg_run modern "$BASE" --modern && cg_run modern "$MANY" --modern; then
	args="$args --callgrind-modern $WORK/cg-modern-$BASE"
	args="$args $WORK/cg-modern-$MANY"
fi
if [ "${COST_HTTPC:-1}" = 1 ]; then
	if relay_pair; then
		args="$args --callgrind-relay $WORK/cg-relay-$BASE"
		args="$args $WORK/cg-relay-$MANY"
	fi
	if http_pair; then
		args="$args --callgrind-http $WORK/cg-http-$BASE"
		args="$args $WORK/cg-http-$MANY"
	fi
fi
if st_run "$BASE" && st_run "$MANY"; then
	args="$args --strace $WORK/st-$BASE $WORK/st-$MANY"
fi
# The same under 32 concurrent sessions: the difference of a 1 s and a
# 3 s window over the difference of their calls (batching shows here).
if [ "${COST_CONCURRENT:-1}" = 1 ] && st32_run 1 && st32_run 3; then
	args="$args --strace-32 $WORK/st32-1 $WORK/st32-3"
	args="$args $(cat "$WORK/st32-1.calls") $(cat "$WORK/st32-3.calls")"
fi
if [ -z "$args" ]; then
	echo "cost: no figure" >&2
	exit 1
fi
mkdir -p "$(dirname "$OUT")"
# shellcheck disable=SC2086 # the arguments are split on purpose
python3 "$ROOT/bench/cost.py" --calls "$CALLS" --base "$BASE" \
	--mcpvisor "$MCPVISOR" --out "$OUT" $args
