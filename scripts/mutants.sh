#!/usr/bin/env bash
# The mutation score of the fast tier: scripts/mutants.sh [BUG...]
#
# Builds tarn once with every planted bug compiled in (-DTARN_MUTANTS=ON,
# src/util/planted.h) into build/mutants, then for each bug (all, or those
# named) switches it on with TARN_PLANTED_BUG=NAME and runs the fast tier —
# the release ctest, without ASan or fuzzing, and without the bug's own
# sim_planted_* tests (the ordinary suite must kill it) — stopping at the
# first failing test. Prints per bug whether a test failed and how long the
# bug took, then `mutants: K/N killed`. Exits non-zero unless every mutant
# was killed. MUTANTS_JOBS (default: nproc) sets ctest's parallelism.
#
# Order, not measure: scripts/mutants.hints names, per bug, the ordinary
# tests most likely to kill it; they run first, and only if all of them pass
# does the rest of the fast tier run. A bug is killed exactly when some test
# of the fast tier fails with it, as before; the hints only make a full run
# affordable (a bug without a hint runs the whole tier). The hinted tests of
# the bugs named run once with no bug on first: one that fails then would
# "kill" every bug it is the hint of, so the script stops (exit 2).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
dir=$here/build/mutants
cmake -S "$here" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTARN_WERROR=ON -DTARN_MUTANTS=ON -DTARN_BENCH=OFF >/dev/null
cmake --build "$dir" -j"$(nproc)" >/dev/null
# The bugs' names, from the list itself (src/util/planted.h, as compiled).
mapfile -t planted < <("$dir/tests/sim/tarn-sim" --list-bugs)
bugs=("$@")
if [ ${#bugs[@]} -eq 0 ]; then
  bugs=("${planted[@]}")
fi
# A name planted.h lacks switches nothing on (src/util/planted.c), so it
# would "survive": refuse it.
for bug in "${bugs[@]}"; do
  case " ${planted[*]} " in *" $bug "*) ;; *) echo "mutants: no planted bug $bug (src/util/planted.h)" >&2; exit 2 ;; esac
done
declare -A hint=()
while IFS=$'\t' read -r b re; do
  case "$b" in '' | '#'*) continue ;; esac
  hint[$b]=$re
done <"$here/scripts/mutants.hints"
jobs=${MUTANTS_JOBS:-$(nproc)}
exclude='^sim_planted_'
# ctest over the fast tier with the bug on; extra arguments select tests.
run() {
  TARN_PLANTED_BUG=$bug ctest --test-dir "$dir" -j"$jobs" --stop-on-failure --output-on-failure \
    "$@" >>"$log" 2>&1
}
# The baseline, by test number (ctest's regex allows too few groups to join
# the hints into one).
nums=$(for bug in "${bugs[@]}"; do
  [ -n "${hint[$bug]:-}" ] || continue
  ctest --test-dir "$dir" -N -R "${hint[$bug]}" -E "$exclude" | sed -n 's/^ *Test *#\([0-9]*\):.*/\1/p'
done | sort -un | paste -sd,)
if [ -n "$nums" ]; then
  log=$dir/mutant-none.log
  if ! env -u TARN_PLANTED_BUG ctest --test-dir "$dir" -j"$jobs" --output-on-failure -I "0,0,0,$nums" >"$log" 2>&1; then
    echo "mutants: a hinted test fails with no bug on ($log): fix it first" >&2
    exit 2
  fi
fi
killed=0
for bug in "${bugs[@]}"; do
  log=$dir/mutant-$bug.log
  : >"$log"
  start=$SECONDS
  re=${hint[$bug]:-}
  how=tier
  if [ -n "$re" ]; then
    how=hint
    if run -R "$re" -E "$exclude"; then
      # a stale hint that matches no test must not pass for a surviving one
      grep -q '^No tests were found' "$log" && echo "mutants: hint of $bug matches no test: $re" >&2
      how=tier
      run -E "$exclude|$re" && how=
    fi
  elif run -E "$exclude"; then
    how=
  fi
  secs=$((SECONDS - start))
  if [ -z "$how" ]; then
    echo "mutant $bug: SURVIVED (no test failed; $log; ${secs} s)"
  else
    failed=$(sed -n 's/^ *[0-9]*\/[0-9]* Test *#[0-9]*: \([^ ]*\) .*\*\*\*.*/\1/p' "$log" | head -3 | tr '\n' ' ')
    echo "mutant $bug: killed by ${failed:-a failing test }(${how}, ${secs} s)"
    killed=$((killed + 1))
  fi
done
echo "mutants: $killed/${#bugs[@]} killed"
[ "$killed" -eq "${#bugs[@]}" ]
