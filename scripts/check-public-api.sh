#!/usr/bin/env bash
# Issue 32: the CLI and the server are built on libtarn's public API, as
# curl's tool and SQLite's shell are on theirs: `libtarn.so`, which exports
# no tarn__ symbol, must be able to do what `tarn` does.
#   scripts/check-public-api.sh [BUILD_DIR]     (default build/release)
# Reads the undefined symbols of the tool's objects (nm -u) and fails on any
# library-internal tarn__ symbol used by src/cli (none is allowed), or by
# src/server beyond the list in scripts/public-api.allow (empty since the
# Kafka node moved into the library behind tarn/kafka_node.h; the list may
# only shrink: a use that is no longer made must be deleted from it too).
# Exit 0 clean, 1 not.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$here/build/release}
objs=$dir/CMakeFiles/tarn_cli.dir
[ -d "$objs" ] || { echo "check-public-api: no $objs (build tarn first)" >&2; exit 2; }
allow=$here/scripts/public-api.allow
uses=$(
  find "$objs" -name '*.o' | sort | while read -r o; do
    case "$o" in */src/cli/*) layer=cli ;; */src/server/*) layer=server ;; *) continue ;; esac
    f=$(basename "$o" .c.o)
    # an object left in the build tree by a source that was moved or deleted
    src=$here/src/${o#*/src/}
    [ -f "${src%.o}" ] || continue
    nm -u "$o" | grep -o 'tarn__[A-Za-z0-9_]*' | sed "s|^|$layer $f |" || true
  done | sort -u
)
bad=0
while read -r layer f sym; do
  [ -n "$layer" ] || continue
  if [ "$layer" = cli ] || ! grep -qx "$f $sym" "$allow"; then
    echo "check-public-api: src/$layer/$f.c uses the library-internal $sym" >&2
    bad=1
  fi
done <<< "$uses"
# a listed use that is gone must leave the list (it only shrinks)
while read -r f sym; do
  case "$f" in '' | '#'*) continue ;; esac
  grep -qx "server $f $sym" <<< "$uses" || {
    echo "check-public-api: scripts/public-api.allow lists $f $sym, no longer used: delete it" >&2
    bad=1
  }
done < "$allow"
n=$(grep -cv '^#' "$allow" || true)
[ $bad = 0 ] && echo "check-public-api: src/cli uses the public API only; src/server $n listed internal uses"
exit $bad
