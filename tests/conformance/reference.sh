#!/bin/sh
# The conformance suite's own reference servers, which are not on npm, run
# from a checkout of the suite's repository (github.com/modelcontextprotocol/
# conformance, any clone with its tags): the 2026-07-28 and 2025-11-25
# requirement sets (suite 0.2.0-alpha.12, tests/conformance/auth) against
#   0. mcpvisor in front of the project's C fixture over stdio (as
#      run-against-runtime.sh runs it), for the same run's comparison;
#   1. mcpvisor in front of the 0.1.16 everything-server
#      (examples/servers/typescript/everything-server.ts at tag v0.1.16)
#      over stdio, its HTTP front replaced by the SDK's stdio transport
#      (reference/serve.mjs);
#   2. the same with the tools the 2026-07-28 set calls that 0.1.16
#      predates, written the 2025 way (reference/tools-2026.mjs), so that
#      its input_required scenarios run through the bridge in front of the
#      SDK's own server code;
#   3. the suite's 2026 reference server alone: the same file at REF26
#      (default HEAD), over HTTP as its authors run it.
# Prints each run's scored total and a table of every scenario's checks
# side by side. Nothing is copied into this tree: the sources go to a
# temporary folder, removed at the end, beside a link to tests/node_modules
# (the servers' imports); reference/package.json's TypeScript transpiler is
# installed on first use, from its lockfile. Not part of make test: the
# checkout is not on a fresh machine. Exit 0 when runs 0 to 2 are whole.
# Usage: tests/conformance/reference.sh CHECKOUT [REF26]
set -u
if [ $# -lt 1 ]; then
	echo "usage: $0 CHECKOUT [REF26]" >&2
	exit 2
fi
repo=$1
ref26=${2:-HEAD}
root=$(cd "$(dirname "$0")/../.." && pwd)
here=$root/tests/conformance
ex=examples/servers/typescript/everything-server.ts
modules=$here/auth/node_modules
yaml() { echo "$modules/@modelcontextprotocol/conformance/requirements/$1.yaml"; }
. "$here/scored.sh"

if [ ! -d "$here/reference/node_modules/typescript" ]; then
	(cd "$here/reference" && npm ci --no-audit --no-fund \
		--loglevel=error >/dev/null) || {
		echo "reference: npm ci failed in tests/conformance/reference" >&2
		exit 2
	}
fi
[ -d "$root/tests/node_modules/@modelcontextprotocol/sdk" ] ||
	sh "$root/scripts/npm-deps.sh" || exit 2

work=$(mktemp -d /tmp/mcpvisor-reference.XXXXXX) || exit 2
srv=""
cleanup() {
	if [ -n "$srv" ]; then
		kill -TERM "$srv" 2>/dev/null
		wait "$srv" 2>/dev/null
	fi
	rm -rf "$work"
}
trap 'cleanup; exit 1' INT TERM
ln -s "$root/tests/node_modules" "$work/node_modules"
old=$work/everything-0.1.16.ts
new=$work/everything-ref26.ts
if ! git -C "$repo" show "v0.1.16:$ex" >"$old" 2>"$work/git.err" ||
	! git -C "$repo" show "$ref26:$ex" >"$new" 2>>"$work/git.err"; then
	echo "reference: no $ex at v0.1.16 or $ref26 in $repo" >&2
	cat "$work/git.err" >&2
	cleanup
	exit 2
fi
commit=$(git -C "$repo" rev-parse --short "$ref26")

printf '#!/bin/sh\nexec node "%s" stdio "%s"\n' \
	"$here/reference/serve.mjs" "$old" >"$work/plain.sh"
printf '#!/bin/sh\nexec node "%s" stdio --with-2026-tools "%s"\n' \
	"$here/reference/serve.mjs" "$old" >"$work/tools.sh"
chmod +x "$work/plain.sh" "$work/tools.sh"

rc=0
for rev in 2026-07-28 2025-11-25; do
	for v in fixture plain tools; do
		if [ "$v" = fixture ]; then
			echo "== mcpvisor in front of the project's C fixture" \
				"over stdio, --requirements $rev"
			server=${CONFORMANCE_SERVER:-$root/build/san/conformance-server}
		else
			echo "== mcpvisor in front of the 0.1.16" \
				"everything-server over stdio ($v), --requirements $rev"
			server=$work/$v.sh
		fi
		CONFORMANCE_SERVER=$server \
			sh "$here/run-against-runtime.sh" --requirements "$rev" \
			>"$work/$v-$rev.out" 2>&1 || rc=1
		grep -E '^(scored and failing|[0-9]+ passed)' "$work/$v-$rev.out"
	done
done

port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",
  ()=>{console.log(s.address().port);s.close()})')
PORT=$port node "$here/reference/serve.mjs" http "$new" \
	>"$work/ref.out" 2>&1 &
srv=$!
for _ in $(seq 1 1000); do
	grep -q 'running on' "$work/ref.out" && break
	kill -0 "$srv" 2>/dev/null || break
	sleep 0.01
done
if ! grep -q 'running on' "$work/ref.out"; then
	echo "reference: the 2026 reference server did not start" >&2
	cat "$work/ref.out" >&2
	cleanup
	exit 2
fi
for rev in 2026-07-28 2025-11-25; do
	echo "== the suite's reference server ($ref26, $commit) alone," \
		"--requirements $rev"
	sh "$here/run.sh" "http://127.0.0.1:$port/mcp" "$modules" \
		--requirements "$rev" >"$work/alone-$rev.out" 2>&1
	scored_total "$(yaml "$rev")" "$work/alone-$rev.out" "$rev" |
		grep -E '^(scored and failing|[0-9]+ passed)'
done

# Every scenario's checks side by side, "passed/failed"; * when scored.
for rev in 2026-07-28 2025-11-25; do
	echo "== per scenario, --requirements $rev (* scored): mcpvisor to" \
		"the C fixture | to 0.1.16 | to 0.1.16 with the 2026 tools |" \
		"the 2026 reference alone"
	awk '
	FNR == 1 { file++ }
	file == 1 {
		if ($0 ~ /^server:/) { on = 1; next }
		if ($0 ~ /^[a-z_]+:/) on = 0
		if (on && $1 == "-") scored[$2] = 1
		next
	}
	/^=== SUMMARY ===/ { summary[file] = 1; next }
	summary[file] && $2 ~ /:$/ && / passed, [0-9]+ failed$/ {
		name = $2
		sub(/:$/, "", name)
		if (!(name in seen)) { seen[name] = 1; order[++n] = name }
		cell[name, file] = $3 "/" $5
	}
	END {
		for (i = 1; i <= n; i++) {
			s = order[i]
			printf "%s %-46s %6s | %6s | %6s | %s\n",
			    (s in scored) ? "*" : " ", s,
			    cell[s, 2] == "" ? "-" : cell[s, 2],
			    cell[s, 3] == "" ? "-" : cell[s, 3],
			    cell[s, 4] == "" ? "-" : cell[s, 4],
			    cell[s, 5] == "" ? "-" : cell[s, 5]
		}
	}' "$(yaml "$rev")" "$work/fixture-$rev.out" "$work/plain-$rev.out" \
		"$work/tools-$rev.out" "$work/alone-$rev.out"
done
cleanup
exit $rc
