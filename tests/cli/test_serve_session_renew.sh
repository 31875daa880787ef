#!/usr/bin/env bash
# Issue 31 item 6: tarn serve loses its metadata-store session (SIGSTOP for
# longer than the session timeout), renews it (the health job, every 5 s)
# and produces again; on the embedded default (sqlite: + file://) and, with
# TARN_TEST_ETCD and TARN_TEST_S3_URI set, on etcd:// + s3:// (radosgw).
# Before the fix the node's writer kept the old session's lease, and every
# produce to a partition it had written before failed until a restart. Also
# asserted: the renewal happens once (a late verdict on the old session
# ended the new one, and the node renewed twice, 5 s apart), and on sqlite
# the old lease record does not come back (a new session, new leases).
. "$(dirname "$0")/lib.sh"
require_tool kcat sqlite3

run_on() { # name
  local d=$dir/$1
  mkdir -p "$d"
  serve_start "$d/log" --listen 127.0.0.1:0 --kafka-listen 127.0.0.1:0 --kafka-batch-ms 20 \
    --kafka-auto-create-topics --no-compact --no-reclaim --no-wal-gc
  fail_logs+=("$d/log")
  k() { timeout 20 kcat -b "127.0.0.1:$kport" "$@"; }
  produce() {
    echo "$1" | k -P -t t -X message.timeout.ms=8000 2> "$d/err.p" ||
      fail "$run: produce $1: $(cat "$d/err.p")"
  }
  leases() { [ "$run" = embedded ] && sqlite3 "$dir/meta.db" "SELECT key FROM kv WHERE key LIKE '/stream-write-leases/%'" | sort; true; }
  produce one
  local old new n
  old=$(leases)
  # stopped past the session timeout: when it runs again, it learns that
  # its session expired; the health job opens a new one
  kill -STOP "$pid"
  sleep "$2"
  kill -CONT "$pid"
  wait_until 20 grep -q "a new one opened" "$d/log" || fail "$run: no renewal logged"
  produce two
  produce three
  new=$(leases)
  [ "$new" != "$old" ] || [ "$run" != embedded ] || fail "the old lease record came back: $old"
  timeout 20 kcat -b "127.0.0.1:$kport" -C -t t -o beginning -e -q -X fetch.wait.max.ms=50 \
    -f '%o %s\n' > "$d/out.read" 2> "$d/err.read" || fail "$run: read back"
  [ "$(cat "$d/out.read")" = "$(printf '0 one\n1 two\n2 three')" ] ||
    fail "$run: log: $(cat "$d/out.read")"
  # one renewal, not a second one after the first (the race)
  sleep 6
  n=$(grep -c "a new one opened" "$d/log")
  [ "$n" = 1 ] || fail "$run: $n renewals for one loss"
  stop_term "$pid"
  echo "$run: ok"
}

export TARN_HOME="$dir/home"
export TARN_META="sqlite:$dir/meta.db?session_timeout_ms=1500"
export TARN_WAL="file://$dir/wal" TARN_COMPACTED="file://$dir/compacted"
"$TARN" init > /dev/null
run=embedded
run_on embedded 2.5
if [ -n "${TARN_TEST_ETCD:-}" ] && [ -n "${TARN_TEST_S3_URI:-}" ]; then
  unique_run
  export TARN_HOME="$dir/home2"
  export TARN_META="etcd://$TARN_TEST_ETCD?prefix=tarn-test/renew-$run&session_timeout_ms=2000"
  export TARN_WAL="$TARN_TEST_S3_URI/renew-$run/wal"
  export TARN_COMPACTED="$TARN_TEST_S3_URI/renew-$run/compacted"
  "$TARN" init > /dev/null
  run=etcd-s3
  run_on etcd-s3 5
else
  echo "etcd-s3: skipped (TARN_TEST_ETCD / TARN_TEST_S3_URI not set)"
fi
