#!/bin/sh
# Installs the Node packages of the end-to-end and conformance tests
# (tests/package-lock.json, and tests/conformance/auth/package-lock.json: the
# suite's release whose client authorization scenarios are run) with `npm
# ci`, only where node_modules is missing or older than the lockfile; silent
# when they are up to date.
set -e
cd "$(dirname "$0")/../tests"
if ! command -v npm >/dev/null 2>&1; then
	echo "npm-deps: npm is not installed; run 'sh scripts/deps.sh'" \
		"(or install nodejs and npm) and try again" >&2
	exit 1
fi
for dir in . conformance/auth; do
	# npm ci leaves this marker; its age says when the tree was last
	# installed.
	stamp=$dir/node_modules/.package-lock.json
	if [ -f "$stamp" ] && [ ! "$dir/package-lock.json" -nt "$stamp" ] &&
		[ ! "$dir/package.json" -nt "$stamp" ]; then
		continue
	fi
	echo "npm-deps: installing test packages (npm ci in tests/$dir)"
	if ! (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null); then
		echo "npm-deps: npm ci failed in tests/$dir; see the npm output above" >&2
		exit 1
	fi
	# npm ci keeps the lockfile's time; mark the tree as newer than it.
	touch "$stamp"
done
