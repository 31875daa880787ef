#!/usr/bin/env bash
# `tarn probe STORE-URI` (issue 31, "Stores that lie"): every safety property
# holds on file://, sqlite:, and, with TARN_TEST_ETCD and TARN_TEST_S3_URI, on
# etcd:// and radosgw; through a proxy that plays a lying store
# (tests/support/lying_s3_proxy.py, one mode per lie) in front of radosgw the
# property that lie breaks fails, with its verdict: create_only (ignores
# If-None-Match), list_order (unordered LIST), list_complete (a LIST cut short
# that says it is complete) exit 1; if_match (ignores If-Match), etag (random
# ETags) fail but exit 0 (tarn does not rely on them: "deviations");
# if_match_missing reports 404 or 412; under 503 bursts, and when a PUT
# answered 503 had been applied, the client retries and every property holds.
# `tarn init` refuses the lying store, and takes it with
# --i-know-the-store-is-unsafe and a warning. And etcd through a proxy that
# acknowledges LeaseRevoke without passing it on: ephemeral_session fails.
# Exit codes: 0 ok, 1 unsafe, 2 bad command line, 3 unreachable.
. "$(dirname "$0")/lib.sh"
py=/usr/bin/python3
proxy="$(dirname "$0")/../support/lying_s3_proxy.py"
probe() { "$TARN" probe "$@"; }

# an unreachable etcd takes its client's 15 s to give up: in the background,
# while the rest runs (checked by unreach_etcd)
probe "etcd://127.0.0.1:1" > /dev/null 2>&1 &
unreach_pid=$!
unreach_etcd() {
  local rc
  set +e
  wait "$unreach_pid"
  rc=$?
  set -e
  [ $rc = 3 ] || fail "unreachable etcd: exit $rc, not 3"
}
probe "file://$dir/objs" > "$dir/out.file" || fail "file:// $(cat "$dir/out.file")"
grep -q "verdict: ok" "$dir/out.file" || fail "file://: $(cat "$dir/out.file")"
probe "sqlite:$dir/meta.db" --json > "$dir/out.sqlite" || fail "sqlite: $(cat "$dir/out.sqlite")"
$py -c 'import json,sys; d=json.load(open(sys.argv[1])); v={p["name"]:p["verdict"] for p in d["properties"]}; assert d["verdict"]=="ok" and d["kind"]=="metadata" and all(x=="holds" for x in v.values()) and "cas_linearizable" in v and "ephemeral_session" in v, d' \
  "$dir/out.sqlite" || fail "sqlite --json"
# (file:// keeps the emptied directories: objects are files, and the store's
# delete removes files only)
[ -z "$(find "$dir/objs" -type f)" ] || fail "the probe left objects: $(find "$dir/objs" -type f)"
# bad command line, unreachable
set +e
probe > /dev/null 2>&1; [ $? = 2 ] || fail "no URI: not exit 2"
probe nope://x > /dev/null 2>&1; [ $? = 2 ] || fail "unknown scheme: not exit 2"
probe "s3://b/p?endpoint=http://127.0.0.1:1&timeout_ms=500" > "$dir/out.unreach" 2>&1; rc=$?
[ $rc = 3 ] || fail "unreachable S3: exit $rc, not 3: $(cat "$dir/out.unreach")"
set -e
"$TARN" probe --help | grepq "create_only" || fail "--help"

if [ -z "${TARN_TEST_ETCD:-}" ] || [ -z "${TARN_TEST_S3_URI:-}" ]; then
  unreach_etcd
  echo "etcd, radosgw and the lying proxy: skipped (TARN_TEST_ETCD / TARN_TEST_S3_URI not set)"
  exit 0
fi
unique_run
probe "etcd://$TARN_TEST_ETCD?prefix=tarn-test/probe-$run" > "$dir/out.etcd" || fail "etcd: $(cat "$dir/out.etcd")"
grep -q "cas_linearizable *holds" "$dir/out.etcd" && grep -q "ephemeral_session *holds" "$dir/out.etcd" ||
  fail "etcd: $(cat "$dir/out.etcd")"
