#!/usr/bin/env bash
# Issue #11 part 2 (LS-085, LS-086), reproduction: `tarn gc --wal-grace-ms
# 60000` ran in a deployment whose writers may publish a WAL object's record
# up to 300 s after writing it, so an object could be deleted before its
# record landed. Every process now refuses a WAL grace that does not exceed
# the publish limit + the longest index put + the skew allowance
# (docs/compaction.md "Grace arithmetic").
. "$(dirname "$0")/lib.sh"
export TARN_HOME="$dir/home"
unset TARN_META TARN_WAL TARN_COMPACTED
"$TARN" init > /dev/null
"$TARN" stream create ns/s > /dev/null
seq 1 5 | "$TARN" append ns/s --quiet

refused() { # VERB ARGS...: exits 1 naming the arithmetic
  local rc=0
  "$@" > "$dir/out" 2> "$dir/err" || rc=$?
  [ "$rc" = 1 ] || fail "$* exited $rc, not 1: $(cat "$dir/out" "$dir/err")"
  grep -q "refused: .*WAL grace 60000 ms must exceed .* = 420000 ms" "$dir/err" ||
    fail "$*: no clear refusal: $(cat "$dir/err")"
}
refused "$TARN" gc --wal-grace-ms 60000
refused "$TARN" gc --dry-run --wal-grace-ms 60000
refused "$TARN" serve --listen 127.0.0.1:0 --wal-grace-ms 60000
# the boundary: equal is not enough, one more is
"$TARN" gc --wal-grace-ms 420000 > /dev/null 2>&1 && fail "gc took grace = the sum"
"$TARN" gc --wal-grace-ms 420001 > /dev/null || fail "gc refused a legal grace"

# a deployment recorded with a short grace runs with writers to match
export TARN_HOME="$dir/short"
rc=0
"$TARN" init --wal-grace-ms 60000 > /dev/null 2> "$dir/err" || rc=$?
[ "$rc" = 1 ] && grep -q "must exceed" "$dir/err" || fail "init took an illegal timing: $rc"
"$TARN" init --wal-grace-ms 60000 --max-publish-delay-ms 20000 --max-put-ms 10000 \
  --skew-allowance-ms 10000 > /dev/null
"$TARN" stream create ns/s > /dev/null
seq 1 5 | "$TARN" append ns/s --quiet
"$TARN" gc > /dev/null || fail "gc refused the deployment's own grace"
"$TARN" gc --wal-grace-ms 40001 > /dev/null || fail "gc refused 40001 > 20000 + 10000 + 10000"
rc=0
"$TARN" gc --wal-grace-ms 40000 > /dev/null 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "gc took 40000 = the sum"
echo ok
