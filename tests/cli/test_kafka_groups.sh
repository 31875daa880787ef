#!/usr/bin/env bash
# Consumer groups and idempotent producers through tarn serve's Kafka
# listener, with clients written by others (Debian packages), on the
# embedded default (sqlite: + file://):
#   - kafka-python 2.0.2: a producer, a group consumer that commits, and a new
#     consumer of the group resuming from the committed offsets after a
#     restart of the node (nothing read twice, nothing skipped)
#   - two `kcat -G` members of one group share a topic's partitions, and the
#     one that stays gets all of them when the other leaves
#   - confluent-kafka-python 1.7 with enable.idempotence=true: every message
#     acknowledged is stored once
. "$(dirname "$0")/lib.sh"
py=/usr/bin/python3
require_tool kcat
$py -c 'import kafka, confluent_kafka' 2> /dev/null ||
  { echo "python3-kafka and python3-confluent-kafka are needed (scripts/install-deps.sh)" >&2; exit 1; }
export TARN_HOME="$dir/home"
"$TARN" init > /dev/null

# starts tarn serve; sets pid and kport (the Kafka port)
start() {
  serve_start "$dir/log" --listen 127.0.0.1:0 --kafka-listen 127.0.0.1:0 --kafka-batch-ms 20 \
    --kafka-auto-create-topics --no-compact --no-reclaim --no-wal-gc
}
stop() { stop_term "$pid"; }

cat > "$dir/groups.py" << 'EOF'
import sys, time
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

boot, cmd = sys.argv[1], sys.argv[2]

def consume(n, group):
    c = KafkaConsumer("gt", bootstrap_servers=boot, group_id=group, auto_offset_reset="earliest",
                      enable_auto_commit=False, consumer_timeout_ms=4000,
                      session_timeout_ms=10000, heartbeat_interval_ms=1000)
    got = []
    deadline = time.time() + 30
    while len(got) < n and time.time() < deadline:
        for m in c:
            got.append(m.value.decode())
            if len(got) == n:
                break
    c.commit()
    committed = {p: c.committed(TopicPartition("gt", p)) for p in range(4)}
    # one more message would be a duplicate
    extra = c.poll(timeout_ms=1500)
    c.close()
    return got, committed, sum(len(v) for v in extra.values())

if cmd == "create":
    a = KafkaAdminClient(bootstrap_servers=boot)
    a.create_topics([NewTopic("gt", num_partitions=4, replication_factor=1),
                     NewTopic("idem", num_partitions=2, replication_factor=1)])
    # Kafka's topic configs (issue 37): INVALID_CONFIG (40) for a value of
    # the wrong type, and nothing created
    for validate_only in (False, True):
        try:
            a.create_topics([NewTopic("badcfg", num_partitions=1, replication_factor=1,
                                      topic_configs={"retention.ms": "banana"})],
                            validate_only=validate_only)
            sys.exit("retention.ms=banana was accepted (validate_only=%s)" % validate_only)
        except Exception as e:
            assert "InvalidConfiguration" in type(e).__name__, repr(e)
    a.close()
elif cmd == "produce":
    first, n = int(sys.argv[3]), int(sys.argv[4])
    p = KafkaProducer(bootstrap_servers=boot, acks="all")
    for i in range(first, first + n):
        p.send("gt", key=str(i).encode(), value=("m%d" % i).encode())
    p.flush()
    p.close()
elif cmd == "consume":
    first, n = int(sys.argv[3]), int(sys.argv[4])
    got, committed, extra = consume(n, "g1")
    want = ["m%d" % i for i in range(first, first + n)]
    assert sorted(got) == sorted(want), (len(got), sorted(set(want) - set(got))[:5], got[:5])
    assert extra == 0, "read %d more than produced" % extra
    total = sum(v for v in committed.values() if v is not None)
    assert total == first + n, committed
    print("ok", committed)
EOF

start
b="127.0.0.1:$kport"
$py "$dir/groups.py" "$b" create || fail "kafka-python: create topic"
$py "$dir/groups.py" "$b" produce 0 40 || fail "kafka-python: produce"
$py "$dir/groups.py" "$b" consume 0 40 > "$dir/c1" 2>&1 || fail "kafka-python group consumer: $(cat "$dir/c1")"
# The committed offsets survive a restart: the group resumes after them.
stop
start
b="127.0.0.1:$kport"
$py "$dir/groups.py" "$b" produce 40 20 || fail "kafka-python: produce after restart"
$py "$dir/groups.py" "$b" consume 40 20 > "$dir/c2" 2>&1 || fail "resume after restart: $(cat "$dir/c2")"

