#!/usr/bin/env bash
# Builds Skein's container image (deploy/Containerfile) from a statically
# linked binary, downloading nothing: the image's base is `scratch`.
#
#   deploy/build-image.sh                  # bin/image/ and the image skein:VERSION, skein:latest
#   deploy/build-image.sh --context-only   # bin/image/ only, for another builder
#
# Environment: IMAGE (the name, default skein), VERSION (default `git
# describe --tags --always --dirty`), GOARCH (default the host's), GO (go),
# LDFLAGS (added to the go build's -ldflags), BUILDER (podman, buildah or
# docker; default the first found).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
GO="${GO:-go}"
IMAGE="${IMAGE:-skein}"
VERSION="${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}"
CTX="$ROOT/bin/image"

context_only=0
case "${1:-}" in
--context-only) context_only=1 ;;
"") ;;
*) echo "usage: $0 [--context-only]" >&2; exit 2 ;;
esac

rm -rf "$CTX"
mkdir -p "$CTX/etc/ssl" "$CTX/var/lib/skein"
# The binary: no cgo, so that it needs no libc (scratch has none).
CGO_ENABLED=0 GOOS=linux GOARCH="${GOARCH:-$("$GO" env GOARCH)}" \
	"$GO" build -trimpath -ldflags "${LDFLAGS:-}" -o "$CTX/skein" ./cmd/skein
# The non-root user the node runs as (the uid distroless images use).
printf 'root:x:0:0:root:/:/sbin/nologin\nskein:x:65532:65532:skein:/var/lib/skein:/sbin/nologin\n' >"$CTX/etc/passwd"
printf 'root:x:0:\nskein:x:65532:\n' >"$CTX/etc/group"
# CA certificates for the node's own https:// requests (an OAUTHBEARER
# JWKS endpoint): the build host's bundle, if it has one.
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
	mkdir -p "$CTX/etc/ssl/certs"
	cp /etc/ssl/certs/ca-certificates.crt "$CTX/etc/ssl/certs/"
else
	echo "build-image: no /etc/ssl/certs/ca-certificates.crt here: the image has no CA certificates (an https:// JWKS endpoint will not verify)" >&2
fi

if [ "$context_only" -eq 1 ]; then
	echo "build-image: context in $CTX; build it with: podman build -f deploy/Containerfile -t $IMAGE:$VERSION $CTX"
	exit 0
fi

BUILDER="${BUILDER:-}"
if [ -z "$BUILDER" ]; then
	for b in podman buildah docker; do
		if command -v "$b" >/dev/null; then BUILDER=$b; break; fi
	done
fi
case "$BUILDER" in
podman | docker) "$BUILDER" build -f deploy/Containerfile -t "$IMAGE:$VERSION" -t "$IMAGE:latest" "$CTX" ;;
buildah) buildah bud -f deploy/Containerfile -t "$IMAGE:$VERSION" -t "$IMAGE:latest" "$CTX" ;;
"") echo "build-image: no podman, buildah or docker here (Debian: apt-get install podman); the context is in $CTX" >&2; exit 1 ;;
*) echo "build-image: BUILDER=$BUILDER: podman, buildah or docker" >&2; exit 2 ;;
esac
echo "build-image: built $IMAGE:$VERSION ($IMAGE:latest)"
