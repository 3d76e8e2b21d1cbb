#!/usr/bin/env bash
# deploy/build-release.sh: cross-compiles mcpd and mcpd-import into one
# release archive per target, with a SHA256SUMS file.
#
#   deploy/build-release.sh [-o DIR] [OS/ARCH ...]
#
# Targets default to linux, darwin and windows on amd64 and arm64. Each
# binary is static and CGO-free (CGO_ENABLED=0, -trimpath), with the
# version from `git describe` and the commit linked in, as
# deploy/build-image.sh does: `mcpd version` prints both (engine/buildinfo).
# An archive is mcpd_VERSION_OS_ARCH.tar.gz (.zip for windows, which needs
# zip) holding the directory mcpd_VERSION_OS_ARCH/ with mcpd, mcpd-import
# (.exe on windows) and README.md; its files carry the commit's time, so
# the same commit gives the same archives. DIR (default dist/) gets the
# archives and SHA256SUMS (check with `sha256sum -c SHA256SUMS`); the
# archives' names are printed, one per line, on stdout.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD

OUT=dist
TARGETS=()
while [ $# -gt 0 ]; do
  case $1 in
    -o | --out) OUT=$2; shift 2 ;;
    -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "build-release.sh: unknown flag $1" >&2; exit 2 ;;
    */*) TARGETS+=("$1"); shift ;;
    *) echo "build-release.sh: $1 is not OS/ARCH (e.g. linux/amd64)" >&2; exit 2 ;;
  esac
done
[ "${#TARGETS[@]}" -gt 0 ] || TARGETS=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64)

VERSION=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION=$(git rev-parse HEAD 2>/dev/null || echo unknown)
# The commit's time, for the files in the archives (reproducible builds).
EPOCH=$(git log -1 --format=%ct 2>/dev/null || date +%s)
LDFLAGS="-s -w -X main.version=$VERSION -X main.revision=$REVISION"

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/mcpd-release.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

archives=()
for target in "${TARGETS[@]}"; do
  os=${target%/*} arch=${target#*/}
  name="mcpd_${VERSION}_${os}_${arch}"
  dir="$WORK/$name"
  mkdir -p "$dir"
  ext=""
  [ "$os" = windows ] && ext=.exe
  echo "building $name" >&2
  for cmd in mcpd mcpd-import; do
    GOOS=$os GOARCH=$arch CGO_ENABLED=0 go build -trimpath -ldflags "$LDFLAGS" -o "$dir/$cmd$ext" "./cmd/$cmd"
  done
  cp README.md "$dir/README.md"
  chmod 0755 "$dir/mcpd$ext" "$dir/mcpd-import$ext"
  chmod 0644 "$dir/README.md"
  find "$dir" -exec touch -h -d "@$EPOCH" {} +
  if [ "$os" = windows ]; then
    command -v zip >/dev/null || { echo "build-release.sh: zip is needed for the windows archives (apt-get install zip)" >&2; exit 1; }
    archive="$name.zip"
    rm -f "$OUT/$archive"
    (cd "$WORK" && TZ=UTC zip -q -X -r "$OUT/$archive" "$name")
  else
    archive="$name.tar.gz"
    (cd "$WORK" && tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$EPOCH" -cf - "$name") | gzip -n -9 >"$OUT/$archive"
  fi
  archives+=("$archive")
done

(cd "$OUT" && sha256sum "${archives[@]}" >SHA256SUMS)
printf '%s\n' "${archives[@]}"