# Two kcat members of one group share the 4 partitions; when one leaves, the
# other is given all of them.
kc() { exec kcat -b "$b" -G g2 -X session.timeout.ms=6000 -X heartbeat.interval.ms=500 -o beginning gt; }
kc > "$dir/ka.out" 2> "$dir/ka.err" &
ka=$!
pids+=("$ka")
assigned() { { grep -o 'assigned: .*' "$1" || true; } | tail -1 | { grep -o 'gt \[[0-9]*\]' || true; } | sort | tr -d '\n'; }
for _ in $(seq 200); do
  [ "$(assigned "$dir/ka.err")" = "gt [0]gt [1]gt [2]gt [3]" ] && break
  sleep 0.1
done
[ "$(assigned "$dir/ka.err")" = "gt [0]gt [1]gt [2]gt [3]" ] || fail "kcat A alone: $(cat "$dir/ka.err")"
kc > "$dir/kb.out" 2> "$dir/kb.err" &
kb=$!
pids+=("$kb")
for _ in $(seq 300); do
  a=$(assigned "$dir/ka.err"); bb=$(assigned "$dir/kb.err")
  [ -n "$bb" ] && [ "$a" != "gt [0]gt [1]gt [2]gt [3]" ] && [ -n "$a" ] && break
  sleep 0.1
done
a=$(assigned "$dir/ka.err"); bb=$(assigned "$dir/kb.err")
[ -n "$a" ] && [ -n "$bb" ] || fail "two members: A '$a' B '$bb': $(cat "$dir/ka.err" "$dir/kb.err")"
[ "$(printf '%s%s' "$a" "$bb" | grep -o 'gt \[[0-9]*\]' | sort | tr -d '\n')" = "gt [0]gt [1]gt [2]gt [3]" ] ||
  fail "the members do not share the partitions: A '$a' B '$bb'"
kill -TERM "$kb"
wait "$kb" 2> /dev/null || true
for _ in $(seq 300); do
  [ "$(assigned "$dir/ka.err")" = "gt [0]gt [1]gt [2]gt [3]" ] && break
  sleep 0.1
done
[ "$(assigned "$dir/ka.err")" = "gt [0]gt [1]gt [2]gt [3]" ] ||
  fail "A after B left: $(cat "$dir/ka.err")"
kill -TERM "$ka"
wait "$ka" 2> /dev/null || true

# An idempotent producer (InitProducerId, sequence checks): every message
# acknowledged is stored exactly once.
cat > "$dir/idem.py" << 'EOF'
import sys
from confluent_kafka import Producer
boot = sys.argv[1]
acked, errors = [], []
def cb(err, msg):
    (errors if err else acked).append(err or (msg.partition(), msg.offset()))
p = Producer({"bootstrap.servers": boot, "enable.idempotence": True, "linger.ms": 5,
              "topic.metadata.refresh.interval.ms": 1000})
for i in range(300):
    p.produce("idem", value=b"i%d" % i, callback=cb)
    if i % 50 == 0:
        p.poll(0)
left = p.flush(30)
assert left == 0 and not errors, (left, errors[:3])
assert len(acked) == 300 and len(set(acked)) == 300, (len(acked), len(set(acked)))
ends = {}
for part, off in acked:
    ends[part] = max(ends.get(part, 0), off + 1)
print(sum(ends.values()))  # no gaps: as many offsets as messages
EOF
$py "$dir/idem.py" "$b" > "$dir/idem.out" 2>&1 || fail "idempotent producer: $(cat "$dir/idem.out")"
[ "$(tail -1 "$dir/idem.out")" = 300 ] || fail "idempotent producer offsets: $(cat "$dir/idem.out")"
timeout 20 kcat -b "$b" -C -t idem -o beginning -e -q > "$dir/idem.got" || fail "consume idem"
[ "$(sort -u "$dir/idem.got" | wc -l)" = 300 ] && [ "$(wc -l < "$dir/idem.got")" = 300 ] ||
  fail "idem holds $(wc -l < "$dir/idem.got") messages, $(sort -u "$dir/idem.got" | wc -l) distinct"
stop
echo ok
