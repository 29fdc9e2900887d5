#!/bin/sh
# make bench: runs the C load generator, side by side, against the same echo
# server reached directly over stdio (the floor), through mcpvisor (TCP and
# Unix socket, one app-scoped shared instance; MCP 2026-07-28 requests on
# the same TCP endpoint; and `mcpvisor relay`, stdio in front of that
# socket), supergateway and mcp-proxy; and an echo served over
# HTTP (the demo fixture's --http) reached directly and through mcpvisor as a
# url server; the limit (nginx's fixed answer under wrk, and mcpvisor under
# the same load); and once, what a call costs in instructions, allocations
# and system calls (bench/cost.sh); prints one table and writes
# bench/results/latest.json.
# `--smoke` is the short check that make test runs. Every process it starts
# is stopped by pid.
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BENCH=$ROOT/bench
LG=$ROOT/build/bench/loadgen
ECHO=$ROOT/build/bench/echo-server
CURL_ALONE=$ROOT/build/bench/curl-alone
EXCHANGE=$ROOT/build/bench/exchange
# The echo served over HTTP: the demo fixture (its echo tool), --http PORT.
DEMO=${DEMO_SERVER:-$ROOT/build/demo-server}
ROUNDS=${BENCH_ROUNDS:-3}
SECS=${BENCH_SECONDS:-2}
CALLS=${BENCH_CALLS:-2000}
# The limit rows' wrk window: twice the throughput window, whole seconds.
WRK_SECS=$(awk "BEGIN { n = int(${SECS} * 2 + 0.5); print (n < 1 ? 1 : n) }")
# No round starts that would end (judging by the last one) after this.
BUDGET=${BENCH_BUDGET_S:-300}
NCPU=$(nproc 2>/dev/null || echo 1)
CLK_TCK=$(getconf CLK_TCK 2>/dev/null || echo 100)
# Our own CPUs: pinned runs use the first, unpinned ones get them all back.
ALLCPU=$(taskset -c -p $$ | sed 's/.*: //')
PINCPU=$(echo "$ALLCPU" | sed 's/[^0-9].*//')
SMOKE=0
[ "${1:-}" = "--smoke" ] && SMOKE=1

WORK=$(mktemp -d /tmp/mcpvisor-bench.XXXXXX) || exit 1
RAW=$WORK/raw.jsonl
: >"$RAW"
PIDS=""
HOST=""
LGPID=""
# Runtime files of runtimes a relay started (not our children).
RTFILES=""

cleanup() {
	for p in $LGPID $PIDS; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in $LGPID $PIDS; do
		wait "$p" 2>/dev/null
	done
	PIDS=""
	for f in $RTFILES; do
		stop_runtime "$f"
	done
	RTFILES=""
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

now_s() {
	date +%s
}

# A line that says a run produced nothing, so the report still has a row.
crash_line() { # target kind why
	printf '{"mode":"crash","target":"%s","kind":"%s","ok":false,"errors":1,"first_error":"%s"}\n' \
		"$1" "$2" "$3"
}

# run_lg TARGET ROUND KIND PIN LOADGEN-ARGS...: one loadgen run, one line.
# In the background, so that a signal stops the bench at once.
run_lg() {
	t=$1 r=$2 k=$3 pin=$4
	shift 4
	if [ "$pin" = 1 ]; then
		taskset -c "$PINCPU" "$LG" --meta target="$t" --meta round="$r" \
			--meta kind="$k" --meta pinned=1 "$@" \
			>"$WORK/line" 2>>"$WORK/loadgen.err" &
	else
		"$LG" --meta target="$t" --meta round="$r" --meta kind="$k" \
			--meta pinned=0 "$@" >"$WORK/line" 2>>"$WORK/loadgen.err" &
	fi
	LGPID=$!
	wait "$LGPID"
	LGPID=""
	out=$(head -n 1 "$WORK/line")
	[ -n "$out" ] || out=$(crash_line "$t" "$k" "loadgen printed nothing")
	printf '%s\n' "$out" >>"$RAW"
	LAST=$out
}

json_field() { # line key: a string or number field of a flat JSON line
	printf '%s\n' "$1" | sed -n "s/.*\"$2\":\"\{0,1\}\([^\",}]*\).*/\1/p"
}

# stop_runtime FILE: stops the runtime a relay started, by the pid in its
# runtime file: SIGTERM, and SIGKILL if it is still there 10 s later.
stop_runtime() {
	[ -f "$1" ] || return 0
	rtpid=$(json_field "$(cat "$1")" pid)
	[ -n "$rtpid" ] && kill -TERM "$rtpid" 2>/dev/null || return 0
	i=0
	while kill -0 "$rtpid" 2>/dev/null && [ "$i" -lt 200 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	kill -KILL "$rtpid" 2>/dev/null
	return 0
}

# host_start NAME TARGET ROUND LOADGEN-HOST-ARGS... -- CMD...: starts the
# gateway under `loadgen host` and waits for its first line.
host_start() {
	name=$1 t=$2 r=$3
	shift 3
	: >"$WORK/$name.out"
	"$LG" host --log "$WORK/$name.log" --meta target="$t" \
		--meta round="$r" --meta kind=host "$@" \
		>"$WORK/$name.out" 2>>"$WORK/$name.log" &
	HOST=$!
	PIDS="$PIDS $HOST"
	while [ ! -s "$WORK/$name.out" ] && kill -0 "$HOST" 2>/dev/null; do
		sleep 0.02
	done
	HOST_LINE=$(head -n 1 "$WORK/$name.out")
	[ -n "$HOST_LINE" ] ||
		HOST_LINE=$(crash_line "$t" host "host printed nothing")
	case $HOST_LINE in
	*'"ok":true'*) HOST_OK=1 ;;
	*) HOST_OK=0 ;;
	esac
	GWPID=$(json_field "$HOST_LINE" pid)
}

