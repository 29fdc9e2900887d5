#!/bin/sh
# Runs mcpvisor's test suites (unit, end-to-end, conformance, bench smoke,
# a short run of each fuzz harness) and ends with one line that sums them
# all: "N passed, M failed".
# Usage: tests/run.sh [all|unit|e2e|conformance|smoke|fuzz]
cd "$(dirname "$0")/.." || exit 2
what=${1:-all}
# Unit binaries run at once, and the bound on each (a hang fails it);
# end-to-end files run at once. Both mostly wait on processes and timers:
# on two busy CPUs the suite keeps within 10 minutes this way.
UNIT_JOBS=${UNIT_JOBS:-4}
UNIT_TIMEOUT=${UNIT_TIMEOUT:-600}
E2E_JOBS=${E2E_JOBS:-4}
CONF_JOBS=${CONF_JOBS:-3}
pass=0
fail=0
logdir=build/test-logs
mkdir -p "$logdir"

add() { # suite passed failed
	pass=$((pass + $2))
	fail=$((fail + $3))
	printf '%-28s %s passed, %s failed\n' "$1" "$2" "$3"
}

# Runs each command line of stdin as `sh -c`, at most $1 at a time, and
# waits for them all: a token per free slot in a FIFO, each job takes one
# and gives it back when done (POSIX sh has no `wait -n`). Jobs see
# neither the FIFO nor the list (stdin is /dev/null).
run_slots() { # n < command lines
	fifo=$logdir/slots.$$
	rm -f "$fifo"
	mkfifo "$fifo" || return 1
	exec 3<>"$fifo"
	rm -f "$fifo"
	i=0
	while [ "$i" -lt "$1" ]; do
		echo >&3
		i=$((i + 1))
	done
	while IFS= read -r job; do
		read -r _ <&3
		(
			sh -c "$job" 3>&- </dev/null
			echo >&3
		) &
	done
	wait
	exec 3>&-
}

