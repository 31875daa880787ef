# The deployments of the express leadership tests (issue 30 items 1, 2, 4),
# sourced after lib.sh:  xlead_deploy sqlite|etcd
#   sqlite  the embedded default: sqlite + file:// (tarn init's three bucket
#           directories), session_timeout_ms=$session_ms
#   etcd    etcd + an S3 WAL root + three radosgw buckets created here (deleted
#           at exit); skipped (77) without the servers, failed in CI
# xbucket_q (etcd; set after sourcing): three query strings appended to the
# buckets' S3 URIs, e.g. ("?endpoint=http://127.0.0.1:PORT" "" ""): a bucket
# reached through a proxy (test_express_roll_outage_s3.sh).
# Sets session_ms (TARN_TEST_SESSION_MS, default 1000: a paused process must
# outlive its session quickly) and exports TARN_HOME/META/WAL/COMPACTED.
# xlead_check NS/NAME IN1 OUT1 [IN2 OUT2 ...]: tarn read, check_acked.py over
# the runs, tarn fsck; fails on a violation.
# xlead_stop PID: SIGSTOP, outside a write transaction of the sqlite store.
session_ms=${TARN_TEST_SESSION_MS:-1000}
xbuckets=()
xbucket_q=("" "" "")
s3() {
  curl -s -o /dev/null -w '%{http_code}' -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" \
    --aws-sigv4 "aws:amz:${AWS_REGION:-us-east-1}:s3" \
    --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" "$@"
}
cleanup_hook() {
  local b
  for b in "${xbuckets[@]}"; do
    curl -s -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" --aws-sigv4 "aws:amz:${AWS_REGION:-us-east-1}:s3" \
      --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" "$AWS_ENDPOINT_URL/$b?max-keys=1000" |
      grep -o '<Key>[^<]*</Key>' | sed 's/<[^>]*>//g' |
      xargs -r -P 8 -I{} curl -s -o /dev/null -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" \
        --aws-sigv4 "aws:amz:${AWS_REGION:-us-east-1}:s3" \
        --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" -X DELETE "$AWS_ENDPOINT_URL/$b/{}" || true
    s3 -X DELETE "$AWS_ENDPOINT_URL/$b" > /dev/null || true
  done
}

xlead_deploy() {
  unset TARN_HOME TARN_META TARN_WAL TARN_COMPACTED TARN_STAR
  export TARN_HOME="$dir/home"
  mkdir -p "$TARN_HOME"
  if [ "$1" = sqlite ]; then
    export TARN_META="sqlite:$dir/home/meta.db?session_timeout_ms=$session_ms"
    "$TARN" init > /dev/null 2> "$dir/init.err" || fail "tarn init"
    return
  fi
  need_env TARN_TEST_ETCD TARN_TEST_S3_URI AWS_ENDPOINT_URL
  unique_run
  xbuckets=("tarn-xl-$run-a" "tarn-xl-$run-b" "tarn-xl-$run-c")
  local b code
  for b in "${xbuckets[@]}"; do
    code=$(s3 -X PUT "$AWS_ENDPOINT_URL/$b")
    [ "$code" = 200 ] || fail "creating bucket $b: HTTP $code"
  done
  export TARN_META="etcd://$TARN_TEST_ETCD?prefix=tarn-test/xlead-$run&session_timeout_ms=$session_ms"
  export TARN_WAL="$TARN_TEST_S3_URI/xlead-$run/wal"
  export TARN_COMPACTED="$TARN_TEST_S3_URI/xlead-$run/compacted"
  "$TARN" init --express-bucket "s3://${xbuckets[0]}/x${xbucket_q[0]}@za" \
    --express-bucket "s3://${xbuckets[1]}/x${xbucket_q[1]}@zb" \
    --express-bucket "s3://${xbuckets[2]}/x${xbucket_q[2]}@zc" --express-w 2 --express-win 8 \
    > /dev/null 2> "$dir/init.err" || fail "tarn init"
}

# xlead_stop PID: stops PID (SIGSTOP). On sqlite a process stopped inside a
# write transaction holds the database's lock, and every other process of the
# machine waits until it runs again (SQLite's locking: no lock is broken, the
# store stalls, nothing is lost; docs/durability.md). A test that stops a
# writer to let another take over must not stop it there: while the lock is
# held, it lets PID run a little and stops it again. On a loaded machine the
# zombie test stopped A inside one, and B waited forever in CI.
xlead_stop() {
  local i
  for i in $(seq 200); do
    kill -STOP "$1"
    [ "$mode" = sqlite ] || return 0
    python3 -c '
import sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=0.1)
c.execute("BEGIN IMMEDIATE")
c.execute("ROLLBACK")' "$TARN_HOME/meta.db" 2> /dev/null && return 0
    kill -CONT "$1"
    sleep 0.0$((RANDOM % 5 + 1))
  done
  fail "xlead_stop: $1 held the sqlite lock at each of 200 stops"
}

# lines PREFIX N: PREFIX-0 ... PREFIX-(N-1), in bursts of 20 every 20 ms
lines() {
  local i=0
  while [ $i -lt "$2" ]; do
    echo "$1-$i"
    i=$((i + 1))
    [ $((i % 20)) = 0 ] && sleep 0.02
  done
  return 0
}

# acked FILE: the acknowledgements (offset lines) in a --json output so far
acked() { grep -c '"offset"' "$1" 2> /dev/null || true; }

xlead_check() {
  local name=$1 runs=()
  shift
  while [ $# -ge 2 ]; do
    runs+=(--run "$1" "$2")
    shift 2
  done
  "$TARN" read "$name" --format json > "$dir/read.jsonl" 2> "$dir/read.err" || fail "tarn read $name"
  python3 "$(dirname "${BASH_SOURCE[0]}")/check_acked.py" --read "$dir/read.jsonl" "${runs[@]}" \
    > "$dir/check.out" 2>&1 || { cat "$dir/check.out" >&2; fail "check_acked: violations"; }
  cat "$dir/check.out"
  "$TARN" fsck > "$dir/fsck.out" 2> "$dir/fsck.err" || fail "tarn fsck: $(cat "$dir/fsck.out")"
}
