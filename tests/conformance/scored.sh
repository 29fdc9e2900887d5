# Sourced by run-against-runtime.sh and reference.sh.
# The checks of the scenarios the revision's yaml lists under server:, from
# the suite's summary lines ("✓ NAME: N passed, M failed").
scored_total() { # yaml log revision
	awk -v rev="$3" '
	FNR == NR {
		if ($0 ~ /^server:/) { on = 1; next }
		if ($0 ~ /^[a-z_]+:/) on = 0
		if (on && $1 == "-") scored[$2] = 1
		next
	}
	/^=== SUMMARY ===/ { summary = 1; next }
	summary && / passed, [0-9]+ failed$/ {
		name = $2
		sub(/:$/, "", name)
		if (name in scored) {
			seen[name] = 1
			p += $3; f += $5
			if ($5 > 0) failing = failing " " name
		} else {
			np += $3; nf += $5
		}
	}
	END {
		n = 0
		for (name in scored) {
			n++
			if (!(name in seen)) { f++; failing = failing " " name "(not run)" }
		}
		printf "not scored by %s: %d passed, %d failed\n", rev, np, nf
		if (failing != "") print "scored and failing:" failing
		printf "%d passed, %d failed (the checks of the %d scenarios %s scores)\n", p, f, n, rev
	}' "$1" "$2"
}
