#!/usr/bin/env bash
# The command line against an etcd:// + s3:// deployment (flags --meta, --wal,
# --compacted): init, stream create, append, read, trim, offsets, stream drop.
# Needs TARN_TEST_ETCD and TARN_TEST_S3_URI (+ the AWS_* variables) from
# `eval "$(scripts/servers.sh start)"`: skipped without them, failed in CI.
. "$(dirname "$0")/lib.sh"
need_env TARN_TEST_ETCD TARN_TEST_S3_URI
tmp=$dir
cd "$tmp"
unset TARN_HOME TARN_META TARN_WAL TARN_COMPACTED
# etcd and the bucket keep what earlier runs wrote: an etcd root (prefix=) and
# an S3 prefix per run, so each run is a deployment of its own.
unique_run
meta="etcd://$TARN_TEST_ETCD?prefix=tarn-test/cli-$run"
wal="$TARN_TEST_S3_URI/cli-$run/wal"
compacted="$TARN_TEST_S3_URI/cli-$run/compacted"
flags=(--meta "$meta" --wal "$wal" --compacted "$compacted")
ns=team

# before init the deployment's catalog does not exist
expect_exit 1 "$TARN" stream list "${flags[@]}"
grep -q "tarn init" "$tmp/err" || fail "no hint to run tarn init: $(cat "$tmp/err")"
expect_exit 0 "$TARN" init --home "$tmp/home" "${flags[@]}" --json
python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))
assert j["created"] is True, j
assert j["meta"] == sys.argv[2] and j["wal"] == sys.argv[3] and j["compacted"] == sys.argv[4], j' \
  "$tmp/out" "$meta" "$wal" "$compacted" || fail "init --json: $(cat "$tmp/out")"
expect_exit 0 "$TARN" init --home "$tmp/home" "${flags[@]}" --json
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["created"] is False' "$tmp/out" ||
  fail "second init created: $(cat "$tmp/out")"

expect_exit 0 "$TARN" stream create "$ns/events" --partitions 2 "${flags[@]}" --json
python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))
assert j["namespace"] == sys.argv[2] and len(j["log_ids"]) == 2, j' "$tmp/out" "$ns" ||
  fail "create --json: $(cat "$tmp/out")"
expect_exit 1 "$TARN" stream create "$ns/events" "${flags[@]}"
grep -q "already exists" "$tmp/err" || fail "duplicate create: $(cat "$tmp/err")"

# append: offsets printed once acknowledged, in input order; two runs, so
# two index records (a soft trim never passes the start of the last one)
printf 'alpha\nbeta\n' >"$tmp/in"
expect_exit 0 "$TARN" append "$ns/events" --partition 1 --batch-ms 60000 "${flags[@]}" <"$tmp/in"
[ "$(cat "$tmp/out")" = "$(printf '0\n1')" ] || fail "append offsets: $(cat "$tmp/out")"
printf 'gamma\ndelta\n' >"$tmp/in"
expect_exit 0 "$TARN" append "$ns/events" --partition 1 --batch-ms 60000 "${flags[@]}" <"$tmp/in"
[ "$(cat "$tmp/out")" = "$(printf '2\n3')" ] || fail "append offsets: $(cat "$tmp/out")"
# the WAL objects went to S3, not to a local directory
[ ! -e wal ] && [ ! -e .tarn ] || fail "a local store was created"
expect_exit 0 "$TARN" read "$ns/events" --partition 1 "${flags[@]}"
[ "$(cat "$tmp/out")" = "$(printf 'alpha\nbeta\ngamma\ndelta')" ] || fail "read: $(cat "$tmp/out")"
expect_exit 0 "$TARN" read "$ns/events" --partition 1 --from 2 --count 1 --format hex "${flags[@]}"
grep -Eq '^2 1 [0-9]+ 67616d6d61$' "$tmp/out" || fail "read hex: $(cat "$tmp/out")"
expect_exit 0 "$TARN" read "$ns/events" --partition 0 "${flags[@]}"
[ ! -s "$tmp/out" ] || fail "partition 0 not empty"
# --home alone finds the stores through the tarn.json init wrote
expect_exit 0 "$TARN" read "$ns/events" --partition 1 --from 3 --home "$tmp/home"
[ "$(cat "$tmp/out")" = "delta" ] || fail "read through tarn.json: $(cat "$tmp/out")"

# trim through offset 1: B = 2, reads start there (LS-080)
expect_exit 0 "$TARN" trim "$ns/events" --partition 1 --through 1 "${flags[@]}" --json
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["trim_marker"] == 2, j' \
  "$tmp/out" || fail "trim --json: $(cat "$tmp/out")"
expect_exit 0 "$TARN" read "$ns/events" --partition 1 "${flags[@]}"
[ "$(cat "$tmp/out")" = "$(printf 'gamma\ndelta')" ] || fail "read after trim: $(cat "$tmp/out")"

expect_exit 0 "$TARN" offsets "$ns/events" "${flags[@]}" --json
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); p=j["partitions"]
assert [x["partition"] for x in p] == [0, 1], j
assert (p[0]["first_offset"], p[0]["end_offset"]) == (0, 0), p[0]
assert (p[1]["first_offset"], p[1]["end_offset"], p[1]["trim_marker"]) == (2, 4, 2), p[1]' \
  "$tmp/out" || fail "offsets --json: $(cat "$tmp/out")"

# drop: gone, its identity not reusable, its logs fenced
expect_exit 0 "$TARN" stream drop "$ns/events" "${flags[@]}" --json
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["existed"] is True, j' \
  "$tmp/out" || fail "drop --json: $(cat "$tmp/out")"
expect_exit 1 "$TARN" read "$ns/events" --partition 1 "${flags[@]}"
expect_exit 1 "$TARN" stream create "$ns/events" "${flags[@]}"
grep -q "dropped" "$tmp/err" || fail "create after drop: $(cat "$tmp/err")"
expect_exit 0 "$TARN" stream list "${flags[@]}" --json
python3 -c 'import json,sys; assert json.load(open(sys.argv[1])) == []' "$tmp/out" ||
  fail "list after drop: $(cat "$tmp/out")"
echo ok
