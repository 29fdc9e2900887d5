#!/bin/sh
# Installs the Node packages of the end-to-end and conformance tests
# (tests/package-lock.json) with `npm ci`, only when tests/node_modules is
# missing or older than the lockfile; silent when it is up to date.
set -e
cd "$(dirname "$0")/../tests"
if ! command -v npm >/dev/null 2>&1; then
	echo "npm-deps: npm is not installed; run 'sh scripts/deps.sh'" \
		"(or install nodejs and npm) and try again" >&2
	exit 1
fi
# npm ci leaves this marker; its age says when the tree was last installed.
stamp=node_modules/.package-lock.json
if [ -f "$stamp" ] && [ ! package-lock.json -nt "$stamp" ] &&
	[ ! package.json -nt "$stamp" ]; then
	exit 0
fi
echo "npm-deps: installing test packages (npm ci in tests/)"
if ! npm ci --no-audit --no-fund --loglevel=error >/dev/null; then
	echo "npm-deps: npm ci failed in tests/; see the npm output above" >&2
	exit 1
fi
# npm ci keeps the lockfile's time; mark the tree as newer than it.
touch "$stamp"
