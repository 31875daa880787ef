#!/usr/bin/env bash
# AlterConfigs, IncrementalAlterConfigs and CreatePartitions (issue 37;
# src/kafka/api_alter_configs.c, api_create_partitions.c) as clients written
# by others call them, on the embedded default, or on etcd:// + s3:// with
# ALTER_DEPLOYMENT=etcd-s3 (test_kafka_alter_configs_etcd_s3.sh):
#   - confluent-kafka's AdminClient alter_configs replaces the topic's set
#     (cleanup.policy given at creation goes back to its default), and
#     describe_configs then shows the new values as DYNAMIC_TOPIC_CONFIG;
#     validate_only changes nothing; retention.ms=banana is INVALID_CONFIG,
#     the storage class cannot change, an unknown topic is
#     UNKNOWN_TOPIC_OR_PARTITION, a broker config is INVALID_REQUEST;
#   - the running node applies max.message.bytes at once: a 2000-byte
#     message is refused (MESSAGE_TOO_LARGE) after it was set to 1000;
#   - IncrementalAlterConfigs v0 (neither installed client has it: the
#     request written out here) SET / DELETE / APPEND, and APPEND to a LONG
#     config refused;
#   - create_partitions (confluent-kafka, then kafka-python's
#     KafkaAdminClient, which also alters) grows the topic 1 -> 3 -> 4;
#     the same count or fewer is INVALID_PARTITIONS; validate_only adds
#     none; Metadata lists the new partitions and kcat produces to partition
#     3 and reads it back.
. "$(dirname "$0")/lib.sh"
py=/usr/bin/python3
$py -c 'import kafka, confluent_kafka' 2> /dev/null ||
  { echo "python3-kafka and python3-confluent-kafka are needed (scripts/install-deps.sh)" >&2; exit 1; }
require_tool kcat
if [ "${ALTER_DEPLOYMENT:-}" = etcd-s3 ]; then
  unique_run
  export TARN_META="etcd://$TARN_TEST_ETCD?prefix=tarn-test/alter-$run"
  export TARN_WAL="$TARN_TEST_S3_URI/alter-$run/wal"
  export TARN_COMPACTED="$TARN_TEST_S3_URI/alter-$run/compacted"
else
  export TARN_HOME="$dir/home"
fi
"$TARN" init > /dev/null
"$TARN" topic create a --config retention.ms=5000 --config cleanup.policy=compact > /dev/null
serve_start "$dir/log" --listen 127.0.0.1:0 --kafka-listen 127.0.0.1:0 --kafka-node-id 7 \
  --kafka-batch-ms 10 --no-compact --no-reclaim --no-wal-gc
node=$pid
cat > "$dir/a.py" << 'EOF'
import socket, struct, sys
import kafka.errors
from confluent_kafka import Producer, KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource as CR, NewPartitions
from kafka.admin import KafkaAdminClient, ConfigResource, ConfigResourceType, NewPartitions as KNP

boot = sys.argv[1]
ac = AdminClient({"bootstrap.servers": boot})

def one(fs):
    (f,) = fs.values()
    return f.result()

def refused(fs, what):
    try:
        one(fs)
    except KafkaException as e:
        assert what in str(e), (what, e)
        return
    sys.exit("not refused: " + what)

def described(topic):
    return one(ac.describe_configs([CR("topic", topic)]))

one(ac.alter_configs([CR("topic", "a", {"retention.ms": "9000", "max.message.bytes": "1000"})]))
cfg = described("a")
assert cfg["retention.ms"].value == "9000" and cfg["retention.ms"].source == 1, cfg["retention.ms"]
assert not cfg["retention.ms"].is_read_only
assert cfg["max.message.bytes"].value == "1000" and not cfg["max.message.bytes"].is_default
# AlterConfigs replaces the set: what it does not name is back to the default
assert cfg["cleanup.policy"].value == "delete" and cfg["cleanup.policy"].is_default, cfg["cleanup.policy"]
one(ac.alter_configs([CR("topic", "a", {"retention.ms": "1", "max.message.bytes": "1000"})],
                     validate_only=True))
assert described("a")["retention.ms"].value == "9000"
refused(ac.alter_configs([CR("topic", "a", {"retention.ms": "banana"})]), "INVALID_CONFIG")
refused(ac.alter_configs([CR("topic", "a", {"class": "express"})]), "INVALID_CONFIG")
refused(ac.alter_configs([CR("topic", "nope", {"retention.ms": "1"})]), "UNKNOWN_TOPIC")
refused(ac.alter_configs([CR("broker", "7", {"num.partitions": "3"})]), "INVALID_REQUEST")
assert described("a")["retention.ms"].value == "9000"

