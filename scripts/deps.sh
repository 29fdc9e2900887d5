#!/bin/sh
# Installs the Debian packages mcpvisor builds and tests with, only those
# missing; silent when everything is present.
# Usage: scripts/deps.sh [test|bench]   (test: also what only the tests
# need; bench: also what only make bench needs)
set -e
need=""
extra=""
# The container tests run a real engine: rootful podman with the runc
# runtime (tests/containers/containers.conf says why not crun) and netavark
# with iptables for -p 127.0.0.1:PORT publishing; tmux holds the terminal
# `mcpvisor top` is tested in. `make run` needs none of it.
[ "${1:-}" = test ] && extra="podman runc netavark iptables tmux"
# make bench: nginx and wrk for the limit rows (an HTTP exchange at all;
# curl opens mcpvisor's session for wrk), valgrind and strace for the cost
# of a call (bench/cost.sh). The bench starts its own nginx on a free
# port; the package's service is not wanted.
[ "${1:-}" = bench ] && extra="nginx wrk curl valgrind strace"
# clang and libclang-rt-dev (libFuzzer and the sanitizer runtimes; on
# Debian 12 it pulls libclang-rt-14-dev, the version `clang` is) build the
# fuzz harnesses. libcurl4-openssl-dev gives curl's headers (and brings
# libcurl4, which the runtime loads on first outbound HTTP; never linked).
for p in build-essential pkg-config libuv1-dev libjansson-dev \
	libhttp-parser-dev libssl-dev libcurl4-openssl-dev libcriterion-dev \
	nodejs npm clang-format clang libclang-rt-dev $extra; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		need="$need $p"
done
# nodejs/npm may come from elsewhere (nodesource, nvm): a working node counts.
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
	need=$(echo "$need" | sed -e 's/ nodejs//' -e 's/ npm//')
fi
[ -z "$need" ] && exit 0
echo "deps: installing$need"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# nginx's postinst starts its system service unless policy-rc.d says no:
# say no for this install when nothing does yet (Debian's way to keep
# maintainer scripts from starting daemons), and take it back after.
rcd=/usr/sbin/policy-rc.d
own_rcd=0
case " $need " in
*" nginx "*)
	if [ ! -e "$rcd" ]; then
		printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$rcd" >/dev/null
		$SUDO chmod 755 "$rcd"
		own_rcd=1
	fi
	;;
esac
rc=0
$SUDO apt-get install -y -qq $need >/dev/null || rc=$?
[ "$own_rcd" = 1 ] && $SUDO rm -f "$rcd"
exit "$rc"
