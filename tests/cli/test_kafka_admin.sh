#!/usr/bin/env bash
# The admin surface of issue 37 (cluster ID, DeleteGroups, reserved names)
# as clients written by others use it, on the embedded default, or on
# etcd:// + s3:// with ADMIN_DEPLOYMENT=etcd-s3 (test_kafka_admin_etcd_s3.sh):
#   - the cluster ID: kafka-python's describe_cluster() and confluent-kafka's
#     list_topics() name the deployment's id in Kafka's Uuid form (embedded:
#     the id of the root marker), the same after a restart; another
#     deployment has another
#   - kafka-python's delete_consumer_groups: a group whose consumer committed
#     and closed is deleted (its offsets gone, no longer listed by
#     kafka-python nor confluent-kafka, described Dead), an unknown group is
#     GroupIdNotFoundError, a group with a live consumer NonEmptyGroupError
#   - reserved names: a Metadata request for __consumer_offsets with
#     auto-creation on creates nothing; CreateTopics of __transaction_state
#     is INVALID_REQUEST
. "$(dirname "$0")/lib.sh"
py=/usr/bin/python3
$py -c 'import kafka, confluent_kafka' 2> /dev/null ||
  { echo "python3-kafka and python3-confluent-kafka are needed (scripts/install-deps.sh)" >&2; exit 1; }
export TARN_HOME="$dir/home"
if [ "${ADMIN_DEPLOYMENT:-}" = etcd-s3 ]; then
  unique_run
  export TARN_META="etcd://$TARN_TEST_ETCD?prefix=tarn-test/admin-$run"
  export TARN_WAL="$TARN_TEST_S3_URI/admin-$run/wal"
  export TARN_COMPACTED="$TARN_TEST_S3_URI/admin-$run/compacted"
fi
"$TARN" init > /dev/null
"$TARN" topic create t --partitions 2 > /dev/null
start() {
  serve_start "$dir/log" --listen 127.0.0.1:0 --kafka-listen 127.0.0.1:0 --kafka-batch-ms 20 \
    --kafka-auto-create-topics --no-compact --no-reclaim --no-wal-gc
}
start

cat > "$dir/cid.py" << 'EOF'
import sys
from kafka.admin import KafkaAdminClient
from confluent_kafka.admin import AdminClient
boot = sys.argv[1]
a = KafkaAdminClient(bootstrap_servers=boot)
c1 = a.describe_cluster()["cluster_id"]
a.close()
c2 = AdminClient({"bootstrap.servers": boot}).list_topics(timeout=10).cluster_id
assert c1 == c2, (c1, c2)
print(c1)
EOF
cid() { timeout 60 $py "$dir/cid.py" "127.0.0.1:$kport" 2> "$dir/err.cid" || fail "cluster id: $(cat "$dir/err.cid")"; }
id1=$(cid)
[ "${#id1}" = 22 ] && [ "$id1" != tarn ] || fail "cluster id $id1: not 22 characters of a Uuid"
grepq "kafka listening.* cluster_id=$id1" "$dir/log" || fail "the node's log does not name cluster ID $id1"
if [ "${ADMIN_DEPLOYMENT:-}" != etcd-s3 ]; then
  # the deployment's id (32 hex digits, in each root's marker) in Kafka's form
  want=$($py -c 'import base64,sys; print(base64.urlsafe_b64encode(bytes.fromhex(open(sys.argv[1]).read().strip())).decode().rstrip("="))' "$TARN_HOME/wal/tarn-deployment")
  [ "$id1" = "$want" ] || fail "cluster id $id1, the deployment's id is $want"
fi

cat > "$dir/groups.py" << 'EOF'
import sys, time
from kafka import KafkaConsumer, KafkaProducer, TopicPartition, OffsetAndMetadata
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.errors import GroupIdNotFoundError, NonEmptyGroupError, InvalidRequestError, NoError
from confluent_kafka.admin import AdminClient
boot = sys.argv[1]
p = KafkaProducer(bootstrap_servers=boot)
for i in range(10):
    p.send("t", b"m%d" % i, partition=i % 2)
