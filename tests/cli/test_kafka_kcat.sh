#!/usr/bin/env bash
# The Kafka listener of tarn serve with a client written by others: kcat 1.7
# (librdkafka 2.0.2, Debian), on the embedded default (sqlite: + file://), or
# on etcd:// + s3:// with KCAT_DEPLOYMENT=etcd-s3 (test_kafka_kcat_etcd_s3.sh).
#   - metadata: the node as broker and controller at its advertised address
#   - produce with each codec none/gzip/snappy/lz4/zstd: the batches are
#     stored as sent (their codec bits kept: librdkafka compresses only when
#     the broker advertises Produce v0 and, for zstd, Produce 7 / Fetch 10)
#   - consume from the beginning, from an offset, from a timestamp (-o s@TS)
#   - a consumer at the end gets a message produced after it started (the
#     fetch waits on the change notification)
#   - a topic is auto-created only with --kafka-auto-create-topics
#   - two nodes on one deployment: each lists both as brokers; produce through
#     one, consume through the other; a stopped node leaves the list
#   - SIGTERM: exit 0
. "$(dirname "$0")/lib.sh"
require_tool kcat
export TARN_HOME="$dir/home"
if [ "${KCAT_DEPLOYMENT:-}" = etcd-s3 ]; then # test_kafka_kcat_etcd_s3.sh: a deployment of its own
  unique_run
  export TARN_META="etcd://$TARN_TEST_ETCD?prefix=tarn-test/kcat-$run"
  export TARN_WAL="$TARN_TEST_S3_URI/kcat-$run/wal"
  export TARN_COMPACTED="$TARN_TEST_S3_URI/kcat-$run/compacted"
fi
"$TARN" init > /dev/null

# starts tarn serve with the given flags; sets pid and kport
start() {
  serve_start "$dir/log" --listen 127.0.0.1:0 --kafka-listen 127.0.0.1:0 --kafka-batch-ms 20 \
    --no-compact --no-reclaim --no-wal-gc "$@"
}
stop() { stop_term "$pid"; }
k() { timeout 20 kcat -b "127.0.0.1:$kport" "$@"; }
# a consumer whose fetches at the end wait 50 ms (not librdkafka's 500) before -e ends it
kc() { k -C -X fetch.wait.max.ms=50 "$@"; }

# Without auto-creation, producing to an unknown topic fails.
start
k -L > "$dir/md" 2>&1 || fail "metadata: $(cat "$dir/md")"
grep -q "broker 0 at 127.0.0.1:$kport (controller)" "$dir/md" || fail "metadata: $(cat "$dir/md")"
if echo x | k -P -t nope -X message.timeout.ms=1000 > "$dir/out" 2>&1; then
  grep -q "Unknown topic" "$dir/out" || fail "produce to an unknown topic succeeded: $(cat "$dir/out")"
fi
"$TARN" stream list | grepq 'nope-topic-id-' && fail "a topic was created without --kafka-auto-create-topics"
stop

start --kafka-auto-create-topics
for z in none gzip snappy lz4 zstd; do
  # 20 compressible messages in one batch (linger), so that compressing pays off
  for i in $(seq 20); do printf '%s-%02d-%0200d\n' "$z" "$i" 0; done |
    k -P -t codecs -z "$z" -X linger.ms=200 2> "$dir/err" || fail "produce $z: $(cat "$dir/err")"
done
k -L -t codecs > "$dir/md" 2>&1
grep -q 'topic "codecs" with 1 partitions' "$dir/md" || fail "metadata of codecs: $(cat "$dir/md")"
grep -q 'partition 0, leader 0, replicas: 0, isrs: 0' "$dir/md" || fail "partition 0: $(cat "$dir/md")"

