#!/usr/bin/env bash
# Issue 31 item 5: one deployment per root (docs/deployment.md "One deployment
# per root"). `tarn init` writes the deployment's id into each root (object
# tarn-deployment) and refuses a root of another deployment - marked, or
# holding objects without a marker; `tarn gc` refuses to delete from another
# deployment's root and claims its own unmarked roots (deployments from before
# markers). On file:// and, with TARN_TEST_S3_URI, on radosgw (s3://).
# The old code let the second init and the second gc through.
. "$(dirname "$0")/lib.sh"
cd "$dir"
unset TARN_HOME TARN_META TARN_WAL TARN_COMPACTED
timing=(--wal-grace-ms 4000 --max-publish-delay-ms 1000 --max-put-ms 1000 --skew-allowance-ms 1000)

# roots A B: URIs of deployment A's two roots and of a fresh pair for B
one_mode() {
  local mode=$1 wa=$2 ca=$3 wb=$4 cb=$5
  local A=(--home "$dir/$mode-a" --wal "$wa" --compacted "$ca")
  local B=(--home "$dir/$mode-b" --meta "sqlite:$dir/$mode-b/meta.db")
  expect_exit 0 "$TARN" init "${A[@]}" "${timing[@]}"
  expect_exit 0 "$TARN" stream create ns/s "${A[@]}"
  seq 1 20 >"$dir/in"
  expect_exit 0 "$TARN" append ns/s --batch-ms 0 "${A[@]}" <"$dir/in"
  # B on A's WAL root, on A's compacted root: refused, nothing written
  expect_exit 1 "$TARN" init "${B[@]}" --wal "$wa" --compacted "$cb" "${timing[@]}"
  grep -q "WAL root belongs to another deployment" "$dir/err" || fail "$mode: $(cat "$dir/err")"
  expect_exit 1 "$TARN" init "${B[@]}" --wal "$wb" --compacted "$ca" "${timing[@]}"
  grep -q "compacted root belongs to another deployment" "$dir/err" || fail "$mode: $(cat "$dir/err")"
  # B on roots of its own
  expect_exit 0 "$TARN" init "${B[@]}" --wal "$wb" --compacted "$cb" "${timing[@]}"
  # B's gc pointed at A's WAL root: refused, past any grace
  sleep 5
  expect_exit 1 "$TARN" gc "${B[@]}" --wal "$wa" --compacted "$cb"
  grep -q "belongs to another deployment" "$dir/err" || fail "$mode gc: $(cat "$dir/err")"
  expect_exit 1 "$TARN" gc "${B[@]}" --wal "$wa" --compacted "$cb" --dry-run
  sleep 5
  expect_exit 1 "$TARN" gc "${B[@]}" --wal "$wa" --compacted "$cb"
  expect_exit 0 "$TARN" read ns/s "${A[@]}"
  cmp -s "$dir/out" "$dir/in" || fail "$mode: A's entries changed: $(head -3 "$dir/out")"
  expect_exit 0 "$TARN" fsck "${A[@]}"
}

mode=file
one_mode file "file://$dir/a-wal" "file://$dir/a-compacted" "file://$dir/b-wal" "file://$dir/b-compacted"
# a root with objects and no marker (a deployment from before markers) is
# refused to a new deployment; its own deployment's gc claims it
rm "$dir/a-wal/tarn-deployment"
expect_exit 1 "$TARN" init --home "$dir/c" --wal "file://$dir/a-wal" "${timing[@]}"
grep -q "holds objects but no marker" "$dir/err" || fail "unmarked root: $(cat "$dir/err")"
A=(--home "$dir/file-a" --wal "file://$dir/a-wal" --compacted "file://$dir/a-compacted")
expect_exit 1 "$TARN" gc "${A[@]}" --dry-run
grep -q "no marker" "$dir/err" || fail "dry run on an unmarked root: $(cat "$dir/err")"
expect_exit 0 "$TARN" gc "${A[@]}"
[ -f "$dir/a-wal/tarn-deployment" ] || fail "gc did not claim its unmarked root"
cmp -s "$dir/a-wal/tarn-deployment" "$dir/a-compacted/tarn-deployment" || fail "two ids"

if [ -n "${TARN_TEST_S3_URI:-}" ]; then
  unique_run
  s3="$TARN_TEST_S3_URI/roots-$run"
  one_mode s3 "$s3/a/wal" "$s3/a/compacted" "$s3/b/wal" "$s3/b/compacted"
else
  need_env TARN_TEST_S3_URI # skipped (failed in CI) after the file:// half passed
fi