# host_stop NAME: stops the gateway (its host prints the exit line).
host_stop() {
	kill -TERM "$HOST" 2>/dev/null
	wait "$HOST" 2>/dev/null
	PIDS=$(echo "$PIDS" | sed "s/ $HOST\$//; s/ $HOST / /")
	cat "$WORK/$1.out" >>"$RAW"
	HOST=""
}

# pin_tree PID CPUS: moves a gateway and everything it spawned.
pin_tree() {
	for p in $("$LG" tree "$1" 2>/dev/null); do
		taskset -a -p -c "$2" "$p" >/dev/null 2>&1
	done
}

# HTTP runs of one round against a started gateway, for one transport.
http_runs() { # target round target-args...
	t=$1 r=$2
	shift 2
	pin_tree "$GWPID" "$PINCPU"
	run_lg "$t" "$r" latency_pinned 1 "$@" latency --calls "$CALLS"
	pin_tree "$GWPID" "$ALLCPU"
	run_lg "$t" "$r" latency 0 "$@" latency --calls "$CALLS"
	for n in 1 8 32; do
		run_lg "$t" "$r" "throughput_$n" 0 "$@" throughput \
			--sessions "$n" --seconds "$SECS"
	done
}

# mcpvisor over TCP, 2025-11-25 sessions (the figures of http_runs) and
# MCP 2026-07-28 requests (--modern: no session, _meta on each) to the
# same runtime and server, each modern figure right after its 2025 twin
# so that the two see the same machine: pinned latency and calls/s with 8
# and 32 sessions (clients, for the modern one).
tcp_runs() { # round url
	r=$1
	pin_tree "$GWPID" "$PINCPU"
	run_lg mcpvisor_tcp "$r" latency_pinned 1 --url "$2" latency \
		--calls "$CALLS"
	run_lg mcpvisor_modern "$r" latency_pinned 1 --url "$2" --modern \
		latency --calls "$CALLS"
	pin_tree "$GWPID" "$ALLCPU"
	run_lg mcpvisor_tcp "$r" latency 0 --url "$2" latency --calls "$CALLS"
	for n in 1 8 32; do
		run_lg mcpvisor_tcp "$r" "throughput_$n" 0 --url "$2" \
			throughput --sessions "$n" --seconds "$SECS"
		[ "$n" = 1 ] && continue
		run_lg mcpvisor_modern "$r" "throughput_$n" 0 --url "$2" \
			--modern throughput --sessions "$n" --seconds "$SECS"
	done
}

mcpvisor_config() { # file
	cat >"$1" <<EOF
{"mcpServers":{"echo":{"command":"$ECHO","scope":"app","prefix":""}}}
EOF
}

mcpvisor_round() { # round
	r=$1
	if [ ! -x "$MCPVISOR" ]; then
		for t in mcpvisor_tcp mcpvisor_modern mcpvisor_unix; do
			crash_line "$t" unavailable "$MCPVISOR is not built" >>"$RAW"
		done
		return
	fi
	home=$WORK/mcpvisor-home-$r
	mkdir -p "$home"
	host_start "mcpvisor-$r" mcpvisor "$r" --timeout-ms 10000 \
		--stop-ms 5000 --runtime-file "$home/run/runtime.json" \
		-- "$MCPVISOR" serve --config "$WORK/mcpvisor.json" --port 0 \
		--home "$home"
	if [ "$HOST_OK" != 1 ]; then
		why=$(json_field "$HOST_LINE" first_error)
		tail -n 5 "$WORK/mcpvisor-$r.log" >&2
		for t in mcpvisor_tcp mcpvisor_modern mcpvisor_unix; do
			crash_line "$t" unavailable "mcpvisor serve: $why" >>"$RAW"
		done
		host_stop "mcpvisor-$r"
		return
	fi
	url=$(json_field "$HOST_LINE" url)
	sock=$(json_field "$HOST_LINE" socket)
	tcp_runs "$r" "$url"
	if [ -n "$sock" ]; then
		http_runs mcpvisor_unix "$r" --unix "$sock" --path /mcp
		relay_runs "$r" "$home"
	else
		crash_line mcpvisor_unix unavailable \
			"runtime.json names no socket" >>"$RAW"
	fi
	host_stop "mcpvisor-$r"
}

# `mcpvisor relay` on the runtime of this round, as a host runs it: a stdio
# server to the loadgen, the runtime behind it on its Unix socket. Pinned
# like the others: loadgen, the relay (its child) and the runtime on one
# CPU. Its peak RSS is the relay's VmHWM; 'start' is spawn to the first
# answered tools/call with the runtime already running.
relay_runs() { # round home
	r=$1
	pin_tree "$GWPID" "$PINCPU"
	run_lg mcpvisor_relay "$r" latency_pinned 1 --stdio latency \
		--calls "$CALLS" -- "$MCPVISOR" relay --home "$2"
	pin_tree "$GWPID" "$ALLCPU"
	run_lg mcpvisor_relay "$r" latency 0 --stdio latency --calls "$CALLS" \
		-- "$MCPVISOR" relay --home "$2"
	run_lg mcpvisor_relay "$r" first_call 0 --stdio first-call \
		-- "$MCPVISOR" relay --home "$2"
	relay_cold_run "$r"
}