# the node applies the new max.message.bytes at once
p = Producer({"bootstrap.servers": boot, "message.max.bytes": 100000, "linger.ms": 0})
errs = []
p.produce("a", b"x" * 2000, on_delivery=lambda e, m: errs.append(e))
p.flush(20)
assert errs and errs[0] is not None and "MSG_SIZE_TOO_LARGE" in str(errs[0]), errs

# IncrementalAlterConfigs v0, written out: resources, then validate_only
def s(x): return struct.pack(">h", len(x)) + x.encode()
def ns(x): return struct.pack(">h", -1) if x is None else s(x)
def incremental(ops, validate=False):
    body = struct.pack(">i", 1) + struct.pack(">b", 2) + s("a") + struct.pack(">i", len(ops))
    for name, op, value in ops:
        body += s(name) + struct.pack(">b", op) + ns(value)
    body += struct.pack(">?", validate)
    req = struct.pack(">hhi", 44, 0, 9) + s("t") + body
    host, port = boot.split(":")
    with socket.create_connection((host, int(port)), timeout=10) as c:
        c.sendall(struct.pack(">i", len(req)) + req)
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
            chunk = c.recv(65536)
            assert chunk, "connection closed"
            buf += chunk
    # size, correlation id, throttle, [responses]: error code, message
    assert struct.unpack(">i", buf[4:8])[0] == 9
    n = struct.unpack(">i", buf[12:16])[0]
    assert n == 1, n
    err, mlen = struct.unpack(">hh", buf[16:20])
    return err, buf[20:20 + mlen].decode() if mlen > 0 else None

assert incremental([("retention.ms", 1, None), ("cleanup.policy", 2, "compact"),
                    ("segment.ms", 0, "60000")]) == (0, None)
cfg = described("a")
assert cfg["retention.ms"].is_default and cfg["retention.ms"].value == "604800000", cfg["retention.ms"]
assert cfg["cleanup.policy"].value == "delete,compact", cfg["cleanup.policy"]
assert cfg["segment.ms"].value == "60000" and cfg["max.message.bytes"].value == "1000"
err, msg = incremental([("segment.ms", 2, "1")])
assert err == 40 and "append is not allowed" in msg, (err, msg)
assert incremental([("segment.ms", 0, "5")], validate=True) == (0, None)
assert described("a")["segment.ms"].value == "60000"

# CreatePartitions
def parts(topic):
    return len(ac.list_topics(topic, timeout=10).topics[topic].partitions)
assert parts("a") == 1
one(ac.create_partitions([NewPartitions("a", 3)]))
assert parts("a") == 3
refused(ac.create_partitions([NewPartitions("a", 3)]), "INVALID_PARTITIONS")
refused(ac.create_partitions([NewPartitions("a", 2)]), "INVALID_PARTITIONS")
one(ac.create_partitions([NewPartitions("a", 9)], validate_only=True))
assert parts("a") == 3

ka = KafkaAdminClient(bootstrap_servers=boot)
r = ka.create_partitions({"a": KNP(total_count=4)})
assert r.topic_errors[0][1] == 0, r.topic_errors
try:
    ka.create_partitions({"a": KNP(total_count=4)})
    sys.exit("the same count again was not refused")
except kafka.errors.InvalidPartitionsError as e:
    assert "Topic already has 4 partitions." in str(e), e
r = ka.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "a", configs={"max.message.bytes": "5000"})])
assert r.resources[0][0] == 0, r.resources
ka.close()
assert described("a")["max.message.bytes"].value == "5000"
assert parts("a") == 4
print("ok")
EOF
timeout 60 $py "$dir/a.py" "127.0.0.1:$kport" > "$dir/out" 2>&1 || fail "admin clients: $(cat "$dir/out")"
# the new partition takes produce and fetch (kcat)
echo hello3 | timeout 20 kcat -b "127.0.0.1:$kport" -P -t a -p 3 || fail "kcat produce to partition 3"
got=$(timeout 20 kcat -b "127.0.0.1:$kport" -C -t a -p 3 -o beginning -e -q) ||
  fail "kcat consume partition 3"
[ "$got" = hello3 ] || fail "partition 3 holds '$got'"
stop_term "$node"
echo ok
