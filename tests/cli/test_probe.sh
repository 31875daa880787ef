#!/usr/bin/env bash
# `tarn probe STORE-URI` (issue 31, "Stores that lie"): every property holds
# on file://, sqlite:, and, with TARN_TEST_ETCD and TARN_TEST_S3_URI, on
# etcd:// and radosgw; through a proxy that plays a lying store
# (tests/support/lying_s3_proxy.py) in front of radosgw it fails: a store that
# acknowledges a create-only PUT of an existing name (ignores If-None-Match),
# and one whose LIST is not in byte order. `tarn init` refuses the lying
# store, and takes it with --i-know-the-store-is-unsafe and a warning.
# Exit codes: 0 ok, 1 unsafe, 2 bad command line, 3 unreachable.
. "$(dirname "$0")/lib.sh"
py=/usr/bin/python3
proxy="$(dirname "$0")/../support/lying_s3_proxy.py"
probe() { "$TARN" probe "$@"; }

probe "file://$dir/objs" > "$dir/out.file" || fail "file:// $(cat "$dir/out.file")"
grep -q "verdict: ok" "$dir/out.file" || fail "file://: $(cat "$dir/out.file")"
probe "sqlite:$dir/meta.db" --json > "$dir/out.sqlite" || fail "sqlite: $(cat "$dir/out.sqlite")"
$py -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["verdict"]=="ok" and d["kind"]=="metadata" and all(p["verdict"]=="holds" for p in d["properties"]), d' \
  "$dir/out.sqlite" || fail "sqlite --json"
# (file:// keeps the emptied directories: objects are files, and the store's
# delete removes files only)
[ -z "$(find "$dir/objs" -type f)" ] || fail "the probe left objects: $(find "$dir/objs" -type f)"
# bad command line, unreachable
set +e
probe > /dev/null 2>&1; [ $? = 2 ] || fail "no URI: not exit 2"
probe nope://x > /dev/null 2>&1; [ $? = 2 ] || fail "unknown scheme: not exit 2"
probe "etcd://127.0.0.1:1" > /dev/null 2>&1; rc=$?
[ $rc = 3 ] || fail "unreachable etcd: exit $rc, not 3"
probe "s3://b/p?endpoint=http://127.0.0.1:1&timeout_ms=500" > "$dir/out.unreach" 2>&1; rc=$?
[ $rc = 3 ] || fail "unreachable S3: exit $rc, not 3: $(cat "$dir/out.unreach")"
set -e
"$TARN" probe --help | grepq "create_only" || fail "--help"

if [ -z "${TARN_TEST_ETCD:-}" ] || [ -z "${TARN_TEST_S3_URI:-}" ]; then
  echo "etcd, radosgw and the lying proxy: skipped (TARN_TEST_ETCD / TARN_TEST_S3_URI not set)"
  exit 0
fi
unique_run
probe "etcd://$TARN_TEST_ETCD?prefix=tarn-test/probe-$run" > "$dir/out.etcd" || fail "etcd: $(cat "$dir/out.etcd")"
probe "$TARN_TEST_S3_URI/probe-$run" > "$dir/out.s3" || fail "radosgw: $(cat "$dir/out.s3")"
grep -q "list_order *holds" "$dir/out.s3" || fail "radosgw: $(cat "$dir/out.s3")"

start_proxy() { # mode: sets S3 to the store through the proxy
  rm -f "$dir/port"
  $py "$proxy" "$1" "$AWS_ENDPOINT_URL" "$dir/port" 2> "$dir/err.proxy.$1" &
  pids+=("$!")
  wait_until 10 test -s "$dir/port" || fail "the proxy did not start"
  local bucket=${TARN_TEST_S3_URI#s3://}
  S3="s3://$bucket/probe-$run-$1?endpoint=http://127.0.0.1:$(cat "$dir/port")"
}
start_proxy honest
probe "$S3" > "$dir/out.honest" || fail "through the honest proxy: $(cat "$dir/out.honest")"
start_proxy ignore-inm
set +e
probe "$S3" > "$dir/out.inm"; rc=$?
set -e
[ $rc = 1 ] || fail "ignore-inm: exit $rc, not 1: $(cat "$dir/out.inm")"
grep -q "create_only *fails *UNSAFE: a create-only put of an existing name SUCCEEDED" "$dir/out.inm" ||
  fail "ignore-inm: $(cat "$dir/out.inm")"
# init refuses that store, or takes it when told, loudly
set +e
TARN_HOME="$dir/h1" "$TARN" init --wal "$S3/wal" --compacted "$S3/c" > "$dir/out.init" 2>&1; rc=$?
set -e
[ $rc = 1 ] || fail "init on the lying store: exit $rc: $(cat "$dir/out.init")"
grep -q "refused: the WAL root is not safe" "$dir/out.init" || fail "init: $(cat "$dir/out.init")"
TARN_HOME="$dir/h2" "$TARN" init --wal "$S3/wal" --compacted "$S3/c" --i-know-the-store-is-unsafe \
  > "$dir/out.init2" 2>&1 || fail "init with the override: $(cat "$dir/out.init2")"
grep -q "WARNING: --i-know-the-store-is-unsafe" "$dir/out.init2" || fail "no warning: $(cat "$dir/out.init2")"
start_proxy shuffle-list
set +e
probe "$S3" --json > "$dir/out.shuffle"; rc=$?
set -e
[ $rc = 1 ] || fail "shuffle-list: exit $rc, not 1: $(cat "$dir/out.shuffle")"
$py -c 'import json,sys; d=json.load(open(sys.argv[1])); v={p["name"]:p["verdict"] for p in d["properties"]}; assert d["verdict"]=="unsafe" and v["list_order"]=="fails" and v["create_only"]=="holds", d' \
  "$dir/out.shuffle" || fail "shuffle-list --json: $(cat "$dir/out.shuffle")"
echo ok
