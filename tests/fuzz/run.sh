#!/bin/sh
# Runs libFuzzer harnesses built by `make fuzz-build` (build/fuzz/fuzz_NAME)
# for SECONDS each, one after another, and prints one line per harness:
# executions, speed, coverage, and whether it found anything. The corpus
# each run grows is kept in build/fuzz/corpus/NAME (seeded from
# tests/fuzz/corpus/NAME and the size-limit inputs of edge.sh); a crash,
# leak or timeout leaves its input in build/fuzz/art/NAME/ and the log in
# build/fuzz/log/NAME.log. Exits 1 when any harness found something.
# Usage: tests/fuzz/run.sh SECONDS NAME...
cd "$(dirname "$0")/../.." || exit 2
secs=${1:?usage: tests/fuzz/run.sh SECONDS NAME...}
shift
out=build/fuzz
# Cheap to write, so always as edge.sh says now.
rm -rf "$out/edge"
sh tests/fuzz/edge.sh "$out/edge" || exit 2
# Temp files of a harness stopped by a finding stay in the build folder.
mkdir -p "$out/tmp"
TMPDIR=$(pwd)/$out/tmp
export TMPDIR
rc=0
for name in "$@"; do
	bin=$out/fuzz_$name
	log=$out/log/$name.log
	mkdir -p "$out/corpus/$name" "$out/art/$name" "$out/log"
	# -max_len reaches each parser's own limits (edge.sh has inputs on
	# them); the framer, jsonscan and sse harnesses pick their limits inside.
	case $name in
	httpparse) opts="-max_len=45056 -dict=tests/fuzz/http.dict" ;;
	jsonscan) opts="-max_len=4096 -dict=tests/fuzz/json.dict" ;;
	framer) opts="-max_len=2048" ;;
	config) opts="-max_len=69632 -dict=tests/fuzz/config.dict" ;;
	expand) opts="-max_len=512 -dict=tests/fuzz/expand.dict" ;;
	sse) opts="-max_len=4096 -dict=tests/fuzz/sse.dict" ;;
	escape) opts="-max_len=1024" ;;
	jsonc) opts="-max_len=4096 -dict=tests/fuzz/jsonc.dict" ;;
	# WWW_AUTH_MAX_LEN and FORM_MAX_QUERY are 8192; the OAuth documents'
	# 64 KiB limit is met by edge.sh's inputs.
	wwwauth) opts="-max_len=8448 -dict=tests/fuzz/oauth.dict" ;;
	oauthjson) opts="-max_len=4096 -dict=tests/fuzz/oauth.dict" ;;
	redirect) opts="-max_len=8448 -dict=tests/fuzz/oauth.dict" ;;
	# Header values reach ENVELOPE_MAX_HEADER (8192) and past it.
	envelope) opts="-max_len=20480 -dict=tests/fuzz/envelope.dict" ;;
	*) opts="" ;;
	esac
	if [ ! -x "$bin" ]; then
		printf 'fuzz/%-10s not built (make fuzz-build)\n' "$name"
		rc=1
		continue
	fi
	start=$(date +%s)
	# The inputs on the limits run once each; they also seed the
	# corpus when FUZZ_EDGE_CORPUS=1 (make fuzz), as mutating inputs of
	# 32-64 KiB slows a short run tenfold.
	edge=""
	[ -d "$out/edge/$name" ] && edge=$(find "$out/edge/$name" -type f | sort)
	seeds="tests/fuzz/corpus/$name"
	[ "${FUZZ_EDGE_CORPUS:-0}" = 1 ] && [ -n "$edge" ] && seeds="$seeds $out/edge/$name"
	# The outer timeout only guards against a fuzzer that ignores its
	# own: -max_total_time bounds the run, -timeout each input.
	# shellcheck disable=SC2086
	{
		[ -z "$edge" ] || timeout -k 5 60 "$bin" $opts \
			-artifact_prefix="$out/art/$name/" $edge &&
			timeout -k 5 $((secs + 60)) nice -n 10 "$bin" \
				-max_total_time="$secs" -timeout=10 \
				-rss_limit_mb=2048 -print_final_stats=1 \
				-artifact_prefix="$out/art/$name/" \
				$opts "$out/corpus/$name" $seeds
	} >"$log" 2>&1
	frc=$?
	took=$(($(date +%s) - start))
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
	rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -n 1)
	cov=$(grep -E '^#[0-9]+' "$log" | tail -n 1 | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
	corp=$(grep -E '^#[0-9]+' "$log" | tail -n 1 | sed -n 's/.* corp: \([0-9]*\).*/\1/p')
	if [ "$frc" -eq 0 ]; then
		verdict="nothing found"
	else
		rc=1
		art=$(sed -n "s/.*Test unit written to \(.*\)/\1/p" "$log" | tail -n 1)
		# an input on a limit reports no artifact; it was the last run
		[ -n "$art" ] || art=$(sed -n 's/^Running: //p' "$log" | tail -n 1)
		why=$(grep -m 1 -E 'FAIL: |ERROR: |runtime error:' "$log")
		verdict="FOUND (exit $frc): ${why:-see $log}${art:+; input $art}"
	fi
	printf 'fuzz/%-10s %4s s %10s execs %7s/s cov %5s corpus %5s rss %4s MB  %s\n' \
		"$name" "$took" "${execs:-?}" "${speed:-?}" "${cov:-?}" \
		"${corp:-?}" "${rss:-?}" "$verdict"
done
exit $rc