# The relay with no runtime running, on a home of its own: it starts one
# (in the background, its own session) and answers through it. 'start' is
# spawn to the first answered tools/call, the SPEC's "within a second";
# the runtime is stopped by its pid after.
relay_cold_run() { # round
	r=$1
	chome=$WORK/relay-cold-home-$r
	mkdir -p "$chome"
	cp "$WORK/mcpvisor.json" "$chome/mcp.json"
	RTFILES="$RTFILES $chome/run/runtime.json"
	run_lg mcpvisor_relay "$r" first_call_cold 0 --stdio first-call \
		-- "$MCPVISOR" relay --home "$chome"
	stop_runtime "$chome/run/runtime.json"
	RTFILES=$(echo "$RTFILES" | sed "s# $chome/run/runtime.json##")
}

peer_round() { # name round command...
	t=$1 r=$2
	shift 2
	port=$("$LG" freeport)
	url=http://127.0.0.1:$port/mcp
	# The command line holds the port: substitute it here.
	cmd=$(echo "$*" | sed "s/@PORT@/$port/g")
	# shellcheck disable=SC2086 # the command is split on purpose
	host_start "$t-$r" "$t" "$r" --timeout-ms 60000 --stop-ms 1500 \
		--url "$url" -- $cmd
	if [ "$HOST_OK" != 1 ]; then
		tail -n 5 "$WORK/$t-$r.log" >&2
		host_stop "$t-$r"
		return
	fi
	http_runs "$t" "$r" --url "$url"
	host_stop "$t-$r"
}

# mcpvisor's config for a url server: the HTTP echo at url.
mcpvisor_http_config() { # file url
	cat >"$1" <<EOF
{"mcpServers":{"echo":{"url":"$2","type":"http","scope":"app","prefix":""}}}
EOF
}

# Echo over HTTP: the fixture on a port of its own, called directly, then
# the same process through mcpvisor (a url server: mcpvisor's endpoint in,
# its HTTP client out). Pinned latency puts the loadgen, mcpvisor and the
# server on one CPU; throughput with 8 sessions runs unpinned. Fewer runs
# than the stdio rows: the row answers one question (what the hop adds)
# and keeps the bench within its time.
http_round() { # round
	r=$1
	if [ ! -x "$DEMO" ] || [ ! -x "$MCPVISOR" ]; then
		for t in http_direct mcpvisor_http; do
			crash_line "$t" unavailable \
				"$DEMO or $MCPVISOR is not built" >>"$RAW"
		done
		return
	fi
	port=$("$LG" freeport)
	url=http://127.0.0.1:$port/mcp
	host_start "httpd-$r" http_direct "$r" --timeout-ms 10000 \
		--stop-ms 1500 --url "$url" -- "$DEMO" --http "$port"
	if [ "$HOST_OK" != 1 ]; then
		why=$(json_field "$HOST_LINE" first_error)
		tail -n 5 "$WORK/httpd-$r.log" >&2
		for t in http_direct mcpvisor_http; do
			crash_line "$t" unavailable \
				"demo-server --http: $why" >>"$RAW"
		done
		host_stop "httpd-$r"
		return
	fi
	DHOST=$HOST DPID=$GWPID
	pin_tree "$DPID" "$PINCPU"
	run_lg http_direct "$r" latency_pinned 1 --url "$url" latency \
		--calls "$CALLS"
	pin_tree "$DPID" "$ALLCPU"
	ticks0=$(tree_ticks "$DPID")
	run_lg http_direct "$r" throughput_8 0 --url "$url" throughput \
		--sessions 8 --seconds "$SECS"
	cpu_line http_direct "$r" server_cpu_s "$DPID" "$ticks0"
	curl_alone_run "$r" "$url"
	home=$WORK/mcpvisor-http-home-$r
	mkdir -p "$home"
	mcpvisor_http_config "$WORK/mcpvisor-http.json" "$url"
	host_start "mvh-$r" mcpvisor_http "$r" --timeout-ms 10000 \
		--stop-ms 5000 --runtime-file "$home/run/runtime.json" \
		-- "$MCPVISOR" serve --config "$WORK/mcpvisor-http.json" \
		--port 0 --home "$home"
	if [ "$HOST_OK" = 1 ]; then
		mvurl=$(json_field "$HOST_LINE" url)
		pin_tree "$GWPID" "$PINCPU"
		pin_tree "$DPID" "$PINCPU"
		run_lg mcpvisor_http "$r" latency_pinned 1 --url "$mvurl" \
			latency --calls "$CALLS"
		pin_tree "$GWPID" "$ALLCPU"
		pin_tree "$DPID" "$ALLCPU"
		ticks0=$(tree_ticks "$DPID") mvticks0=$(tree_ticks "$GWPID")
		run_lg mcpvisor_http "$r" throughput_8 0 --url "$mvurl" \
			throughput --sessions 8 --seconds "$SECS"
		cpu_line mcpvisor_http "$r" server_cpu_s "$DPID" "$ticks0"
		cpu_line mcpvisor_http "$r" gateway_cpu_s "$GWPID" "$mvticks0"
	else
		why=$(json_field "$HOST_LINE" first_error)
		tail -n 5 "$WORK/mvh-$r.log" >&2
		crash_line mcpvisor_http unavailable "mcpvisor serve: $why" \
			>>"$RAW"
	fi
	host_stop "mvh-$r"
	HOST=$DHOST
	host_stop "httpd-$r"
}

