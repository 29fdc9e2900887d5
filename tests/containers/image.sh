#!/bin/sh
# Gives the container tests their image: the statically linked demo fixture
# (build/images/fixture.tar, built by make when missing or older than its
# sources) imported into podman under a test tag, ENTRYPOINT /demo-server.
# Idempotent and fast: the import is skipped when the tagged image's only
# layer is this tarball (podman names an imported layer by the sha256 of the
# uncompressed tar), so a stale image from older sources is replaced.
# The default tag names the tarball's digest: worktrees with other fixture
# sources (other branches, run at the same time) never retag each other's
# image under a running test. Prints the tag.
# Usage: tests/containers/image.sh [TAG]
set -e
cd "$(dirname "$0")/../.."
podman=${PODMAN:-podman}
export CONTAINERS_CONF="${CONTAINERS_CONF:-$PWD/tests/containers/containers.conf}"
mkdir -p build/images
# Test files run in parallel: one import at a time.
exec 9>build/images/.lock
flock 9
make -s --no-print-directory build/images/fixture.tar >&2 2>/dev/null ||
	make --no-print-directory build/images/fixture.tar >&2
sum=$(sha256sum build/images/fixture.tar | cut -d' ' -f1)
want="sha256:$sum"
tag=${1:-localhost/mcpvisor-fixture:$(echo "$sum" | cut -c1-12)}
have=$($podman image inspect --format '{{index .RootFS.Layers 0}}' "$tag" \
	2>/dev/null || true)
if [ "$have" != "$want" ]; then
	$podman import --quiet --change 'ENTRYPOINT ["/demo-server"]' \
		build/images/fixture.tar "$tag" >/dev/null
fi
echo "$tag"
