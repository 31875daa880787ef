#!/usr/bin/env bash
# Express streams on real servers (issue 14 acceptance): etcd:// + an S3 WAL
# root, and an express bucket set of three radosgw buckets created here, one
# of them unreachable (its endpoint is a closed port) for the whole run. A
# `tarn append` to an express stream keeps acknowledging with two of three
# buckets (W = 2); it is killed with SIGKILL mid-run; another process fences
# and settles the stream by its name; then every offset the appender printed
# (its acknowledged entries) reads back holding the line sent for it, and no
# line is in the log twice. Needs TARN_TEST_ETCD, TARN_TEST_S3_URI and AWS_*
# (`source /work/servers.env`, or `eval "$(scripts/servers.sh start)"`):
# skipped (exit 77) without them, failed in CI.
. "$(dirname "$0")/lib.sh"
need_env TARN_TEST_ETCD TARN_TEST_S3_URI AWS_ENDPOINT_URL
unique_run
buckets=("tarn-xk-$run-a" "tarn-xk-$run-b" "tarn-xk-$run-c")
# S3 calls of the test's own (bucket creation, cleanup), signed by curl
s3() {
  curl -s -o /dev/null -w '%{http_code}' -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" \
    --aws-sigv4 "aws:amz:${AWS_REGION:-us-east-1}:s3" \
    --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" "$@"
}
# lib.sh runs it at exit, once the pids are killed
cleanup_hook() {
  for b in "${buckets[@]:0:2}"; do
    # the test's objects (a few hundred): list, delete 8 at a time, then the bucket
    curl -s -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" --aws-sigv4 "aws:amz:${AWS_REGION:-us-east-1}:s3" \
      --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" "$AWS_ENDPOINT_URL/$b?max-keys=1000" |
      grep -o '<Key>[^<]*</Key>' | sed 's/<[^>]*>//g' |
      xargs -r -P 8 -I{} curl -s -o /dev/null -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" \
        --aws-sigv4 "aws:amz:${AWS_REGION:-us-east-1}:s3" \
        --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" -X DELETE "$AWS_ENDPOINT_URL/$b/{}" || true
    s3 -X DELETE "$AWS_ENDPOINT_URL/$b" > /dev/null || true
  done
}

for b in "${buckets[@]:0:2}"; do
  code=$(s3 -X PUT "$AWS_ENDPOINT_URL/$b")
  [ "$code" = 200 ] || fail "creating bucket $b: HTTP $code"
done
unset TARN_HOME TARN_META TARN_WAL TARN_COMPACTED
export TARN_HOME="$dir/home"
export TARN_META="etcd://$TARN_TEST_ETCD?prefix=tarn-test/xkill-$run"
export TARN_WAL="$TARN_TEST_S3_URI/xkill-$run/wal"
export TARN_COMPACTED="$TARN_TEST_S3_URI/xkill-$run/compacted"
# the third bucket's endpoint is a closed port: every call to it fails fast
"$TARN" init --express-bucket "s3://${buckets[0]}/x@za" --express-bucket "s3://${buckets[1]}/x@zb" \
  --express-bucket "s3://${buckets[2]}/x?endpoint=http://127.0.0.1:9&timeout_ms=200@zc" \
  --express-w 2 --express-win 8 > /dev/null 2> "$dir/init.err" || fail "tarn init"
"$TARN" stream create fast/k --class express > /dev/null

# line-N is sent for offset N (the log starts empty, one line = one entry)
mkfifo "$dir/in"
# bursts of 20 lines every 20 ms (a sleep per line forks a process per line)
( i=0; while [ $i -lt 100000 ]; do echo "line-$i"; i=$((i + 1)); [ $((i % 20)) = 0 ] && sleep 0.02; done ) > "$dir/in" &
pids+=($!)
"$TARN" append fast/k --star node-k < "$dir/in" > "$dir/acked" 2> "$dir/append.err" &
pids+=($!)
appender=$!
for _ in $(seq 1 300); do
  [ "$(wc -l < "$dir/acked")" -ge 1000 ] && break
  kill -0 "$appender" 2> /dev/null || fail "the appender stopped early"
  sleep 0.1
done
[ "$(wc -l < "$dir/acked")" -ge 1000 ] || fail "fewer than 1000 acknowledgements in 30 s with 1 of 3 buckets down"
kill -KILL "$appender"
wait "$appender" 2> /dev/null || true
kill -KILL "${pids[0]}" 2> /dev/null || true
acked=$(wc -l < "$dir/acked")

# another process: fence, then settle, by the stream's name
"$TARN" express fence fast/k --timeout-ms 20000 > "$dir/fence.out" 2> "$dir/fence.err" || fail "fence"
"$TARN" express settle fast/k --timeout-ms 20000 --json > "$dir/settle.out" 2> "$dir/settle.err" || fail "settle"
grep -q '"absorbed"' "$dir/settle.out" || fail "settle output: $(cat "$dir/settle.out")"

"$TARN" read fast/k > "$dir/read" 2> "$dir/read.err" || fail "read"
# every acknowledged offset holds its line ...
awk 'NR == FNR { at[FNR - 1] = $0; next }
     at[$1] != "line-" $1 { print "offset " $1 " holds \"" at[$1] "\""; bad = 1 }
     END { exit bad }' "$dir/read" "$dir/acked" || fail "an acknowledged offset does not hold its line"
# ... and the log is line-0, line-1, ... with nothing twice (entries past the
# last acknowledged one may be there: committed, never acknowledged)
awk '$0 != "line-" NR - 1 { print "entry " NR - 1 " is " $0; bad = 1 } END { exit bad }' "$dir/read" ||
  fail "the log is not the lines in order, once each"
total=$(wc -l < "$dir/read")
[ "$total" -ge "$acked" ] || fail "$total entries read, $acked acknowledged"
echo "ok: $acked acknowledged, $total read after fence and settle ($(cat "$dir/fence.out"))"
