#!/usr/bin/env bash
# Runs every libFuzzer target for a bounded time (FUZZ_SECONDS, default 30) from its
# seed corpus; fails on any crash, leak or sanitizer report.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$here/build/fuzz}
secs=${FUZZ_SECONDS:-30}
"$here/scripts/build.sh" fuzz "$dir"
fail=0
for t in "$dir"/fuzz/fuzz_*; do
  [ -x "$t" ] || continue
  name=$(basename "$t")
  seeds="$here/fuzz/corpus/${name#fuzz_}"
  # Under the build directory, not /tmp: nothing else cleans it up while the fuzzer runs.
  work="$dir/work/$name"
  rm -rf "$work" "$work.log"
  mkdir -p "$work"
  [ -d "$seeds" ] && cp -r "$seeds"/. "$work"/ 2>/dev/null || true
  if "$t" -max_total_time="$secs" -rss_limit_mb=2048 -max_len=1048576 -artifact_prefix="$work/" \
       -print_final_stats=0 "$work" >"$work.log" 2>&1; then
    echo "fuzz $name: ok ($(grep -oE 'Done [0-9]+ runs' "$work.log" | tail -1))"
  else
    echo "fuzz $name: FAILED"; tail -60 "$work.log"; ls "$work"/crash-* "$work"/leak-* 2>/dev/null || true
    fail=1
  fi
  [ $fail -ne 0 ] || rm -rf "$work" "$work.log"
done
exit $fail