# cpu_line TARGET ROUND KEY PID TICKS0: the CPU PID's tree used since
# TICKS0, as KEY of a line of its own (the last loadgen run's window).
cpu_line() {
	printf '{"mode":"cpu","target":"%s","round":"%s","%s":%s}\n' "$1" "$2" \
		"$3" "$(awk "BEGIN { print ($(tree_ticks "$4") - $5) / $CLK_TCK }")" \
		>>"$RAW"
}

# What libcurl alone costs a call (bench/curl-alone: a client of the same
# server through libcurl's multi interface, 8 sessions, nothing else): a
# runtime that forwards through libcurl pays at least that on top of its
# own work, which bounds via mcpvisor / direct.
curl_alone_run() { # round url
	if [ ! -x "$CURL_ALONE" ]; then
		crash_line curl_alone unavailable "$CURL_ALONE is not built" \
			>>"$RAW"
		return
	fi
	out=$("$CURL_ALONE" "$2" --sessions 8 --seconds "$SECS" \
		2>>"$WORK/loadgen.err")
	[ -n "$out" ] || out='{"mode":"curl_alone","ok":false,"errors":1,"first_error":"no output"}'
	printf '{"target":"curl_alone","round":"%s","kind":"throughput_8",%s\n' \
		"$1" "${out#\{}" >>"$RAW"
}

# The limit: what one HTTP exchange on loopback costs at all. nginx (one
# process: no master, no daemon; its own prefix, config and port) answers
# POST /mcp with a fixed tools/call result as application/json; then a
# fresh mcpvisor forwards the same tools/call to the echo server over
# stdio. Both under the same wrk load (one thread, 32 keep-alive
# connections, WRK_SECS), every answer checked by the script (a 2xx with
# a result). The two run back to back, in the other order in every other
# round, so that a round's ratio sees one machine.
limit_round() { # round
	r=$1
	NGINX=$(command -v nginx || echo /usr/sbin/nginx)
	WRK=$(command -v wrk || echo "")
	if [ ! -x "$NGINX" ] || [ -z "$WRK" ] || [ ! -x "$MCPVISOR" ] ||
		! command -v curl >/dev/null 2>&1; then
		for t in nginx mcpvisor_limit; do
			crash_line "$t" unavailable "nginx, wrk, curl or mcpvisor is missing (make bench-deps)" >>"$RAW"
		done
		return
	fi
	if [ $((r % 2)) = 1 ]; then
		nginx_run "$r"
		mcpvisor_limit_run "$r"
	else
		mcpvisor_limit_run "$r"
		nginx_run "$r"
	fi
}

# The wrk script: a fixed tools/call POST (the same id every time, as a
# fixed load is; mcpvisor answers each on its own request's stream) with
# the session's headers when MCP_SESSION is set; counts the answers that
# are not a 2xx with a result, and prints one JSON line.
limit_files() {
	cat >"$WORK/wrk.lua" <<'EOF'
wrk.method = "POST"
wrk.body = '{"jsonrpc":"2.0","id":2,"method":"tools/call",' ..
	'"params":{"name":"echo","arguments":{"text":"hello"}}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
local sid = os.getenv("MCP_SESSION")
if sid and sid ~= "" then
	wrk.headers["Mcp-Session-Id"] = sid
	wrk.headers["MCP-Protocol-Version"] = "2025-11-25"
end
bad = 0
first = ""
local threads = {}
function setup(thread)
	table.insert(threads, thread)
end
function response(status, headers, body)
	if status < 200 or status > 299 or
		not string.find(body or "", '"result"', 1, true) then
		bad = bad + 1
		if first == "" then
			first = (status .. " " .. (body or ""):sub(1, 80)):gsub(
				'[^%w %-_:,.{}]', '.')
		end
	end
end
function done(summary, latency, requests)
	local nbad, why = 0, ""
	for _, t in ipairs(threads) do
		nbad = nbad + (t:get("bad") or 0)
		if why == "" then why = t:get("first") or "" end
	end
	local e = summary.errors
	io.write(string.format('{"requests":%d,"duration_us":%d,' ..
		'"requests_per_s":%.1f,"bad_answers":%d,"socket_errors":%d,' ..
		'"p50_ms":%.3f,"p99_ms":%.3f,"first_bad":"%s"}\n',
		summary.requests, summary.duration,
		summary.requests * 1e6 / summary.duration, nbad,
		e.connect + e.read + e.write + e.timeout,
		latency:percentile(50) / 1000, latency:percentile(99) / 1000,
		why))
end
EOF
}

nginx_config() { # dir port
	mkdir -p "$1/tmp"
	cat >"$1/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
pid $1/nginx.pid;
error_log $1/error.log warn;
events { worker_connections 1024; }
http {
	access_log off;
	client_body_temp_path $1/tmp/body;
	proxy_temp_path $1/tmp/proxy;
	fastcgi_temp_path $1/tmp/fastcgi;
	uwsgi_temp_path $1/tmp/uwsgi;
	scgi_temp_path $1/tmp/scgi;
	keepalive_requests 1000000000;
	server {
		listen 127.0.0.1:$2;
		location = /mcp {
			default_type application/json;
			return 200 '{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"hello"}]}}';
		}
	}
}
EOF
}

