#!/usr/bin/env bash
# Configures and builds one flavour of tarn: scripts/build.sh [release|asan|tsan|fuzz|clang] [BUILD_DIR]
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
  *) echo "usage: scripts/build.sh [release|asan|tsan|fuzz|clang] [BUILD_DIR]" >&2; exit 2 ;;
esac
cmake -S "$here" -B "$dir" "${opts[@]}" >/dev/null
cmake --build "$dir" -j"$(nproc)"
