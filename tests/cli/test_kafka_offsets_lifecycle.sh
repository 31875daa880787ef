#!/usr/bin/env bash
# Issue 37 "Lifecycle": a topic's committed offsets go with it, on the
# embedded default (sqlite: + file://), with kafka-python 2.0.2. A group
# consumes and commits 100 records of topic T; T is deleted (DeleteTopics)
# and created again; 300 records are produced; the same group reads all 300
# (before: 200, from the old offset 100). Counted in the store: no offset
# record is left after the deletion.
# Then the footprint: short-lived consumers commit on topic F, 2 group
# members (subscribe, read, commit, close: each group Empty with its record)
# and 20 plain committers (assign + commit: groups of offsets only); with
# the retention set small (--kafka-offsets-retention-ms, tarn's finer form
# of offsets.retention.minutes) every offset record and every group record
# goes (Kafka: the Empty groups become Dead). Before: all of them stayed.
. "$(dirname "$0")/lib.sh"
require_tool sqlite3
py=/usr/bin/python3
$py -c 'import kafka' 2> /dev/null ||
  { echo "python3-kafka is needed (scripts/install-deps.sh)" >&2; exit 1; }
export TARN_HOME="$dir"
"$TARN" init > /dev/null
start() { # extra serve flags
  serve_start "$dir/log" --listen 127.0.0.1:0 --kafka-listen 127.0.0.1:0 --kafka-batch-ms 5 \
    --no-compact --no-reclaim --no-wal-gc "$@"
  fail_logs+=("$dir/log")
}
start

offsets() { # committed-offset records in the store
  sqlite3 "$dir/meta.db" "SELECT count(*) FROM kv WHERE key LIKE '/offsets/%'"
}
records() { # offset and group records in the store
  sqlite3 "$dir/meta.db" "SELECT count(*) FROM kv WHERE key LIKE '/offsets/%' OR key LIKE '/groups/%'"
}

cat > "$dir/run.py" << 'EOF'
import sys
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
boot, step = sys.argv[1], sys.argv[2]
a = KafkaAdminClient(bootstrap_servers=boot)

def produce(n):
    p = KafkaProducer(bootstrap_servers=boot)
    for i in range(n):
        p.send("T", b"m%d" % i)
    p.flush()
    p.close()

def consume(want):
    c = KafkaConsumer("T", group_id="g", bootstrap_servers=boot, auto_offset_reset="earliest",
                      enable_auto_commit=False, consumer_timeout_ms=5000)
    n = sum(1 for _ in c)
    c.commit()
    c.close()
    assert n == want, "group g read %d records, expected %d" % (n, want)

if step == "before":
    a.create_topics([NewTopic("T", 1, 1)])
    produce(100)
    consume(100)
elif step == "delete":
    a.delete_topics(["T"], timeout_ms=20000)
else:
    a.create_topics([NewTopic("T", 1, 1)])
    produce(300)
    consume(300)
a.close()
EOF
step() {
  timeout 90 $py "$dir/run.py" "127.0.0.1:$kport" "$1" > "$dir/out.$1" 2>&1 ||
    fail "$1: $(cat "$dir/out.$1")"
}
step before
[ "$(offsets)" = 1 ] || fail "after the commit: $(offsets) offset records, expected 1"
step delete
[ "$(offsets)" = 0 ] || fail "after the topic's deletion: $(offsets) offset records left"
step after
echo "the group read all 300 records of the re-created topic"
stop_term "$pid"

# the footprint: offsets expire 3 s after a commit or after their group became Empty
"$TARN" topic create F --partitions 2 > /dev/null
start --kafka-offsets-retention-ms 3000 --kafka-offsets-retention-check-ms 300
timeout 120 $py - "127.0.0.1:$kport" > "$dir/out.c" 2>&1 << 'EOF' || fail "consumers: $(cat "$dir/out.c")"
import sys
from kafka import KafkaConsumer, KafkaProducer, TopicPartition, OffsetAndMetadata
boot = sys.argv[1]
p = KafkaProducer(bootstrap_servers=boot)
for i in range(10):
    p.send("F", b"m%d" % i, partition=i % 2)
p.flush()
p.close()
for i in range(2):  # group members: subscribe, read, commit, leave
    c = KafkaConsumer("F", group_id="member-%d" % i, bootstrap_servers=boot,
                      auto_offset_reset="earliest", enable_auto_commit=False,
                      consumer_timeout_ms=4000)
    n = sum(1 for _ in c)
    assert n == 10, n
    c.commit()
    c.close()
for i in range(20):  # plain commits: no member ever joins
    c = KafkaConsumer(group_id="plain-%d" % i, bootstrap_servers=boot, enable_auto_commit=False)
    c.assign([TopicPartition("F", 0), TopicPartition("F", 1)])
    c.commit({TopicPartition("F", 0): OffsetAndMetadata(i, ""),
              TopicPartition("F", 1): OffsetAndMetadata(i, "")})
    c.close()
EOF
n=$(records)
[ "$n" -gt 0 ] || fail "no offset or group record after the commits"
wait_until 20 eval '[ "$(records)" = 0 ]' ||
  fail "offsets not expired: $(records) offset and group records 20 s after the commits"
grep -q "kafka offsets expired" "$dir/log" || fail "the expiry was not logged"
echo "footprint: $n offset and group records, then 0"
stop_term "$pid"
