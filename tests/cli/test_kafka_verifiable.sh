#!/usr/bin/env bash
# confluent-kafka-python 1.7's kafkatest clients (Debian python3-confluent-kafka:
# confluent_kafka/kafkatest/verifiable_{producer,consumer}.py, the programs
# Kafka's own system tests drive) against tarn serve's Kafka listener on the
# embedded default (sqlite: + file://). The scripts are Python 2 code (an
# implicit relative import, dict.iteritems, bytes handed to json.dumps); they
# run unchanged under /usr/bin/python3 through a loader that supplies just those
# three (vrun.py below). Their -X options reach librdkafka only with the
# "conf_" prefix their set_config expects (a bare -X name=value is dropped).
#   - the verifiable producer, enable.idempotence=true and acks=-1, sends 1200
#     messages at 200/s into a topic of 4 partitions;
#   - a group of two verifiable consumers reads it, committing the offsets they
#     stored every 500 ms (--enable-autocommit, auto.commit.interval.ms=500) and
#     on every revoke and close; once a member has committed, it is killed with
#     SIGKILL mid-run and restarted, and the group resumes from the offsets it
#     committed.
# What it asserts, and why not "exactly once": under the classic group protocol
# a member killed with SIGKILL cannot commit what it consumed after its last
# commit, so Kafka re-delivers that window to the member that takes the
# partition over (at-least-once). So the test asserts, from the clients' JSON
# events:
#   1. the producer got a delivery report for every message, none failed, and
#      the acknowledged (partition, offset) pairs are distinct and dense (the
#      idempotent producer wrote nothing twice, left no hole);
#   2. every acknowledged message was consumed, at its acknowledged partition
#      and offset with its value (nothing acknowledged lost);
#   3. a message consumed twice was consumed by the killed member at or past the
#      last offset it committed for that partition (its uncommitted window), and
#      no other message is consumed more than once: the members that leave or
#      rebalance cleanly commit first, and the restarted member resumes exactly
#      at the group's committed offsets;
#   4. the committed offsets at the end are each partition's end.
. "$(dirname "$0")/lib.sh"
py=/usr/bin/python3
kt=/usr/lib/python3/dist-packages/confluent_kafka/kafkatest
[ -f "$kt/verifiable_producer.py" ] && [ -f "$kt/verifiable_consumer.py" ] ||
  { echo "python3-confluent-kafka's kafkatest is not installed (scripts/install-deps.sh)" >&2; exit 1; }
export TARN_HOME="$dir/home"
"$TARN" init > /dev/null
serve_start "$dir/log" --listen 127.0.0.1:0 --kafka-listen 127.0.0.1:0 --kafka-batch-ms 20 \
  --no-compact --no-reclaim --no-wal-gc
b="127.0.0.1:$kport"

cat > "$dir/vrun.py" << 'EOF2'
# Runs one of kafkatest's verifiable clients unchanged under Python 3: its
# "from verifiable_client import" finds the module beside it, set_config gets
# dict.items for iteritems, and send() writes bytes keys/values as text.
import datetime, json, re, runpy, sys
sys.path.insert(0, sys.argv[1])
import verifiable_client
V = verifiable_client.VerifiableClient
class _Args(dict):
    def iteritems(self):
        return iter(self.items())
_set_config = V.set_config
V.set_config = staticmethod(lambda conf, args: _set_config(conf, _Args(args)))
def _send(self, d):
    d['_time'] = str(datetime.datetime.now())
    sys.stdout.write('%s\n' % json.dumps(d, default=lambda b: b.decode()))
    sys.stdout.flush()
V.send = _send
script = sys.argv[2]
sys.argv = [script] + sys.argv[3:]
runpy.run_path(script, run_name='__main__')
EOF2
cat > "$dir/create.py" << 'EOF2'
import sys
from confluent_kafka.admin import AdminClient, NewTopic
a = AdminClient({"bootstrap.servers": sys.argv[1]})
for f in a.create_topics([NewTopic("vt", num_partitions=4, replication_factor=1)]).values():
    f.result(20)
EOF2
$py "$dir/create.py" "$b" || fail "create topic"

vc() { # name: one verifiable consumer of group vg, its events in $dir/name.json
  $py "$dir/vrun.py" "$kt" "$kt/verifiable_consumer.py" --topic vt --group-id vg --broker-list "$b" \
    --session-timeout 6000 --verbose --enable-autocommit -X conf_auto.commit.interval.ms=500 \
    -X conf_heartbeat.interval.ms=500 -X conf_fetch.wait.max.ms=100 \
    > "$dir/$1.json" 2> "$dir/$1.err" &
  pids+=("$!")
  cpid=$!
}
vc c1; c1=$cpid
vc c2; c2=$cpid
$py "$dir/vrun.py" "$kt" "$kt/verifiable_producer.py" --topic vt --broker-list "$b" \
  --max-messages 1200 --throughput 200 --acks -1 -X conf_enable.idempotence=true \
  -X conf_linger.ms=5 -X conf_debug=eos \
  > "$dir/p.json" 2> "$dir/p.err" &
