#!/usr/bin/env bash
# Retention and DeleteRecords (issue 37; docs/kafka.md "Retention";
# src/kafka/retention.c, api_delete_records.c) with clients written by others:
#   - a topic created with retention.ms=3000 (a node whose retention job runs
#     every 300 ms): ListOffsets earliest (confluent-kafka's watermarks) stays
#     0 while the records are young, then moves to the start of the last entry
#     once all are older than 3 s (the soft trim keeps the last index record,
#     LS-080), and to the next entry's start after another produce; kcat reads
#     from the beginning starting there (readers start at max(o, B), LS-054);
#   - DeleteRecords (kafka-python's protocol classes: neither client here has
#     an admin call for it) to offset 6 answers low_watermark 6, ListOffsets
#     earliest says 6, kcat from the beginning starts at 6, a Fetch at 2 is
#     OFFSET_OUT_OF_RANGE; past the high watermark: OFFSET_OUT_OF_RANGE; an
#     unknown topic: UNKNOWN_TOPIC_OR_PARTITION; ApiVersions advertises 21 0-2;
#   - a cleanup.policy=compact topic is not trimmed by time;
#   - the trims are counted (tarn_kafka_retention_trims_total).
# On the embedded default, and on etcd:// + s3:// with RET_DEPLOYMENT=etcd-s3
# (test_kafka_retention_etcd_s3.sh).
. "$(dirname "$0")/lib.sh"
require_tool kcat
py=/usr/bin/python3
$py -c 'import kafka, confluent_kafka' 2> /dev/null ||
  { echo "python3-kafka and python3-confluent-kafka are needed (scripts/install-deps.sh)" >&2; exit 1; }
export TARN_HOME="$dir/home"
if [ "${RET_DEPLOYMENT:-}" = etcd-s3 ]; then
  unique_run
  export TARN_META="etcd://$TARN_TEST_ETCD?prefix=tarn-test/retention-$run"
  export TARN_WAL="$TARN_TEST_S3_URI/retention-$run/wal"
  export TARN_COMPACTED="$TARN_TEST_S3_URI/retention-$run/compacted"
fi
"$TARN" init > /dev/null
"$TARN" topic create tr --config retention.ms=3000 > /dev/null
"$TARN" topic create tc --config retention.ms=3000 --config cleanup.policy=compact > /dev/null
"$TARN" topic create td > /dev/null
serve_start "$dir/log" --listen 127.0.0.1:0 --kafka-listen 127.0.0.1:0 --kafka-batch-ms 10 \
  --kafka-retention-check-ms 300 --no-compact --no-reclaim --no-wal-gc
node=$pid
boot="127.0.0.1:$kport"

cat > "$dir/r.py" << 'PY'
import sys, time, subprocess
from confluent_kafka import Producer, Consumer, TopicPartition
from kafka.client_async import KafkaClient
from kafka.protocol.api import Request, Response
from kafka.protocol.types import Array, Int16, Int32, Int64, Schema, String

boot, mode = sys.argv[1], sys.argv[2]

def produce(topic, n, keyed=False):  # keyed: a compacted topic refuses records without a key
    p = Producer({"bootstrap.servers": boot, "linger.ms": 0})
    for i in range(n):  # one entry each: flushed one by one
        p.produce(topic, value=b"v%d" % i, key=b"k%d" % i if keyed else None)
        p.flush(10)

c = Consumer({"bootstrap.servers": boot, "group.id": "g-" + mode})
def low(topic):
    return c.get_watermark_offsets(TopicPartition(topic, 0), timeout=5, cached=False)

def first_read(topic):  # kcat from the beginning: the first offset it prints
    out = subprocess.run(["kcat", "-b", boot, "-C", "-t", topic, "-o", "beginning", "-e", "-q",
                          "-f", "%o\n"], capture_output=True, text=True, timeout=30).stdout.split()
    return int(out[0]) if out else None

def wait_low(topic, want, secs):
    end = time.time() + secs
    while time.time() < end:
        if low(topic)[0] == want:
            return
        time.sleep(0.1)
    sys.exit("%s: low %s, want %d" % (topic, low(topic), want))

