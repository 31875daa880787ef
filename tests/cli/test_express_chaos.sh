#!/usr/bin/env bash
# Issue 30's chaos rounds for express leadership, short (CI's part; the long
# form and its last results: scripts/express-chaos.sh, docs/express.md):
# 3 rounds on the embedded default (sqlite + file:// buckets) with seed 4,
# whose rounds are: A stopped past its session while B appends as the
# default star with two buckets read-only for 2 s; B appending as A's star
# while A lives (a second live process of one star: refused) with the
# outage; A killed (-9) and B as A's star. Each round ends in
# tests/cli/check_acked.py over every run (every printed offset holds its
# line, nothing twice, nothing failed stored) and `tarn fsck`; a round that
# does not reach the check fails too. Skipped (77) where chattr +i does not
# make a directory read-only.
. "$(dirname "$0")/lib.sh"
require_tool python3
require_tool chattr
need_chattr_ro # the outages: chattr +i on bucket directories
src=${TARN_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
TMPDIR=$dir "$src/scripts/express-chaos.sh" sqlite 3 4 > "$dir/chaos.out" 2>&1 ||
  fail "$(cat "$dir/chaos.out")"
tail -1 "$dir/chaos.out"
[ "$(grep -c ': ok$' "$dir/chaos.out")" = 3 ] || fail "$(cat "$dir/chaos.out")"
echo ok