prod=$!
pids+=("$prod")
# Let c2 consume and commit for a while, then kill it between two commits.
consumed() { grep -c '"name": "record_data"' "$dir/$1.json" || true; }
commits() { grep '"name": "offsets_committed"' "$dir/$1.json" | grep -c '"success": true' || true; }
for _ in $(seq 300); do [ "$(consumed c2)" -ge 150 ] && [ "$(commits c2)" -ge 2 ] && break; sleep 0.05; done
[ "$(consumed c2)" -ge 150 ] && [ "$(commits c2)" -ge 2 ] ||
  fail "c2 consumed $(consumed c2), committed $(commits c2) times: $(tail -5 "$dir/c2.err")"
sleep 0.25
kill -KILL "$c2"
wait "$c2" 2> /dev/null || true
sleep 1
vc c2b; c2b=$cpid
wait "$prod" || fail "verifiable producer: $(tail -5 "$dir/p.err")"
# debug=eos: librdkafka logs the idempotent producer's state; it must have got
# its producer ID (InitProducerId) and stayed idempotent
grep -q 'Idempotent producer state change WaitPID -> Assigned' "$dir/p.err" ||
  fail "the verifiable producer is not idempotent: $(grep -i idemp "$dir/p.err" | tail -3)"
# Wait until the group has consumed every acknowledged message.
for _ in $(seq 300); do
  [ "$(cat "$dir"/c1.json "$dir"/c2.json "$dir"/c2b.json | grep -o '"value": "[0-9]*"' | sort -u | wc -l)" -ge 1200 ] && break
  sleep 0.1
done
# Close both members (SIGTERM: they commit and leave).
kill -TERM "$c1" "$c2b"
wait "$c1" || fail "c1 exit $?: $(tail -5 "$dir/c1.err")"
wait "$c2b" || fail "c2b exit $?: $(tail -5 "$dir/c2b.err")"

cat > "$dir/check.py" << 'EOF2'
import json, sys
from confluent_kafka import Consumer, TopicPartition
d, boot = sys.argv[1], sys.argv[2]
def events(name):
    return [json.loads(l) for l in open("%s/%s.json" % (d, name)) if l.startswith("{")]
prod = events("p")
acked = {(e["partition"], e["offset"]): e["value"] for e in prod if e["name"] == "producer_send_success"}
errors = [e for e in prod if e["name"] == "producer_send_error"]
n_acked = sum(1 for e in prod if e["name"] == "producer_send_success")
# 1.
assert not errors, errors[:3]
assert n_acked == 1200 and len(acked) == 1200, (n_acked, len(acked))
assert sorted(acked.values(), key=int) == [str(i) for i in range(1200)]
ends = {}
for p, o in acked:
    ends[p] = max(ends.get(p, -1), o + 1)
assert sum(ends.values()) == 1200, ends  # dense: offsets 0..n-1 in each partition
# 2. and 3.
seen = {}   # (partition, offset) -> [(member, value)]
for m in ("c1", "c2", "c2b"):
    for e in events(m):
        if e["name"] == "record_data":
            seen.setdefault((e["partition"], e["offset"]), []).append((m, e["value"]))
lost = [k for k in acked if k not in seen]
assert not lost, ("lost", len(lost), sorted(lost)[:5])
wrong = [(k, v) for k, v in seen.items() if k not in acked or any(x != acked[k] for _, x in v)]
assert not wrong, ("consumed what was not acknowledged so", wrong[:5])
last_commit = {}  # the killed member's last successful commit per partition
for e in events("c2"):
    if e["name"] == "offsets_committed" and e["success"]:
        for o in e["offsets"]:
            if o["offset"] >= 0:
                last_commit[o["partition"]] = o["offset"]
assert last_commit, "the killed member committed nothing before it was killed"
dups = {k: v for k, v in seen.items() if len(v) > 1}
bad = [(k, v) for k, v in dups.items()
       if len(v) != 2 or "c2" not in [m for m, _ in v] or k[1] < last_commit.get(k[0], 0)]
assert not bad, ("duplicates outside the killed member's uncommitted window", bad[:5], last_commit)
# 4.
c = Consumer({"bootstrap.servers": boot, "group.id": "vg"})
committed = c.committed([TopicPartition("vt", p) for p in range(4)], timeout=10)
c.close()
got = {t.partition: t.offset for t in committed}
assert got == {p: ends.get(p, 0) for p in range(4)}, (got, ends)
print("acked %d, consumed %d distinct, %d re-delivered from the killed member's uncommitted window"
      % (len(acked), len(seen), len(dups)))
EOF2
$py "$dir/check.py" "$dir" "$b" > "$dir/check.out" 2>&1 || fail "$(cat "$dir/check.out")"
cat "$dir/check.out"
stop_term "$pid"
echo ok