p.flush()
p.close()

def consume(group):
    c = KafkaConsumer("t", group_id=group, bootstrap_servers=boot, auto_offset_reset="earliest",
                      enable_auto_commit=False, consumer_timeout_ms=8000)
    n = 0
    for _ in c:
        n += 1
        if n == 10:
            break
    assert n == 10, n
    c.commit()
    return c

done = consume("gone")
done.close()
live = consume("live")  # stays a member of "live"

a = KafkaAdminClient(bootstrap_servers=boot)
listed = lambda: sorted(g for g, _ in a.list_consumer_groups())
assert "gone" in listed() and "live" in listed(), listed()
assert a.list_consumer_group_offsets("gone")[TopicPartition("t", 0)].offset == 5
r = dict(a.delete_consumer_groups(["gone", "nope", "live"]))
assert r == {"gone": NoError, "nope": GroupIdNotFoundError, "live": NonEmptyGroupError}, r
assert "gone" not in listed() and "live" in listed(), listed()
assert a.list_consumer_group_offsets("gone") == {}, a.list_consumer_group_offsets("gone")
states = {g.group: g.state for g in a.describe_consumer_groups(["gone", "live"])}
assert states == {"gone": "Dead", "live": "Stable"}, states
ac = AdminClient({"bootstrap.servers": boot})
assert "gone" not in [g.id for g in ac.list_groups(timeout=10)]
live.close()  # leaves: "live" is Empty now and can go
r = dict(a.delete_consumer_groups(["live"]))
assert r == {"live": NoError}, r
# commit only (assign, no subscribe): Kafka's Empty group of protocol type "" (issue 37)
c = KafkaConsumer(group_id="plain", bootstrap_servers=boot, enable_auto_commit=False)
c.assign([TopicPartition("t", 0)])
c.commit({TopicPartition("t", 0): OffsetAndMetadata(3, "")})
c.close()
assert ("plain", "") in a.list_consumer_groups(), a.list_consumer_groups()
states = [(g.state, g.members) for g in a.describe_consumer_groups(["plain"])]
assert states == [("Empty", [])], states
assert dict(a.delete_consumer_groups(["plain"])) == {"plain": NoError}
assert "plain" not in listed(), listed()

# reserved names: asked for with auto-creation on, not created; refused by CreateTopics
md = ac.list_topics(topic="__consumer_offsets", timeout=10)
assert md.topics["__consumer_offsets"].error is not None, md.topics
assert "__consumer_offsets" not in ac.list_topics(timeout=10).topics
try:
    a.create_topics([NewTopic("__transaction_state", 1, 1)])
    sys.exit("__transaction_state was created")
except InvalidRequestError:
    pass
a.close()
print("ok")
EOF
timeout 90 $py "$dir/groups.py" "127.0.0.1:$kport" > "$dir/out.groups" 2>&1 ||
  fail "groups: $(cat "$dir/out.groups")"
"$TARN" topic list > "$dir/out.topics"
! grepq "__" "$dir/out.topics" || fail "a reserved name became a topic: $(cat "$dir/out.topics")"

# a restart keeps the cluster ID
stop_term "$pid"
start
[ "$(cid)" = "$id1" ] || fail "the cluster ID changed across a restart"
stop_term "$pid"

# another deployment: another cluster ID
if [ "${ADMIN_DEPLOYMENT:-}" != etcd-s3 ]; then
  export TARN_HOME="$dir/home2"
else
  unique_run
  export TARN_META="etcd://$TARN_TEST_ETCD?prefix=tarn-test/admin-$run"
  export TARN_WAL="$TARN_TEST_S3_URI/admin-$run/wal"
  export TARN_COMPACTED="$TARN_TEST_S3_URI/admin-$run/compacted"
fi
"$TARN" init > /dev/null
start
id2=$(cid)
[ "${#id2}" = 22 ] && [ "$id2" != "$id1" ] || fail "two deployments, cluster IDs $id1 and $id2"
stop_term "$pid"
echo ok
