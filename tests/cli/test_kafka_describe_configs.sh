#!/usr/bin/env bash
# DescribeConfigs (issue 37, "Configs"; src/kafka/api_describe_configs.c) as
# admin clients written by others call it: kafka-python's KafkaAdminClient and
# confluent-kafka's AdminClient (librdkafka) describe a topic created with
# retention.ms=5000 and cleanup.policy=compact (Schema Registry checks its
# _schemas topic's cleanup.policy this way): those two are the topic's values
# (source DYNAMIC_TOPIC_CONFIG, the default as a synonym), the rest Kafka's
# defaults (DEFAULT_CONFIG), every topic config but the storage class
# alterable (not read-only), every broker config read-only; one key asked for gives that key alone; an unknown topic is
# UNKNOWN_TOPIC_OR_PARTITION; the broker's configs come from the node's flags.
. "$(dirname "$0")/lib.sh"
py=/usr/bin/python3
$py -c 'import kafka, confluent_kafka' 2> /dev/null ||
  { echo "python3-kafka and python3-confluent-kafka are needed (scripts/install-deps.sh)" >&2; exit 1; }
export TARN_HOME="$dir/home"
"$TARN" init > /dev/null
"$TARN" topic create t1 --config retention.ms=5000 --config cleanup.policy=compact > /dev/null
"$TARN" topic create t2 > /dev/null
serve_start "$dir/log" --listen 127.0.0.1:0 --kafka-listen 127.0.0.1:0 --kafka-node-id 7 \
  --kafka-auto-create-topics --no-compact --no-reclaim --no-wal-gc
node=$pid
cat > "$dir/d.py" << 'EOF'
import sys
from kafka.admin import KafkaAdminClient, ConfigResource, ConfigResourceType
from confluent_kafka.admin import AdminClient, ConfigResource as CR

boot = sys.argv[1]
a = KafkaAdminClient(bootstrap_servers=boot)
(r,) = a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "t1")], include_synonyms=True)
(err, _, rtype, rname, entries) = r.resources[0]
assert (err, rtype, rname) == (0, 2, "t1"), r.resources[0]
got = {e[0]: e for e in entries}
assert len(got) >= 30, len(got)
# name, value, read_only, config_source, is_sensitive, synonyms
assert got["retention.ms"] == ("retention.ms", "5000", False, 1, False,
                               [("retention.ms", "5000", 1), ("retention.ms", "604800000", 5)]), got["retention.ms"]
assert got["cleanup.policy"][1:4] == ("compact", False, 1), got["cleanup.policy"]
assert got["segment.ms"] == ("segment.ms", "604800000", False, 5, False, [("segment.ms", "604800000", 5)])
assert [e[0] for e in entries if e[2]] == ["class"], "read-only: not the storage class alone"
(r,) = a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "t2", configs={"retention.ms": None})])
entries = r.resources[0][4]
assert [e[:2] for e in entries] == [("retention.ms", "604800000")], entries
(r,) = a.describe_configs([ConfigResource(ConfigResourceType.BROKER, "7")])
broker = {e[0]: e[1] for e in r.resources[0][4]}
assert all(e[2] for e in r.resources[0][4]), "a broker config not read-only"
assert broker["broker.id"] == "7" and broker["auto.create.topics.enable"] == "true", broker
assert broker["offsets.retention.minutes"] == "10080", broker  # issue 37: Kafka's default
a.close()

ac = AdminClient({"bootstrap.servers": boot})
fs = ac.describe_configs([CR("topic", "t1"), CR("topic", "nope")])
for res, f in fs.items():
    if res.name == "t1":
        cfg = f.result()
        assert cfg["retention.ms"].value == "5000" and cfg["cleanup.policy"].value == "compact", cfg
        assert cfg["max.message.bytes"].value == "1048588" and cfg["max.message.bytes"].is_default
        assert not cfg["retention.ms"].is_read_only and cfg["class"].is_read_only
    else:
        try:
            f.result()
            sys.exit("an unknown topic was described")
        except Exception as e:
            assert "UNKNOWN_TOPIC" in str(e), e
print("ok")
EOF
timeout 60 $py "$dir/d.py" "127.0.0.1:$kport" > "$dir/out" 2>&1 || fail "describe configs: $(cat "$dir/out")"
stop_term "$node"
echo ok
