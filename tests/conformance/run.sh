#!/bin/sh
# Runs the official MCP conformance suite's server scenarios
# (@modelcontextprotocol/conformance 0.1.16, or 0.2.0-alpha.12 from
# tests/conformance/auth) against a Streamable HTTP endpoint and prints its
# output; the exit code is the suite's.
#
#   tests/conformance/run.sh URL [NODE_MODULES] [suite options...]
#
# URL           the MCP endpoint, on localhost/127.0.0.1/[::1] (the DNS
#               rebinding scenario needs a loopback URL)
# NODE_MODULES  where the suite is installed (default: tests/node_modules,
#               0.1.16; tests/conformance/auth/node_modules has
#               0.2.0-alpha.12)
# suite options passed on, e.g. --scenario ping, --suite all,
#               --expected-failures FILE, -o DIR, --verbose; with
#               0.2.0-alpha.12 also --requirements 2026-07-28
# On node < 22 the suite is loaded with globsync-shim.mjs, which supplies
# the fs.globSync it imports.
set -u

if [ $# -lt 1 ] || [ -z "$1" ]; then
	echo "usage: $0 URL [NODE_MODULES] [suite options...]" >&2
	exit 2
fi
url=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
modules=$here/../node_modules
if [ $# -gt 0 ]; then
	[ -n "$1" ] && modules=$1
	shift
fi
pkg=$modules/@modelcontextprotocol/conformance
entry=$pkg/dist/index.js
if [ ! -f "$entry" ]; then
	echo "$0: $entry not found: run make npm-deps" >&2
	exit 2
fi
if ! command -v node >/dev/null 2>&1; then
	echo "$0: node not found" >&2
	exit 2
fi
version=$(node -p "require('$pkg/package.json').version")
case $version in
0.1.16 | 0.2.0-alpha.12) ;;
*) echo "$0: warning: conformance $version installed, written for" \
	"0.1.16 and 0.2.0-alpha.12" >&2 ;;
esac

major=$(node -p 'process.versions.node.split(".")[0]')
minor=$(node -p 'process.versions.node.split(".")[1]')
if [ "$major" -ge 22 ]; then
	exec node "$entry" server --url "$url" "$@"
fi
# module.register, which the shim needs, arrived in node 20.6.
if [ "$major" -lt 20 ] || { [ "$major" -eq 20 ] && [ "$minor" -lt 6 ]; }; then
	echo "$0: node $major.$minor is too old: need 20.6 or later" >&2
	exit 2
fi
exec node --import "$here/globsync-shim.mjs" "$entry" server --url "$url" "$@"