if mode == "retention":
    t0 = time.time()
    produce("tr", 5)
    produce("tc", 5, True)
    # young: nothing trimmed (LS-054: the log starts at 0)
    assert low("tr") == (0, 5), low("tr")
    assert time.time() - t0 < 2.5, "produce too slow for the check"
    # all older than 3 s: trimmed through the last entry but the last (LS-080)
    wait_low("tr", 4, 10)
    assert time.time() - t0 >= 2.9, "trimmed early: %.1f s" % (time.time() - t0)
    assert first_read("tr") == 4, first_read("tr")
    produce("tr", 1)
    wait_low("tr", 5, 10)
    assert first_read("tr") == 5, first_read("tr")
    # cleanup.policy=compact alone: not trimmed by time
    assert low("tc") == (0, 5), low("tc")
    print("ok")
    sys.exit(0)

# DeleteRecords (key 21) as Kafka declares it, sent through kafka-python
class DRResp(Response):
    API_KEY, API_VERSION = 21, 0
    SCHEMA = Schema(("throttle_time_ms", Int32), ("topics", Array(("name", String("utf-8")),
        ("partitions", Array(("partition_index", Int32), ("low_watermark", Int64),
                             ("error_code", Int16))))))
class DRReq(Request):
    API_KEY, API_VERSION, RESPONSE_TYPE = 21, 0, DRResp
    SCHEMA = Schema(("topics", Array(("name", String("utf-8")),
        ("partitions", Array(("partition_index", Int32), ("offset", Int64))))), ("timeout_ms", Int32))

kc = KafkaClient(bootstrap_servers=boot)
node = kc.least_loaded_node()
end = time.time() + 10
while not kc.ready(node) and time.time() < end:
    kc.poll(timeout_ms=100)
assert kc.get_api_versions()[21] == (0, 2), kc.get_api_versions().get(21)

def delete_records(topic, offset):
    f = kc.send(node, DRReq(topics=[(topic, [(0, offset)])], timeout_ms=5000))
    kc.poll(future=f, timeout_ms=10000)
    assert f.succeeded(), f.exception
    (name, parts), = f.value.topics
    (_, lw, err), = parts
    return lw, err

produce("td", 10)
assert low("td") == (0, 10), low("td")
assert delete_records("td", 6) == (6, 0), delete_records("td", 6)
assert low("td") == (6, 10), low("td")          # ListOffsets earliest reads B
assert first_read("td") == 6, first_read("td")  # LS-054: reading starts at max(o, B)
# a Fetch below B: OFFSET_OUT_OF_RANGE (auto.offset.reset=error surfaces it)
fc = Consumer({"bootstrap.servers": boot, "group.id": "g-oor", "auto.offset.reset": "error",
               "enable.auto.commit": False})
fc.assign([TopicPartition("td", 0, 2)])
err = None
end = time.time() + 10
while err is None and time.time() < end:
    m = fc.poll(0.5)
    if m is not None and m.error():
        err = m.error()
assert err is not None and "Offset out of range" in str(err), err
fc.close()
assert delete_records("td", 4) == (6, 0), "B went down"            # LS-079
assert delete_records("td", 11)[1] == 1, delete_records("td", 11)  # past the high watermark
assert delete_records("nope", 0)[1] == 3, delete_records("nope", 0)
assert delete_records("td", -1) == (9, 0), delete_records("td", -1)  # the last entry stays
print("ok")
PY
timeout 60 $py "$dir/r.py" "$boot" retention > "$dir/out" 2>&1 || fail "retention: $(cat "$dir/out")"
timeout 60 $py "$dir/r.py" "$boot" delete > "$dir/out" 2>&1 || fail "delete records: $(cat "$dir/out")"
curl -s "http://127.0.0.1:$port/metrics" > "$dir/metrics"
grepq 'tarn_kafka_retention_trims_total{cause="retention"} [1-9]' "$dir/metrics" ||
  fail "retention trims not counted: $(grep retention "$dir/metrics")"
grepq 'tarn_kafka_retention_trims_total{cause="delete_records"} 2' "$dir/metrics" ||
  fail "delete records not counted: $(grep retention "$dir/metrics")"
stop_term "$node"
echo ok