# One unit binary: its log, and "PASSING FAILED" in its .result file.
unit_one() { # binary
	bin=$1
	name=$(basename "$bin")
	log="$logdir/$name.log"
	# A hang is a failure, not a suite that never ends.
	timeout -k 10 "$UNIT_TIMEOUT" "$bin" --jobs 2 >"$log" 2>&1
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
	for bin in $bins; do
		rm -f "$logdir/$(basename "$bin").log.result"
		echo "sh tests/run.sh unit-one $bin"
	done | run_slots "$UNIT_JOBS"
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
		node --test --test-reporter=tap --test-concurrency="$E2E_JOBS" tests/e2e/ \
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

# One conformance part: its log ends with "[Total: ]N passed, M failed";
# its exit status goes to the .rc file beside it.
conf_run() { # name command...
	name=$1
	shift
	"$@" >"$logdir/$name.log" 2>&1
	echo $? >"$logdir/$name.log.rc"
}

conf_report() { # name
	name=$1
	log="$logdir/$name.log"
	rc=$(cat "$log.rc" 2>/dev/null || echo 1)
	rm -f "$log.rc"
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

# The client authorization scenarios the 2025-11-25 revision requires
# (tests/conformance/auth/'s release of the suite): one part each, so that
# they share the slots; each signs in with `mcpvisor login` in a new home.
CONF_AUTH="metadata-default metadata-var1 metadata-var2 metadata-var3
	basic-cimd scope-from-www-authenticate scope-from-scopes-supported
	scope-omitted-when-undefined scope-step-up scope-retry-limit
	token-endpoint-auth-basic token-endpoint-auth-post
	token-endpoint-auth-none pre-registration"
# And five of 2026-07-28, run whole (the login, then mcpvisor's
# 2026-07-28 requests to the scenario's server, the client's exit
# counted): scope-step-up for the challenge behind the discover probe,
# and the suite's own word on the refusals (resource, iss, issuer) that
# the unit tests hold to the table. The rest of that set repeats what the
# unit tests and the parts above check, at 3 to 4 s of CPU a part; run it
# with run-client-auth.sh --spec-version 2026-07-28 SCENARIO.
# authorization-server-migration runs whole instead, at the 2025-11-25 wire
# (client-auth-authorization-server-migration).
CONF_AUTH26="scope-step-up resource-mismatch iss-unexpected iss-normalized
	metadata-issuer-mismatch"

# The official suite both ways (mcpvisor in front of the C fixture over
# stdio, and over HTTP on a port it owns), the fixture alone over HTTP, what
# the 2026-07-28 and 2025-11-25 revisions require (0.2.0-alpha.12, mcpvisor
# in front of the fixture over stdio: the 2026 clients' stateless wire, and
# the same URL at 2025-11-25), the suite's client scenarios with mcpvisor as
# the client (of 2025-11-25, and of 2026-07-28 against servers of that
# revision alone; the authorization ones too), and the fixtures' own checks
# over stdio and HTTP. Each part has its own runtime, home and ports (all
# port 0): CONF_JOBS of them run at once.
run_conformance() {
	c=tests/conformance
	parts="conformance conformance-http conformance-fixture-http
		conformance-2026-07-28 conformance-2025-11-25
		conformance-client conformance-client26 fixture-stdio-check
		fixture-http-check"
	for s in $CONF_AUTH; do
		parts="$parts client-auth-$s"
	done
	parts="$parts client-auth-authorization-server-migration"
	for s in $CONF_AUTH26; do
		parts="$parts client-auth26-$s"
	done
	for name in $parts; do
		rm -f "$logdir/$name.log.rc"
		echo "sh tests/run.sh conf-one $name"
	done | run_slots "$CONF_JOBS"
	for name in $parts; do
		conf_report "$name"
	done
}

# The command of one conformance part.
conf_one() { # name
	c=tests/conformance
	case $1 in
	conformance) conf_run "$1" sh $c/run-against-runtime.sh ;;
	conformance-http) conf_run "$1" sh $c/run-against-runtime.sh --http ;;
	conformance-fixture-http) conf_run "$1" sh $c/run-fixture-http.sh ;;
	conformance-2026-07-28 | conformance-2025-11-25)
		conf_run "$1" sh $c/run-against-runtime.sh \
			--requirements "${1#conformance-}"
		;;
	conformance-client) conf_run "$1" sh $c/run-client.sh ;;
	conformance-client26) conf_run "$1" sh $c/run-client26.sh ;;
	client-auth-authorization-server-migration)
		conf_run "$1" sh $c/run-client-auth.sh --force \
			auth/authorization-server-migration
		;;
	client-auth26-*)
		conf_run "$1" sh $c/run-client-auth.sh --spec-version 2026-07-28 \
			"auth/${1#client-auth26-}"
		;;
	client-auth-*)
		conf_run "$1" sh $c/run-client-auth.sh "auth/${1#client-auth-}"
		;;
	fixture-stdio-check)
		conf_run "$1" node $c/stdio-check.mjs build/san/conformance-server
		;;
	fixture-http-check) conf_run "$1" node $c/http-check.mjs build/san ;;
	esac
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
unit-one) # (internal) one unit binary, for run_unit's slots
	unit_one "$2"
	exit 0
	;;
conf-one) # (internal) one conformance part, for run_conformance's slots
	conf_one "$2"
	exit 0
	;;
unit) run_unit ;;
e2e) run_e2e ;;
conformance) run_conformance ;;
smoke) run_smoke ;;
fuzz) run_fuzz ;;
all)
	run_unit
	# The fuzz runs (CPU at a low priority, for a fixed time) beside the
	# end-to-end files (mostly waiting): the suite's wall time is then
	# the longer of the two, not their sum.
	sh tests/run.sh fuzz >"$logdir/fuzz-suite.log" 2>&1 &
	fuzz_pid=$!
	run_e2e
	[ -f tests/conformance/run-against-runtime.sh ] && run_conformance
	[ -f bench/run.sh ] && run_smoke
	wait "$fuzz_pid"
	grep -v -E '^\([0-9]+ s; logs|^[0-9]+ passed, [0-9]+ failed' "$logdir/fuzz-suite.log"
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$logdir/fuzz-suite.log" | tail -n 1)
	fp=$(echo "$line" | awk '{print $1}')
	ff=$(echo "$line" | awk '{print $3}')
	if [ -z "$fp" ]; then
		tail -n 20 "$logdir/fuzz-suite.log"
		fail=$((fail + 1))
	else
		pass=$((pass + fp))
		fail=$((fail + ff))
	fi
	;;
*)
	echo "usage: tests/run.sh [all|unit|e2e|conformance|smoke|fuzz]" >&2
	exit 2
	;;
esac
echo "($(($(date +%s) - start)) s; logs in $logdir)"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
