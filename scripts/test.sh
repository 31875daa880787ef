#!/usr/bin/env bash
# The one command that installs, builds and runs every test of tarn on Debian 12:
#   release build + ctest, the same under ASan+UBSan, a clang -Werror build, the
#   threaded tests under ThreadSanitizer, and every fuzz target for a bounded
#   time. Servers the tests need are started on loopback by scripts/servers.sh
#   and stopped on exit.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
export TARN_WITH_SERVERS=1 TARN_WITH_NPM=1
scripts/install-deps.sh

if [ -x scripts/servers.sh ]; then
  trap 'scripts/servers.sh stop' EXIT
  # A plain assignment keeps the exit status: a server that fails to start fails the run.
  exports=$(scripts/servers.sh start)
  eval "$exports"
fi

jobs=$(nproc)
echo "== style (.clang-format, clang-format-14)"
scripts/format.sh --check

echo "== release build (gcc)"
scripts/build.sh release
echo "== tests (release)"
ctest --test-dir build/release --output-on-failure -j"$jobs"

echo "== clang build (-Werror)"
scripts/build.sh clang

echo "== the builds packagers and users run (-Werror): Release, Debug, MinSizeRel, Debian's flags, clang Release"
# The library, the tool and the benchmarks in each; the tests too with
# Debian's flags (a package build runs them). The release, clang and asan
# builds compile the tests as well, so every test file is built warning-free
# by gcc and by clang.
for flavour in Release Debug MinSizeRel debian clang-Release; do
  echo "-- $flavour"
  opts=-DTARN_TESTS=OFF
  [ "$flavour" = debian ] && opts=
  TARN_BUILD_OPTS=$opts scripts/build.sh "$flavour" "$here/build/matrix"
  rm -rf "$here/build/matrix"
done

echo "== tests under AddressSanitizer + UndefinedBehaviorSanitizer"
scripts/build.sh asan
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build/asan --output-on-failure -j"$jobs"

echo "== threaded tests under ThreadSanitizer (ctest -L threads)"
# A report fails the test (exit 66). die_after_fork=0: the crash tests fork a
# worker from a process with threads (test_tasks crash_after_c2/c3), which
# TSan otherwise refuses (the child is killed by the test at a planted point).
# No suppressions: libcurl, libsqlite3 and libmicrohttpd are not instrumented,
# and TSan reports none of their internals.
scripts/build.sh tsan
TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 die_after_fork=0" \
  ctest --test-dir build/tsan --output-on-failure -j"$jobs" -L threads

echo "== fuzzing (${FUZZ_SECONDS:-30} s per target)"
scripts/fuzz.sh
echo "== all tests passed"