# Every codec's batch is stored as sent: its attributes name the codec.
# librdkafka 2.0.2 takes LZ4 support from FindCoordinator v0 (rdkafka_feature.c:
# LZ4 came with it in Kafka 0.8.2): lz4 is required once the node serves the
# consumer-group APIs, until then librdkafka sends those batches uncompressed.
want="none gzip snappy zstd"
k -L -d protocol 2>&1 | grepq 'ApiKey FindCoordinator (10) Versions 0\.\.' && want="$want lz4"
stream=$("$TARN" stream list | awk '$2 ~ /^codecs-topic-id-/ { print $2 }')
[ -n "$stream" ] || fail "no stream for topic codecs"
"$TARN" read "default/$stream" --format json | python3 -c '
import json, sys
names = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
seen = set()
for line in sys.stdin:
    p = bytes.fromhex(json.loads(line)["payload"])
    assert p[16] == 2, "magic %d" % p[16]
    seen.add(names[(p[21] << 8 | p[22]) & 7])
missing = set(sys.argv[1].split()) - seen
assert not missing, "no batch stored with %s" % sorted(missing)
' "$want" || fail "codecs stored"

# Consume from the beginning: 100 messages in order with their offsets.
kc -t codecs -o beginning -e -f '%o %s\n' > "$dir/all" 2> "$dir/err" || fail "consume: $(cat "$dir/err")"
[ "$(wc -l < "$dir/all")" -eq 100 ] || fail "consumed $(wc -l < "$dir/all") of 100"
n=0
for z in none gzip snappy lz4 zstd; do
  for i in $(seq 20); do
    want=$(printf '%d %s-%02d-%0200d' "$n" "$z" "$i" 0)
    got=$(sed -n "$((n + 1))p" "$dir/all")
    [ "$got" = "$want" ] || fail "message $n: $got"
    n=$((n + 1))
  done
done

# From an offset inside a batch: the client drops the records below it.
kc -t codecs -o 45 -e -f '%o\n' > "$dir/from" 2> /dev/null
[ "$(head -1 "$dir/from")" = 45 ] || fail "from offset 45: $(head -1 "$dir/from")"
[ "$(wc -l < "$dir/from")" -eq 55 ] || fail "from offset 45: $(wc -l < "$dir/from") messages"

# From a timestamp: a later batch, with the timestamps kcat reports.
kc -t codecs -o beginning -e -f '%o %T\n' > "$dir/ts" 2> /dev/null
ts=$(awk '$1 == 60 { print $2 }' "$dir/ts")
first=$(awk -v t="$ts" '$2 >= t { print $1; exit }' "$dir/ts")
kc -t codecs -o "s@$ts" -e -f '%o\n' > "$dir/fromts" 2> /dev/null
[ "$(head -1 "$dir/fromts")" = "$first" ] || fail "from timestamp $ts: $(head -1 "$dir/fromts"), want $first"

# A consumer waiting at the end gets what is produced later.
k -C -t codecs -o end -c 1 -f '%o %s\n' > "$dir/tail" 2> /dev/null &
cpid=$!
sleep 1
echo late | k -P -t codecs
wait "$cpid" || fail "tailing consumer"
[ "$(cat "$dir/tail")" = "100 late" ] || fail "tail: $(cat "$dir/tail")"
stop

# Two nodes: both listed by each, produce through one, consume through the other.
start --kafka-auto-create-topics
pid1=$pid port1=$kport
start --kafka-auto-create-topics
pid2=$pid port2=$kport
kport=$port1
sleep 1.2 # the live list is read at most once a second
k -L > "$dir/md"
grep -q "2 brokers" "$dir/md" || fail "two nodes: $(cat "$dir/md")"
grep -q "broker [0-9]* at 127.0.0.1:$port2" "$dir/md" || fail "node 2 not listed: $(cat "$dir/md")"
seq 1 5 | k -P -t both
kport=$port2
seq 6 10 | k -P -t both
kc -t both -o beginning -e -f '%s\n' > "$dir/both" 2> /dev/null
[ "$(tr '\n' ' ' < "$dir/both")" = "1 2 3 4 5 6 7 8 9 10 " ] || fail "two nodes: $(cat "$dir/both")"
pid=$pid1
stop
sleep 1.2
k -L > "$dir/md"
grep -q "1 brokers" "$dir/md" || fail "a stopped node is still listed: $(cat "$dir/md")"
pid=$pid2
stop
