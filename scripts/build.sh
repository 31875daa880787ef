#!/usr/bin/env bash
# Configures and builds one flavour of tarn:
#   scripts/build.sh [release|asan|tsan|fuzz|clang|Release|Debug|MinSizeRel|debian|clang-Release] [BUILD_DIR]
# Every flavour builds with -Werror (TARN_WERROR); a plain cmake build does not.
# Release, Debug, MinSizeRel, debian (dpkg-buildflags: -O2, _FORTIFY_SOURCE=2,
# -fstack-protector-strong) and clang-Release are the builds packagers and
# users run: CI builds each once so that none of them breaks on a warning.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
flavour=${1:-release}
dir=${2:-$here/build/$flavour}
case "$flavour" in
  release) opts=(-DCMAKE_BUILD_TYPE=RelWithDebInfo) ;;
  asan)    opts=(-DCMAKE_BUILD_TYPE=Debug -DTARN_SANITIZE=ON -DTARN_BENCH=OFF) ;;
  # ThreadSanitizer, for the tests labelled "threads" (scripts/test.sh runs ctest -L threads).
  tsan)    opts=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DTARN_TSAN=ON -DTARN_BENCH=OFF) ;;
  fuzz)    opts=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DTARN_FUZZ=ON -DTARN_TESTS=OFF) ;;
  clang)   opts=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang) ;;
  Release|Debug|MinSizeRel) opts=(-DCMAKE_BUILD_TYPE="$flavour") ;;
  clang-Release) opts=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang) ;;
  debian)
    export CFLAGS="$(dpkg-buildflags --get CFLAGS) $(dpkg-buildflags --get CPPFLAGS)"
    export LDFLAGS="$(dpkg-buildflags --get LDFLAGS)"
    opts=(-DCMAKE_BUILD_TYPE=None) ;;
  *) echo "usage: scripts/build.sh [release|asan|tsan|fuzz|clang|Release|Debug|MinSizeRel|debian|clang-Release] [BUILD_DIR]" >&2; exit 2 ;;
esac
# TARN_BUILD_OPTS: more cmake options (scripts/test.sh: the matrix builds
# without the tests, which the release, clang, asan and debian builds compile)
read -r -a extra <<< "${TARN_BUILD_OPTS:-}"
# ccache (when installed; TARN_NO_CCACHE=1: not) keeps compiled objects between
# builds and between clones (CCACHE_BASEDIR: paths relative to the checkout), so
# CI's seven builds of one tree and its reruns compile each file once. A
# warning fails the compile under -Werror, and failures are never cached.
if [ -z "${TARN_NO_CCACHE:-}" ] && command -v ccache > /dev/null; then
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$here}
  extra+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
cmake -S "$here" -B "$dir" -DTARN_WERROR=ON "${opts[@]}" "${extra[@]}" >/dev/null
cmake --build "$dir" -j"$(nproc)"
