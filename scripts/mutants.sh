#!/usr/bin/env bash
# The mutation score of the fast tier: scripts/mutants.sh [BUG...]
#
# Builds tarn once with every planted bug compiled in (-DTARN_MUTANTS=ON,
# src/util/planted.h) into build/mutants, then for each bug (all, or those
# named) switches it on with TARN_PLANTED_BUG=NAME and runs the fast tier —
# the release ctest, without ASan or fuzzing, and without the bug's own
# sim_planted_* tests (the ordinary suite must kill it) — stopping at the
# first failing test. Prints per bug whether a test failed, then
# `mutants: K/N killed`. Exits non-zero unless every mutant was killed.
# MUTANTS_JOBS (default: nproc) sets ctest's parallelism.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
dir=$here/build/mutants
cmake -S "$here" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTARN_WERROR=ON -DTARN_MUTANTS=ON -DTARN_BENCH=OFF >/dev/null
cmake --build "$dir" -j"$(nproc)" >/dev/null
bugs=("$@")
if [ ${#bugs[@]} -eq 0 ]; then
  mapfile -t bugs < <(sed -n 's/^ *X([A-Z0-9_]*, "\([a-z0-9-]*\)".*/\1/p' src/util/planted.h)
fi
jobs=${MUTANTS_JOBS:-$(nproc)}
killed=0
for bug in "${bugs[@]}"; do
  log=$dir/mutant-$bug.log
  if TARN_PLANTED_BUG=$bug ctest --test-dir "$dir" -j"$jobs" -E '^sim_planted_' \
       --stop-on-failure >"$log" 2>&1; then
    echo "mutant $bug: SURVIVED (no test failed; $log)"
  else
    failed=$(sed -n 's/^ *[0-9]*\/[0-9]* Test *#[0-9]*: \([^ ]*\) .*\*\*\*.*/\1/p' "$log" | head -3 | tr '\n' ' ')
    echo "mutant $bug: killed by ${failed:-a failing test}"
    killed=$((killed + 1))
  fi
done
echo "mutants: $killed/${#bugs[@]} killed"
[ "$killed" -eq "${#bugs[@]}" ]