# tree_ticks PID: CPU clock ticks (user + system) used so far by a
# gateway and everything it spawned that still runs.
tree_ticks() {
	tt_sum=0
	for tt_pid in $("$LG" tree "$1" 2>/dev/null); do
		tt_n=$(sed 's/.*) //' "/proc/$tt_pid/stat" 2>/dev/null |
			awk '{ print $12 + $13 }')
		tt_sum=$((tt_sum + ${tt_n:-0}))
	done
	echo "$tt_sum"
}

# wrk_run TARGET ROUND URL [SESSION]: one wrk window, one line in RAW,
# with the CPU the gateway (GWPID and all it spawned) used in it.
wrk_run() {
	ticks0=$(tree_ticks "$GWPID")
	MCP_SESSION=${4:-} "$WRK" -t1 -c32 -d"${WRK_SECS}s" --timeout 5s \
		-s "$WORK/wrk.lua" "$3" >"$WORK/wrk.out" 2>>"$WORK/wrk.err" &
	LGPID=$!
	wait "$LGPID"
	LGPID=""
	ticks=$(($(tree_ticks "$GWPID") - ticks0))
	line=$(grep '^{"requests"' "$WORK/wrk.out" | head -n 1)
	if [ -z "$line" ]; then
		crash_line "$1" wrk "wrk printed nothing" >>"$RAW"
		tail -n 3 "$WORK/wrk.err" >&2
		return
	fi
	printf '{"mode":"wrk","target":"%s","round":"%s","kind":"wrk","cpu_s":%s,%s\n' \
		"$1" "$2" "$(awk "BEGIN { print $ticks / $CLK_TCK }")" \
		"${line#\{}" >>"$RAW"
}

# One HTTP exchange alone, pinned with nginx on one CPU as the latency
# rows are: what a hop pays before any runtime does any work.
exchange_run() { # round port
	if [ ! -x "$EXCHANGE" ]; then
		crash_line nginx_exchange unavailable "$EXCHANGE is not built" \
			>>"$RAW"
		return
	fi
	pin_tree "$GWPID" "$PINCPU"
	out=$(taskset -c "$PINCPU" "$EXCHANGE" "$2" --calls "$CALLS" \
		2>>"$WORK/loadgen.err")
	pin_tree "$GWPID" "$ALLCPU"
	[ -n "$out" ] || out='{"mode":"exchange","ok":false,"errors":1,"first_error":"no output"}'
	printf '{"target":"nginx_exchange","round":"%s","kind":"latency_pinned",%s\n' \
		"$1" "${out#\{}" >>"$RAW"
}

nginx_run() { # round
	r=$1
	port=$("$LG" freeport)
	url=http://127.0.0.1:$port/mcp
	dir=$WORK/nginx-$r
	nginx_config "$dir" "$port"
	host_start "nginx-$r" nginx "$r" --timeout-ms 10000 --stop-ms 3000 \
		--ready connect --url "$url" \
		-- "$NGINX" -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log"
	if [ "$HOST_OK" = 1 ]; then
		wrk_run nginx "$r" "$url"
		exchange_run "$r" "$port"
	else
		tail -n 5 "$dir/error.log" "$WORK/nginx-$r.log" >&2
		crash_line nginx unavailable "nginx did not start" >>"$RAW"
	fi
	host_stop "nginx-$r"
}

# open_session URL: initialize, then notifications/initialized; prints
# the Mcp-Session-Id (nothing when either failed).
open_session() {
	curl -sS --max-time 10 -D "$WORK/init.h" -o /dev/null \
		-H 'Content-Type: application/json' \
		-H 'Accept: application/json, text/event-stream' \
		-d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcpvisor-bench-wrk","version":"1.0.0"}}}' \
		"$1" || return 0
	sid=$(tr -d '\r' <"$WORK/init.h" |
		sed -n 's/^[Mm][Cc][Pp]-[Ss]ession-[Ii][Dd]: *//p')
	[ -n "$sid" ] || return 0
	curl -sS --max-time 10 -o /dev/null -H 'Content-Type: application/json' \
		-H "Mcp-Session-Id: $sid" -H 'MCP-Protocol-Version: 2025-11-25' \
		-d '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
		"$1" || return 0
	echo "$sid"
}

mcpvisor_limit_run() { # round
	r=$1
	home=$WORK/limit-home-$r
	mkdir -p "$home"
	host_start "limit-$r" mcpvisor_limit "$r" --timeout-ms 10000 \
		--stop-ms 5000 --runtime-file "$home/run/runtime.json" \
		-- "$MCPVISOR" serve --config "$WORK/mcpvisor.json" --port 0 \
		--home "$home"
	if [ "$HOST_OK" != 1 ]; then
		why=$(json_field "$HOST_LINE" first_error)
		crash_line mcpvisor_limit unavailable "mcpvisor serve: $why" \
			>>"$RAW"
		host_stop "limit-$r"
		return
	fi
	url=$(json_field "$HOST_LINE" url)
	sid=$(open_session "$url")
	if [ -n "$sid" ]; then
		wrk_run mcpvisor_limit "$r" "$url" "$sid"
		# Its RSS right after the window (the host's line has the peak).
		st=/proc/$GWPID/status
		rss=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\).*/\1/p' "$st" 2>/dev/null)
		printf '{"mode":"wrk-rss","target":"mcpvisor_limit","round":"%s","kind":"rss","rss_kb":%s}\n' \
			"$r" "${rss:-null}" >>"$RAW"
	else
		crash_line mcpvisor_limit wrk "no session: initialize failed" \
			>>"$RAW"
	fi
	host_stop "limit-$r"
}

