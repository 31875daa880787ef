#!/usr/bin/env bash
# Issue 31 item 3: an idempotent producer whose batches move between two
# `tarn serve` nodes, A -> B -> A, as a client's do when its leader changes
# (hand-made InitProducerId and Produce requests: kafka_idem_client.py), on
# the embedded default (sqlite: + file://) and, with TARN_TEST_ETCD and
# TARN_TEST_S3_URI set, on etcd:// + s3:// (radosgw). Before the fix each
# node trusted the producer state it had cached: A refused the next good
# batch OUT_OF_ORDER_SEQUENCE (it had not seen B's), and a retry at A of the
# batch B stored was stored a second time. Asserted: every answer is Kafka's
# (a retry within the last five batches gets its ORIGINAL offset, nothing is
# appended), and the log holds each value once, in order.
. "$(dirname "$0")/lib.sh"
require_tool kcat
py=/usr/bin/python3
client="$(dirname "$0")/kafka_idem_client.py"

run_on() { # deployment name
  local d=$dir/$1
  mkdir -p "$d"
  export TARN_HOME="$d/home"
  "$TARN" init > /dev/null
  "$TARN" topic create idem --partitions 1 > /dev/null
  local a b pa pb
  serve_start "$d/log.a" --listen 127.0.0.1:0 --kafka-listen 127.0.0.1:0 --kafka-batch-ms 20 \
    --no-compact --no-reclaim --no-wal-gc
  pa=$pid a=127.0.0.1:$kport
  serve_start "$d/log.b" --listen 127.0.0.1:0 --kafka-listen 127.0.0.1:0 --kafka-batch-ms 20 \
    --no-compact --no-reclaim --no-wal-gc
  pb=$pid b=127.0.0.1:$kport
  fail_logs+=("$d/log.*")
  local p
  p=$($py "$client" init "$a") || fail "$1: InitProducerId"
  send() { # node seq value expected-answer
    local got
    got=$($py "$client" produce "$1" idem "$p" "$2" "$3") || fail "$run: produce $2 at $1"
    [ "$got" = "$4" ] || fail "$run: seq $2 ($3) at $1: answered '$got', expected '$4'"
  }
  run=$1
  send "$a" 0 v0 "0 0"
  send "$b" 1 v1 "0 1"
  send "$a" 2 v2 "0 2"  # A has not seen seq 1: the store has
  send "$a" 1 v1 "0 1"  # a retry at A of B's batch: its original offset
  send "$b" 2 v2 "0 2"  # and of A's at B
  send "$b" 3 v3 "0 3"
  send "$a" 3 v3 "0 3"
  send "$a" 4 v4 "0 4"
  send "$a" 6 v6 "45 -1" # a gap: OUT_OF_ORDER_SEQUENCE
  timeout 30 kcat -b "$b" -C -t idem -o beginning -e -q -X fetch.wait.max.ms=50 -f '%o %s\n' \
    > "$d/out.read" 2> "$d/err.read" || fail "$1: read back: $(cat "$d/err.read")"
  [ "$(cat "$d/out.read")" = "$(printf '0 v0\n1 v1\n2 v2\n3 v3\n4 v4')" ] ||
    fail "$1: the log holds: $(cat "$d/out.read")"
  stop_term "$pa"
  stop_term "$pb"
  echo "$1: ok"
}

run_on embedded
if [ -n "${TARN_TEST_ETCD:-}" ] && [ -n "${TARN_TEST_S3_URI:-}" ]; then
  unique_run
  export TARN_META="etcd://$TARN_TEST_ETCD?prefix=tarn-test/kidem-$run"
  export TARN_WAL="$TARN_TEST_S3_URI/kidem-$run/wal"
  export TARN_COMPACTED="$TARN_TEST_S3_URI/kidem-$run/compacted"
  run_on etcd-s3
else
  echo "etcd-s3: skipped (TARN_TEST_ETCD / TARN_TEST_S3_URI not set)"
fi
