#!/usr/bin/env bash
# deploy/build-image.sh: builds the mcpd container image FROM scratch with
# podman (or docker), without pulling any base image.
#
#   deploy/build-image.sh [-t TAG] [--engine podman|docker]
#
# It builds a static, CGO-free mcpd (CGO_ENABLED=0, -trimpath, the version
# from `git describe` and the commit linked in, for `mcpd version` and
# mcpd_build_info), lays out the build context in a temporary
# directory (the binary, the host's CA certificates, /etc/passwd and
# /etc/group with the user mcpd = 65532, the repository's tools.hcl and
# demo/seed.sql as the default config in /etc/mcpd, an empty /tmp, and an
# empty /var/lib/mcpd owned by 65532, and `wc` as a link to a static
# busybox from the build host, for the demo's and the `mcpd init`
# scaffold's word counters) and builds deploy/container/Dockerfile
# with the OCI labels version, revision, source and created as build
# arguments.
#
# Defaults: TAG localhost/mcpd:VERSION (also tagged localhost/mcpd:latest);
# the engine is podman if installed, else docker. CONTAINERS_CONF is passed
# through, so a containers.conf for restricted hosts applies (see
# docs/operations.md). The image's name is printed on the last line.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD

TAG=""
ENGINE=""
while [ $# -gt 0 ]; do
  case $1 in
    -t | --tag) TAG=$2; shift 2 ;;
    --engine) ENGINE=$2; shift 2 ;;
    -h | --help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-image.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ -z "$ENGINE" ]; then
  if command -v podman >/dev/null; then ENGINE=podman
  elif command -v docker >/dev/null; then ENGINE=docker
  else echo "build-image.sh: neither podman nor docker is installed" >&2; exit 1
  fi
fi

VERSION=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION=$(git rev-parse HEAD 2>/dev/null || echo unknown)
SOURCE=$(git config --get remote.origin.url 2>/dev/null || true)
case $SOURCE in
  https://*) SOURCE=${SOURCE%.git} ;;
  *) SOURCE=https://github.com/mcpd/mcpd ;; # an ssh or file remote is no public address
esac
CREATED=$(date -u +%Y-%m-%dT%H:%M:%SZ)
[ -n "$TAG" ] || TAG="localhost/mcpd:$VERSION"

CA=/etc/ssl/certs/ca-certificates.crt
if [ ! -f "$CA" ]; then
  echo "build-image.sh: $CA is missing (install ca-certificates): the image needs it for HTTPS backends" >&2
  exit 1
fi

# The demo's and the scaffold's shell tools run `wc`: the image carries it
# as an applet of Debian's static busybox (package busybox-static), linked
# under its own name only, so that the image has no shell on its PATH.
BUSYBOX=${BUSYBOX:-/bin/busybox}
if [ ! -x "$BUSYBOX" ] || ! "$BUSYBOX" --list 2>/dev/null | grep -qx wc; then
  echo "build-image.sh: $BUSYBOX is missing (apt-get install busybox-static): the image's wc comes from it" >&2
  exit 1
fi
if command -v file >/dev/null && ! file -L "$BUSYBOX" | grep -q 'statically linked'; then
  echo "build-image.sh: $BUSYBOX is not statically linked (install busybox-static, not busybox)" >&2
  exit 1
fi

CTX=$(mktemp -d "${TMPDIR:-/tmp}/mcpd-image.XXXXXX")
trap 'rm -rf "$CTX"' EXIT

echo "building a static mcpd $VERSION ($REVISION)" >&2
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$VERSION -X main.revision=$REVISION" -o "$CTX/mcpd" ./cmd/mcpd
if command -v file >/dev/null && ! file "$CTX/mcpd" | grep -q 'statically linked'; then
  echo "build-image.sh: the binary is not statically linked" >&2
  exit 1
fi

R=$CTX/rootfs
mkdir -p "$R/etc/ssl/certs" "$R/etc/mcpd/demo" "$R/tmp" "$R/usr/bin" "$R/usr/libexec/mcpd" "$CTX/data"
cp "$BUSYBOX" "$R/usr/libexec/mcpd/busybox"
ln -s ../libexec/mcpd/busybox "$R/usr/bin/wc"
chmod 0755 "$R/usr" "$R/usr/bin" "$R/usr/libexec" "$R/usr/libexec/mcpd" "$R/usr/libexec/mcpd/busybox"
cp "$CA" "$R/etc/ssl/certs/ca-certificates.crt"
cat >"$R/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
mcpd:x:65532:65532:mcpd:/var/lib/mcpd:/sbin/nologin
PASSWD
cat >"$R/etc/group" <<'GROUP'
root:x:0:
nobody:x:65534:
mcpd:x:65532:
GROUP
cp tools.hcl "$R/etc/mcpd/tools.hcl"
cp demo/seed.sql "$R/etc/mcpd/demo/seed.sql"
chmod 0755 "$R" "$R/etc" "$R/etc/ssl" "$R/etc/ssl/certs" "$R/etc/mcpd" "$R/etc/mcpd/demo"
chmod 0644 "$R/etc/passwd" "$R/etc/group" "$R/etc/ssl/certs/ca-certificates.crt" "$R/etc/mcpd/tools.hcl" "$R/etc/mcpd/demo/seed.sql"
chmod 1777 "$R/tmp"
# data/ becomes /var/lib/mcpd, owned by 65532 through COPY --chown.
chmod 0750 "$CTX/data"
cp deploy/container/Dockerfile "$CTX/Dockerfile"

"$ENGINE" build --pull=never -f "$CTX/Dockerfile" -t "$TAG" \
  --build-arg VERSION="$VERSION" --build-arg REVISION="$REVISION" \
  --build-arg SOURCE="$SOURCE" --build-arg CREATED="$CREATED" \
  "$CTX" >&2
case $TAG in
  */mcpd:*) "$ENGINE" tag "$TAG" "${TAG%:*}:latest" >&2 ;;
esac
echo "$TAG"
