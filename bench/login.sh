#!/bin/sh
# The `mcpvisor login` round trip against the e2e authorization server
# fixture (tests/e2e/fixtures/oauth-server.mjs), the browser excluded (issue
# 18's closing note): RUNS logins, each into a fresh state folder (so each
# discovers, registers and exchanges its code), with a wrapper around
# tests/e2e/fixtures/browser.sh that timestamps itself; prints each run and
# the median and range of login's wall time minus the browser's time within
# it. The fixture is stopped by its pid.
#   sh bench/login.sh [RUNS]       (default 10; MCPVISOR=... another build)
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
RUNS=${1:-10}
BIN=${MCPVISOR:-$ROOT/build/mcpvisor}
WORK=$(mktemp -d /tmp/mcpv-login-bench-XXXXXX)
FX_PID=
cleanup() {
	if [ -n "$FX_PID" ]; then
		kill "$FX_PID" 2>/dev/null || true
		wait "$FX_PID" 2>/dev/null || true
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

node "$ROOT/tests/e2e/fixtures/oauth-server.mjs" >"$WORK/fx.out" 2>&1 &
FX_PID=$!
i=0
while ! grep -q 'listening on' "$WORK/fx.out"; do
	i=$((i + 1))
	[ $i -lt 200 ] || { cat "$WORK/fx.out"; exit 1; }
	sleep 0.05
done
PORT=$(sed -n 's/.*listening on \([0-9]*\).*/\1/p' "$WORK/fx.out" | head -1)

# The browser: browser.sh, its start and end (ns) on one line.
cat >"$WORK/browser" <<EOB
#!/bin/sh
s=\$(date +%s%N)
"$ROOT/tests/e2e/fixtures/browser.sh" "\$1"
rc=\$?
echo "\$s \$(date +%s%N)" >>"\$BENCH_BROWSER_LOG"
exit \$rc
EOB
chmod +x "$WORK/browser"

n=0
while [ $n -lt "$RUNS" ]; do
	n=$((n + 1))
	home=$WORK/home$n
	mkdir -p "$home"
	printf '{"mcpServers":{"fx":{"url":"http://127.0.0.1:%s/mcp"}}}\n' \
		"$PORT" >"$home/mcp.json"
	: >"$WORK/browser.log"
	t0=$(date +%s%N)
	BENCH_BROWSER_LOG=$WORK/browser.log BROWSER=$WORK/browser \
		"$BIN" login fx --config "$home/mcp.json" --home "$home" \
		>"$WORK/login.out" 2>&1 || { cat "$WORK/login.out"; exit 1; }
	t1=$(date +%s%N)
	# login exits once the redirect is in, maybe before its browser
	# does: wait for the browser's line, and count its time within
	# login's only.
	i=0
	while ! [ -s "$WORK/browser.log" ]; do
		i=$((i + 1))
		[ $i -lt 250 ] || { echo "the browser never ended"; exit 1; }
		sleep 0.02
	done
	read -r b0 b1 <"$WORK/browser.log"
	[ "$b1" -le "$t1" ] || b1=$t1
	echo "$(((t1 - t0) / 1000)) $(((b1 - b0) / 1000))"
done >"$WORK/runs"

awk '{printf "run %d: login %.1f ms, browser %.1f ms, login without it %.1f ms\n",
	NR, $1 / 1000, $2 / 1000, ($1 - $2) / 1000}' "$WORK/runs"
awk '{print ($1 - $2) / 1000}' "$WORK/runs" | sort -n | awk '{v[NR] = $1}
END {med = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
	printf "login without the browser, %d runs: median %.1f ms, range %.1f-%.1f ms\n",
		NR, med, v[1], v[NR]}'
