#!/bin/sh
# Runs mcpvisor's test suites (unit, end-to-end, conformance, bench smoke,
# a short run of each fuzz harness) and ends with one line that sums them
# all: "N passed, M failed".
# Usage: tests/run.sh [all|unit|e2e|conformance|smoke|fuzz]
cd "$(dirname "$0")/.." || exit 2
what=${1:-all}
# Unit binaries run at once, and the bound on each (a hang fails it).
UNIT_JOBS=${UNIT_JOBS:-4}
UNIT_TIMEOUT=${UNIT_TIMEOUT:-600}
pass=0
fail=0
logdir=build/test-logs
mkdir -p "$logdir"

add() { # suite passed failed
	pass=$((pass + $2))
	fail=$((fail + $3))
	printf '%-28s %s passed, %s failed\n' "$1" "$2" "$3"
}

# One unit binary: its log, and "PASSING FAILED" in its .result file.
unit_one() { # binary
	bin=$1
	name=$(basename "$bin")
	log="$logdir/$name.log"
	# A hang is a failure, not a suite that never ends.
	timeout -k 10 "$UNIT_TIMEOUT" "$bin" --jobs 2 >"$log" 2>&1 3>&-
	line=$(grep 'Synthesis:' "$log" | tail -n 1)
	tested=$(echo "$line" | sed -n 's/.*Tested: \([0-9]*\).*/\1/p')
	passing=$(echo "$line" | sed -n 's/.*Passing: \([0-9]*\).*/\1/p')
	if [ -z "$tested" ]; then
		echo "0 1" >"$log.result"
		return
	fi
	failed=$((tested - passing))
	# Criterion counts a test that leaked as passing: read the
	# sanitizers' own reports.
	san=$(grep -c -E 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$log")
	[ "$san" -gt 0 ] && failed=$((failed + 1))
	echo "$passing $failed" >"$log.result"
}

# The binaries run UNIT_JOBS at a time (each runs its tests two at a
# time): most of their time is waiting on processes and timers, so on a
# busy machine the suite takes a third of the time it takes one by one.
# Reported in name order once all are done.
run_unit() {
	bins=""
	for bin in build/san/unit/test_*; do
		[ -x "$bin" ] && bins="$bins $bin"
	done
	# A token per free slot in a FIFO: each binary takes one and gives
	# it back when done (POSIX sh has no `wait -n`).
	fifo=$logdir/unit.slots
	rm -f "$fifo"
	mkfifo "$fifo" || return 1
	exec 3<>"$fifo"
	rm -f "$fifo"
	i=0
	while [ "$i" -lt "$UNIT_JOBS" ]; do
		echo >&3
		i=$((i + 1))
	done
	for bin in $bins; do
		rm -f "$logdir/$(basename "$bin").log.result"
		read -r _ <&3
		(
			unit_one "$bin"
			echo >&3
		) &
	done
	wait
	exec 3>&-
	for bin in $bins; do
		name=$(basename "$bin")
		log="$logdir/$name.log"
		read -r passing failed <"$log.result"
		rm -f "$log.result"
		if [ "$passing" = 0 ] && [ "$failed" = 1 ] &&
			! grep -q 'Synthesis:' "$log"; then
			echo "$name: no test summary; see $log"
			tail -n 20 "$log"
		else
			san=$(grep -c -E 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$log")
			[ "$san" -gt 0 ] &&
				echo "$name: $san sanitizer report(s); see $log"
			[ "$failed" -gt 0 ] &&
				grep -E '\[FAIL\]|\[----\].*(Assertion|crash|Timed out)|ERROR' "$log" | head -n 20
		fi
		add "unit/$name" "$passing" "$failed"
	done
}

run_e2e() {
	log="$logdir/e2e.log"
	MCPVISOR_BIN=${MCPVISOR_BIN:-build/san/mcpvisor} \
		DEMO_SERVER=${DEMO_SERVER:-build/san/demo-server} \
		node --test --test-reporter=tap --test-concurrency=2 tests/e2e/ \
		>"$log" 2>&1
	p=$(grep -E '^# pass ' "$log" | tail -n 1 | awk '{print $3}')
	f=$(grep -E '^# fail ' "$log" | tail -n 1 | awk '{print $3}')
	# A test that timed out is counted as cancelled, not failed.
	cx=$(grep -E '^# cancelled ' "$log" | tail -n 1 | awk '{print $3}')
	f=$((${f:-0} + ${cx:-0}))
	if [ -z "$p" ]; then
		tail -n 30 "$log"
		add e2e 0 1
		return
	fi
	[ "${f:-0}" -gt 0 ] && grep -E '^not ok|^# Subtest|error:|expected|actual' "$log" | head -n 40
	add e2e "$p" "${f:-0}"
}

# One conformance part: its log ends with "[Total: ]N passed, M failed".
conf_part() { # name command...
	name=$1
	shift
	log="$logdir/$name.log"
	"$@" >"$log" 2>&1
	rc=$?
	line=$(grep -E '^(Total: )?[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
	p=$(echo "$line" | sed -n 's/^[^0-9]*\([0-9]*\) passed.*/\1/p')
	f=$(echo "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
	if [ -z "$p" ]; then
		tail -n 30 "$log"
		add "$name" 0 1
		return
	fi
	[ "$rc" -ne 0 ] && [ "${f:-0}" -eq 0 ] && f=1
	[ "${f:-0}" -gt 0 ] && grep -E 'FAIL|failed:|✗' "$log" | head -n 20
	add "$name" "$p" "$f"
}

# The official suite both ways (mcpvisor in front of the C fixture over
# stdio, and over HTTP on a port it owns), the fixture alone over HTTP, the
# suite's client scenarios with mcpvisor as the client, and the fixtures'
# own checks over stdio and HTTP.
run_conformance() {
	c=tests/conformance
	conf_part conformance sh $c/run-against-runtime.sh
	conf_part conformance-http sh $c/run-against-runtime.sh --http
	conf_part conformance-fixture-http sh $c/run-fixture-http.sh
	conf_part conformance-client sh $c/run-client.sh
	conf_part fixture-stdio-check node $c/stdio-check.mjs build/san/conformance-server
	conf_part fixture-http-check node $c/http-check.mjs build/san
}

run_smoke() {
	log="$logdir/bench-smoke.log"
	sh bench/run.sh --smoke >"$log" 2>&1
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
	p=$(echo "$line" | awk '{print $1}')
	f=$(echo "$line" | awk '{print $3}')
	if [ -z "$p" ]; then
		tail -n 20 "$log"
		add bench-smoke 0 1
		return
	fi
	add bench-smoke "$p" "$f"
}

# Each harness built by `make fuzz-build` runs FUZZ_TEST_SECONDS (6 s keeps
# the six under 50 s on two shared cores); one pass when it found nothing, one
# failure for a crash, leak, timeout or oracle report (tests/fuzz/run.sh
# says which and where the input is). `make fuzz` runs them longer.
run_fuzz() {
	secs=${FUZZ_TEST_SECONDS:-6}
	t0=$(date +%s)
	: >"$logdir/fuzz.log"
	for src in tests/fuzz/fuzz_*.c; do
		name=$(basename "$src" .c)
		name=${name#fuzz_}
		line=$(sh tests/fuzz/run.sh "$secs" "$name")
		frc=$?
		echo "$line" >>"$logdir/fuzz.log"
		if [ $frc -eq 0 ]; then
			add "fuzz/$name" 1 0
		else
			echo "$line"
			add "fuzz/$name" 0 1
		fi
	done
	echo "(fuzz: $(($(date +%s) - t0)) s)"
}

start=$(date +%s)
case $what in
unit) run_unit ;;
e2e) run_e2e ;;
conformance) run_conformance ;;
smoke) run_smoke ;;
fuzz) run_fuzz ;;
all)
	run_unit
	run_e2e
	[ -f tests/conformance/run-against-runtime.sh ] && run_conformance
	[ -f bench/run.sh ] && run_smoke
	run_fuzz
	;;
*)
	echo "usage: tests/run.sh [all|unit|e2e|conformance|smoke|fuzz]" >&2
	exit 2
	;;
esac
echo "($(($(date +%s) - start)) s; logs in $logdir)"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
