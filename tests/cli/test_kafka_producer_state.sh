#!/usr/bin/env bash
# Issue 37 "Lifecycle": the idempotent producers' state under a bounded
# metadata footprint, on the embedded default (sqlite: + file://), measured
# by counting the producer-state records in the store. Many short-lived
# confluent-kafka producers (enable.idempotence=True) write one message to
# each of 8 partitions: one record per (producer, partition). Asserted:
# deleting the topic (DeleteTopics through the node) removes every one of
# them, and with producer.id.expiration.ms set small
# (--kafka-producer-id-expiration-ms) the node's sweep removes them without
# a deletion. Before: all of them stayed, after the deletion too (checked:
# without the removal in tarn_kafka_topic_delete it fails with 160 records left).
. "$(dirname "$0")/lib.sh"
require_tool sqlite3
py=/usr/bin/python3
N=20 # producers

records() { # producer-state records in the store
  sqlite3 "$dir/meta.db" "SELECT count(*) FROM kv WHERE key LIKE '/kafka-producer-state/%'"
}

producers() { # topic: N idempotent producers, one after the other, each
  # writes a message to each of the 8 partitions and goes
  $py - "127.0.0.1:$kport" "$1" "$N" > "$dir/out.p" 2>&1 << 'PY' || fail "producers: $(cat "$dir/out.p")"
import sys
from confluent_kafka import Producer
addr, topic, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for i in range(n):
    p = Producer({"bootstrap.servers": addr, "enable.idempotence": True,
                  "linger.ms": 0, "message.timeout.ms": 20000})
    errs = []
    for part in range(8):
        p.produce(topic, value=b"m%d-%d" % (i, part), partition=part,
                  on_delivery=lambda e, m: e and errs.append(e))
    if p.flush(20) or errs:
        sys.exit("producer %d: %s" % (i, errs or "not flushed"))
PY
}

start() { # extra serve flags
  serve_start "$dir/log" --listen 127.0.0.1:0 --kafka-listen 127.0.0.1:0 --kafka-batch-ms 5 \
    --no-compact --no-reclaim --no-wal-gc "$@"
  fail_logs+=("$dir/log")
}

export TARN_HOME="$dir"
"$TARN" init > /dev/null
"$TARN" topic create pst --partitions 8 > /dev/null
start
producers pst
n=$(records)
[ "$n" = $((N * 8)) ] || fail "after $N producers x 8 partitions: $n records, expected $((N * 8))"
$py - "127.0.0.1:$kport" > "$dir/out.d" 2>&1 << 'PY' || fail "DeleteTopics: $(cat "$dir/out.d")"
import sys
from confluent_kafka.admin import AdminClient
a = AdminClient({"bootstrap.servers": sys.argv[1]})
for t, f in a.delete_topics(["pst"], operation_timeout=20).items():
    f.result()
PY
n=$(records)
[ "$n" = 0 ] || fail "after the topic's deletion: $n producer-state records left"
echo "deletion: $((N * 8)) records, then 0"
stop_term "$pid"

# expiry: the sweep every 300 ms, a record expires 3 s after its last write
"$TARN" topic create pst2 --partitions 8 > /dev/null
start --kafka-producer-id-expiration-ms 3000 --kafka-producer-id-expiration-check-ms 300
producers pst2
n=$(records)
[ "$n" -gt 0 ] && [ "$n" -le $((N * 8)) ] || fail "after $N producers x 8 partitions: $n records"
wait_until 15 eval '[ "$(records)" = 0 ]' ||
  fail "producer state not expired: $(records) records 15 s after the producers"
grep -q "kafka producer state expired" "$dir/log" || fail "the expiry was not logged"
echo "expiry: $n records, then 0"
stop_term "$pid"