# A lying metadata store: etcd through tests/support/faultproxy.py answering
# every LeaseRevoke with success without passing it on, so a session that
# ended keeps its ephemeral records (a dead writer's lease would live on):
# ephemeral_session fails, exit 1, and every other property holds.
proxy_start "$TARN_TEST_ETCD"
[ "$(ctl status code=200 body=etcd-ok path=/v3/lease/revoke count=0)" = ok ] || fail "proxy rule"
set +e
probe "etcd://127.0.0.1:$pport?prefix=tarn-test/probe-lying-$run" --json > "$dir/out.etcd-lie"
rc=$?
set -e
[ $rc = 1 ] || fail "etcd ignoring LeaseRevoke: exit $rc, not 1: $(cat "$dir/out.etcd-lie")"
$py - "$dir/out.etcd-lie" << 'EOF' || fail "etcd ignoring LeaseRevoke: $(cat "$dir/out.etcd-lie")"
import json, sys
d = json.load(open(sys.argv[1]))
p = {x["name"]: x for x in d["properties"]}
assert d["verdict"] == "unsafe", d
assert p["ephemeral_session"]["verdict"] == "fails", p["ephemeral_session"]
assert "outlived its session" in p["ephemeral_session"]["detail"], p["ephemeral_session"]
for x in d["properties"]:
    assert x["name"] == "ephemeral_session" or x["verdict"] == "holds", x
EOF
probe "$TARN_TEST_S3_URI/probe-$run" > "$dir/out.s3" || fail "radosgw: $(cat "$dir/out.s3")"
for p in list_order etag if_match_missing; do
  grep -q "$p *holds" "$dir/out.s3" || fail "radosgw $p: $(cat "$dir/out.s3")"
done
grep -Eq "create_only_multipart +(holds|fails) " "$dir/out.s3" || fail "radosgw multipart: $(cat "$dir/out.s3")"
# radosgw takes If-Match only unquoted (a deviation tarn does not rely on)
grep -q "if_match *fails *a stale If-Match is refused (412), but the current ETag quoted" "$dir/out.s3" ||
  fail "radosgw if_match: $(cat "$dir/out.s3")"

# One proxy for every mode (tests/support/lying_s3_proxy.py @FILE reads its
# mode from FILE at each request); use_mode MODE sets S3 to the store through
# it in MODE, under a prefix of that mode's own.
echo honest > "$dir/mode"
$py "$proxy" "@$dir/mode" "$AWS_ENDPOINT_URL" "$dir/port" 2> "$dir/err.proxy" &
pids+=("$!")
wait_until 10 test -s "$dir/port" || fail "the proxy did not start: $(cat "$dir/err.proxy")"
use_mode() {
  echo "$1" > "$dir/mode"
  local bucket=${TARN_TEST_S3_URI#s3://}
  S3="s3://$bucket/probe-$run-$1?endpoint=http://127.0.0.1:$(cat "$dir/port")"
}
use_mode honest
probe "$S3" > "$dir/out.honest" || fail "through the honest proxy: $(cat "$dir/out.honest")"
use_mode ignore-inm
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
# lie MODE EXIT PROPERTY VERDICT DETAIL-REGEX [ALSO]: through the proxy in
# MODE the probe exits EXIT, PROPERTY has VERDICT (and its detail matches),
# and every other safety property holds but ALSO (one the same lie breaks too)
lie() {
  local mode=$1 want=$2 prop=$3 verdict=$4 detail=$5 also=${6:-} rc
  use_mode "$mode"
  set +e
  probe "$S3" --json > "$dir/out.$mode"
  rc=$?
  set -e
  [ "$rc" = "$want" ] || fail "$mode: exit $rc, not $want: $(cat "$dir/out.$mode")"
  $py - "$dir/out.$mode" "$prop" "$verdict" "$detail" "$want" "$also" << 'EOF' || fail "$mode: $(cat "$dir/out.$mode")"
import json, re, sys
d = json.load(open(sys.argv[1])); prop, verdict, detail, want, also = sys.argv[2:7]
p = {x["name"]: x for x in d["properties"]}
assert p[prop]["verdict"] == verdict, (prop, p[prop])
assert re.search(detail, p[prop]["detail"]), (detail, p[prop])
assert d["verdict"] == ("unsafe" if want == "1" else "ok"), d
for x in d["properties"]:  # the lie breaks its property and no other safety one
    assert x["name"] in (prop, also) or not x["safety"] or x["verdict"] != "fails", x
if want == "0" and verdict == "fails":
    assert prop in d["deviations"], d
EOF
}
# (paging by start-after through reversed pages lists names again: both fail)
lie shuffle-list 1 list_order fails "out of byte order" list_complete
lie truncate-list 1 list_complete fails "names listed for 12 written"
lie ignore-if-match 0 if_match fails "stale If-Match was answered 200.*ignores If-Match"
lie if-match-404 0 if_match_missing holds "404 Not Found, not 412"
lie if-match-412 0 if_match_missing holds "412 Precondition Failed, nothing created"
lie random-etag 0 etag fails "different ETags"
lie 503-burst 0 throttling_503 holds "answers 503/429 during the probe, each retried"
# a PUT answered 503 had been applied: its retry meets 412, which the client
# settles by reading back (our own object), not "exists" (it did before)
lie 503-after-put 0 throttling_503 holds "answers 503/429 during the probe, each retried"
unreach_etcd
echo ok