# What one call costs mcpvisor, counted (bench/cost.sh), once, on the
# binaries of this run; its figures go into latest.json.
cost_run() {
	COST=$WORK/cost.json
	MCPVISOR=$MCPVISOR LOADGEN=$LG ECHO_SERVER=$ECHO COST_OUT=$COST \
		sh "$BENCH/cost.sh" &
	LGPID=$!
	wait "$LGPID" || echo "bench: cost.sh failed; no cost figures" >&2
	LGPID=""
}

floor_round() { # round
	r=$1
	run_lg floor "$r" first_call 0 --stdio first-call -- "$ECHO"
	run_lg floor "$r" latency_pinned 1 --stdio latency --calls "$CALLS" \
		-- "$ECHO"
	run_lg floor "$r" latency 0 --stdio latency --calls "$CALLS" -- "$ECHO"
	for n in 1 8 32; do
		run_lg floor "$r" "throughput_$n" 0 --stdio throughput \
			--sessions "$n" --seconds "$SECS" -- "$ECHO"
	done
	# For reference only, so once: what a host with no runtime does.
	[ "$r" = 1 ] || return 0
	for n in 8 32; do
		run_lg floor_per_session "$r" "throughput_$n" 0 \
			--stdio-per-session throughput --sessions "$n" \
			--seconds "$SECS" -- "$ECHO"
	done
}

# The SPEC's relay timings (its table: the runtime stopped, the runtime
# the relay started frozen, one it did not start frozen, a program on the
# port that never answers, a credential asked for), measured by the
# scenarios of tests/e2e/relay-recovery.test.mjs on this build: each
# writes its figure to FIGURES, which the report sets beside the target.
relay_recovery() {
	FIGURES=$WORK/figures.jsonl
	: >"$FIGURES"
	if [ ! -x "$MCPVISOR" ] || [ ! -x "$DEMO" ] ||
		! command -v node >/dev/null 2>&1; then
		echo "bench: relay recovery skipped (no mcpvisor, demo-server" \
			"or node)" >&2
		return
	fi
	sh "$ROOT/scripts/npm-deps.sh" || return
	MCPVISOR_BIN=$MCPVISOR DEMO_SERVER=$DEMO MCPVISOR_FIGURES=$FIGURES \
		node --test --test-concurrency=1 \
		"$ROOT/tests/e2e/relay-recovery.test.mjs" \
		>"$WORK/relay-recovery.log" 2>&1 &
	LGPID=$!
	if ! wait "$LGPID"; then
		echo "bench: a relay recovery scenario failed:" >&2
		grep -E '^not ok|error:' "$WORK/relay-recovery.log" | head -n 10 >&2
	fi
	LGPID=""
}

# RSS idle and with open sessions, time to answer, first tools/list.
mcpvisor_extras() {
	[ -x "$MCPVISOR" ] || return
	home=$WORK/mcpvisor-home-x
	mkdir -p "$home"
	host_start mcpvisor-x mcpvisor_extras 0 --timeout-ms 10000 \
		--ready init --settle-ms 300 \
		--runtime-file "$home/run/runtime.json" \
		-- "$MCPVISOR" serve --config "$WORK/mcpvisor.json" --port 0 \
		--home "$home"
	if [ "$HOST_OK" = 1 ]; then
		url=$(json_field "$HOST_LINE" url)
		run_lg mcpvisor_extras 0 list_cold 0 --url "$url" list
		run_lg mcpvisor_extras 0 list_warm 0 --url "$url" list
		for n in 100 1000; do
			run_lg mcpvisor_extras 0 "sessions_$n" 0 --url "$url" \
				--timeout-ms 30000 sessions --open "$n" \
				--rss-pid "$GWPID" --settle-ms 200 </dev/null
		done
	fi
	host_stop mcpvisor-x
}

find_mcpvisor() {
	if [ -n "${MCPVISOR:-}" ]; then
		return
	fi
	MCPVISOR=$ROOT/build/mcpvisor
	if [ "$SMOKE" = 1 ] && [ -x "$ROOT/build/san/mcpvisor" ]; then
		MCPVISOR=$ROOT/build/san/mcpvisor
	fi
}

# The smoke runs the fixture make test built (sanitized) unless told.
find_demo() {
	if [ "$SMOKE" = 1 ] && [ -z "${DEMO_SERVER:-}" ] &&
		[ -x "$ROOT/build/san/demo-server" ]; then
		DEMO=$ROOT/build/san/demo-server
	fi
}

smoke_check() { # name: counts the last loadgen line
	case $LAST in
	*'"ok":true'*)
		PASS=$((PASS + 1))
		echo "ok   $1"
		;;
	*)
		FAIL=$((FAIL + 1))
		echo "FAIL $1: $LAST"
		;;
	esac
}

