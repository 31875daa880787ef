#!/usr/bin/env bash
# Runs every libFuzzer target for a bounded time (FUZZ_SECONDS, default 30) from its
# seed corpus; fails on any crash, leak or sanitizer report. FUZZ_JOBS targets
# (default: nproc) run at once: each fuzzer is single-threaded, so on CI's two
# cores this halves the stage's wall time without shortening any target's run.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$here/build/fuzz}
secs=${FUZZ_SECONDS:-30}
jobs=${FUZZ_JOBS:-$(nproc)}
"$here/scripts/build.sh" fuzz "$dir"

# One target: its verdict goes to $work.verdict (ok/FAILED), its report to stdout
# only once the target is done, so parallel targets never interleave their lines.
run_one() {
  local t=$1 name seeds work
  name=$(basename "$t")
  seeds="$here/fuzz/corpus/${name#fuzz_}"
  # Under the build directory, not /tmp: nothing else cleans it up while the fuzzer runs.
  work="$dir/work/$name"
  rm -rf "$work" "$work.log" "$work.verdict"
  mkdir -p "$work"
  [ -d "$seeds" ] && cp -r "$seeds"/. "$work"/ 2>/dev/null || true
  if "$t" -max_total_time="$secs" -rss_limit_mb=2048 -max_len=1048576 -artifact_prefix="$work/" \
       -print_final_stats=0 "$work" >"$work.log" 2>&1; then
    echo "fuzz $name: ok ($(grep -oE 'Done [0-9]+ runs' "$work.log" | tail -1))"
    echo ok >"$work.verdict"
  else
    { echo "fuzz $name: FAILED"; tail -60 "$work.log"
      ls "$work"/crash-* "$work"/leak-* 2>/dev/null || true; } >"$work.report"
    cat "$work.report"
    echo FAILED >"$work.verdict"
  fi
}

targets=()
for t in "$dir"/fuzz/fuzz_*; do
  [ -x "$t" ] && targets+=("$t")
done
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  run_one "$t" &
  running=$((running + 1))
done
wait || true

fail=0
for t in "${targets[@]}"; do
  work="$dir/work/$(basename "$t")"
  if [ "$(cat "$work.verdict" 2>/dev/null)" = ok ]; then
    rm -rf "$work" "$work.log" "$work.verdict" "$work.report"
  else
    fail=1
  fi
done
[ ${#targets[@]} -gt 0 ] || { echo "fuzz: no targets built in $dir/fuzz"; fail=1; }
exit $fail