smoke() {
	PASS=0 FAIL=0
	# Always through make: a load generator older than its source (a
	# tree updated since it was built) is rebuilt, not run stale.
	make -s -C "$ROOT" build/bench/loadgen build/bench/echo-server \
		build/bench/curl-alone || {
		echo "0 passed, 1 failed"
		exit 1
	}
	snapshot_binaries
	run_lg floor 0 latency 0 --stdio latency --calls 200 --warmup-calls 10 \
		-- "$ECHO"
	smoke_check "stdio latency"
	run_lg floor 0 throughput 0 --stdio throughput --sessions 4 \
		--seconds 0.3 --warmup 0.05 -- "$ECHO"
	smoke_check "stdio throughput, 4 sessions"
	run_lg floor 0 throughput 0 --stdio-per-session throughput \
		--sessions 2 --seconds 0.2 --warmup 0.05 -- "$ECHO"
	smoke_check "stdio throughput, a server per session"
	run_lg floor 0 first_call 0 --stdio first-call -- "$ECHO"
	smoke_check "stdio first call"
	run_lg floor 0 list 0 --stdio list -- "$ECHO"
	smoke_check "stdio tools/list"
	if [ -x "$MCPVISOR" ]; then
		mcpvisor_config "$WORK/mcpvisor.json"
		mkdir -p "$WORK/home"
		host_start mcpvisor-smoke mcpvisor 0 --timeout-ms 10000 \
			--stop-ms 5000 --runtime-file "$WORK/home/run/runtime.json" \
			-- "$MCPVISOR" serve --config "$WORK/mcpvisor.json" \
			--port 0 --home "$WORK/home"
		LAST=$HOST_LINE
		smoke_check "mcpvisor serve answers a tools/call"
		if [ "$HOST_OK" = 1 ]; then
			url=$(json_field "$HOST_LINE" url)
			sock=$(json_field "$HOST_LINE" socket)
			run_lg mcpvisor_tcp 0 latency 0 --url "$url" latency \
				--calls 200 --warmup-calls 10
			smoke_check "mcpvisor tcp latency"
			run_lg mcpvisor_tcp 0 throughput 0 --url "$url" \
				throughput --sessions 4 --seconds 0.3 --warmup 0.05
			smoke_check "mcpvisor tcp throughput, 4 sessions"
			run_lg mcpvisor_modern 0 latency 0 --url "$url" \
				--modern latency --calls 200 --warmup-calls 10
			smoke_check "mcpvisor tcp latency, 2026-07-28 requests"
			run_lg mcpvisor_modern 0 throughput 0 --url "$url" \
				--modern throughput --sessions 4 --seconds 0.3 \
				--warmup 0.05
			smoke_check "mcpvisor tcp throughput, 4 clients, 2026-07-28"
			run_lg mcpvisor_unix 0 latency 0 --unix "$sock" \
				--path /mcp latency --calls 200 --warmup-calls 10
			smoke_check "mcpvisor unix latency"
			run_lg mcpvisor_unix 0 throughput 0 --unix "$sock" \
				--path /mcp throughput --sessions 4 --seconds 0.3 \
				--warmup 0.05
			smoke_check "mcpvisor unix throughput, 4 sessions"
			run_lg mcpvisor_tcp 0 sessions 0 --url "$url" sessions \
				--open 20 </dev/null
			smoke_check "mcpvisor holds 20 sessions"
			run_lg mcpvisor_relay 0 latency 0 --stdio latency \
				--calls 200 --warmup-calls 10 \
				-- "$MCPVISOR" relay --home "$WORK/home"
			smoke_check "mcpvisor relay latency (stdio to the socket)"
		fi
		host_stop mcpvisor-smoke
		if [ "$HOST_OK" = 1 ]; then
			LAST=$(tail -n 1 "$RAW")
			case $LAST in
			*'"leftover":0'*) ;;
			*) LAST="$LAST (processes left behind)" ;;
			esac
			smoke_check "mcpvisor stops and leaves no process"
		fi
	else
		echo "skip mcpvisor: $MCPVISOR is not built"
	fi
	smoke_http
	echo "$PASS passed, $FAIL failed"
	[ "$FAIL" -eq 0 ]
}

# The echo over HTTP, directly and through mcpvisor as a url server.
smoke_http() {
	if [ ! -x "$DEMO" ] || [ ! -x "$MCPVISOR" ]; then
		echo "skip echo over HTTP: $DEMO or $MCPVISOR is not built"
		return
	fi
	port=$("$LG" freeport)
	url=http://127.0.0.1:$port/mcp
	host_start httpd-smoke http_direct 0 --timeout-ms 10000 \
		--stop-ms 1500 --url "$url" -- "$DEMO" --http "$port"
	LAST=$HOST_LINE
	smoke_check "echo over HTTP answers a tools/call"
	if [ "$HOST_OK" = 1 ]; then
		DHOST=$HOST
		run_lg http_direct 0 latency 0 --url "$url" latency \
			--calls 200 --warmup-calls 10
		smoke_check "echo over HTTP, direct latency"
		LAST=$("$CURL_ALONE" "$url" --sessions 2 --seconds 0.3)
		smoke_check "echo over HTTP, direct through libcurl alone"
		mcpvisor_http_config "$WORK/mcpvisor-http.json" "$url"
		mkdir -p "$WORK/home-http"
		host_start mvh-smoke mcpvisor_http 0 --timeout-ms 10000 \
			--stop-ms 5000 \
			--runtime-file "$WORK/home-http/run/runtime.json" \
			-- "$MCPVISOR" serve --config "$WORK/mcpvisor-http.json" \
			--port 0 --home "$WORK/home-http"
		LAST=$HOST_LINE
		smoke_check "mcpvisor serves a url server (echo over HTTP)"
		if [ "$HOST_OK" = 1 ]; then
			mvurl=$(json_field "$HOST_LINE" url)
			run_lg mcpvisor_http 0 latency 0 --url "$mvurl" latency \
				--calls 200 --warmup-calls 10
			smoke_check "echo over HTTP via mcpvisor, latency"
			run_lg mcpvisor_http 0 throughput 0 --url "$mvurl" \
				throughput --sessions 4 --seconds 0.3 --warmup 0.05
			smoke_check "echo over HTTP via mcpvisor, 4 sessions"
		fi
		host_stop mvh-smoke
		if [ "$HOST_OK" = 1 ]; then
			LAST=$(tail -n 1 "$RAW")
			case $LAST in
			*'"leftover":0'*) ;;
			*) LAST="$LAST (processes left behind)" ;;
			esac
			smoke_check "mcpvisor with a url server stops, no process left"
		fi
		HOST=$DHOST
	fi
	host_stop httpd-smoke
}

machine_info() { # file: what the report says about the machine
	read -r l1 l5 l15 _ </proc/loadavg
	cpu=$(head -n 1 /proc/stat)
	cat >"$1" <<EOF
{"loadavg":[$l1,$l5,$l15],"stat_cpu":"$cpu","ncpu":$NCPU,
"node":"$(node --version 2>/dev/null)",
"kernel":"$(uname -r)","model":"$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1)",
"busy":"$(ps -eo pcpu=,comm= --sort=-pcpu 2>/dev/null | head -n 3 | tr -s ' ' | tr '\n' ';')"}
EOF
}

bench() {
	if [ ! -x "$LG" ] || [ ! -x "$ECHO" ]; then
		echo "bench: run make bench (build/bench is missing)" >&2
		exit 1
	fi
	snapshot_binaries
	if [ ! -d "$BENCH/node_modules" ]; then
		echo "bench: installing the pinned peers (npm ci)"
		(cd "$BENCH" && npm ci --no-audit --no-fund --loglevel=error) ||
			exit 1
	fi
	SG=$BENCH/node_modules/.bin/supergateway
	MP=$BENCH/node_modules/.bin/mcp-proxy
	mcpvisor_config "$WORK/mcpvisor.json"
	limit_files
	machine_info "$WORK/before.json"
	start=$(now_s)
	r=1
	last=0
	echo "bench: $ROUNDS rounds of $CALLS sequential calls and ${SECS} s" \
		"throughput windows per target (wrk: ${WRK_SECS} s); 4 to 6" \
		"minutes"
	while [ "$r" -le "$ROUNDS" ]; do
		t0=$(now_s)
		if [ $((t0 - start + last)) -gt "$BUDGET" ]; then
			echo "bench: time budget reached, stopping after" \
				"$((r - 1)) rounds"
			break
		fi
		echo "bench: round $r/$ROUNDS"
		floor_round "$r"
		mcpvisor_round "$r"
		http_round "$r"
		limit_round "$r"
		peer_round supergateway "$r" "$SG" --stdio "$ECHO" \
			--outputTransport streamableHttp --stateful \
			--port @PORT@ --logLevel none
		peer_round mcp_proxy "$r" "$MP" --port @PORT@ --host 127.0.0.1 \
			-- "$ECHO"
		last=$(($(now_s) - t0))
		r=$((r + 1))
	done
	mcpvisor_extras
	cost_run
	relay_recovery
	machine_info "$WORK/after.json"
	# CPU of everything we ran (children, waited for): the rest is others'.
	# Not in a pipeline: that would be a subshell's times.
	times >"$WORK/times"
	own=$(tail -n 1 "$WORK/times")
	mkdir -p "$BENCH/results"
	python3 "$BENCH/report.py" --raw "$RAW" --before "$WORK/before.json" \
		--after "$WORK/after.json" --seconds "$(($(now_s) - start))" \
		--calls "$CALLS" --window "$SECS" --package "$BENCH/package.json" \
		--own-cpu "$own" --figures "$WORK/figures.jsonl" \
		--cost "$WORK/cost.json" --wrk-seconds "$WRK_SECS" \
		--out "$BENCH/results/latest.json"
}

# Every round runs the same build, even if build/ is relinked meanwhile.
snapshot_binaries() {
	[ -x "$LG" ] && [ -x "$ECHO" ] || return 0
	cp "$LG" "$WORK/loadgen" && cp "$ECHO" "$WORK/echo-server" || exit 1
	LG=$WORK/loadgen
	ECHO=$WORK/echo-server
	if [ -x "$MCPVISOR" ]; then
		cp "$MCPVISOR" "$WORK/mcpvisor" || exit 1
		MCPVISOR=$WORK/mcpvisor
	fi
	if [ -x "$DEMO" ]; then
		cp "$DEMO" "$WORK/demo-server" || exit 1
		DEMO=$WORK/demo-server
	fi
	for b in curl-alone exchange; do
		if [ -x "$ROOT/build/bench/$b" ]; then
			cp "$ROOT/build/bench/$b" "$WORK/$b" || exit 1
		fi
	done
	CURL_ALONE=$WORK/curl-alone EXCHANGE=$WORK/exchange
}

find_mcpvisor
find_demo
if [ "$SMOKE" = 1 ]; then
	smoke
else
	bench
fi
