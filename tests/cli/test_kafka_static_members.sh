#!/usr/bin/env bash
# Static group membership (KIP-345, issue 37 "Static membership") through
# tarn serve's Kafka listener on the embedded default (sqlite: + file://),
# with confluent-kafka-python 1.7 (librdkafka 2.0.2, group.instance.id):
#   - two consumers with instance IDs "ia" and "ib" share a 4-partition topic
#   - "ia" is killed (SIGKILL: no LeaveGroup; a static member sends none on
#     close either) and restarted with the same instance ID within
#     session.timeout.ms: it gets the same partitions back at once, "ib" sees
#     no rebalance (no revoke or assign callback), and consumption goes on
#   - a third process started with instance ID "ia" takes the instance over:
#     the running "ia" is fenced (FENCED_INSTANCE_ID, a fatal error) and
#     "ib" still sees no rebalance
. "$(dirname "$0")/lib.sh"
py=/usr/bin/python3
$py -c 'import confluent_kafka' 2> /dev/null || fail "python3-confluent-kafka is needed (scripts/install-deps.sh)"

cat > "$dir/admin.py" << 'EOF'
import sys
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
boot, cmd = sys.argv[1], sys.argv[2]
if cmd == "create":
    a = AdminClient({"bootstrap.servers": boot})
    for f in a.create_topics([NewTopic("st", num_partitions=4, replication_factor=1)]).values():
        f.result()
else:
    first, n = int(sys.argv[3]), int(sys.argv[4])
    p = Producer({"bootstrap.servers": boot, "linger.ms": 5})
    for i in range(first, first + n):
        p.produce("st", partition=i % 4, value=b"m%d" % i)
    assert p.flush(20) == 0
EOF

# A static member: prints "assign P,..", "revoke P,..", "msg VALUE" and, on a
# fatal error, "fatal CODE NAME: REASON" and exits 3.
cat > "$dir/member.py" << 'EOF'
import sys
from confluent_kafka import Consumer, KafkaError
boot, instance = sys.argv[1], sys.argv[2]
def out(*a):
    print(*a, flush=True)
def parts(ps):
    return ",".join(str(p.partition) for p in sorted(ps, key=lambda p: p.partition))
c = Consumer({"bootstrap.servers": boot, "group.id": "sg", "group.instance.id": instance,
              "session.timeout.ms": 10000, "heartbeat.interval.ms": 300,
              "auto.offset.reset": "earliest", "auto.commit.interval.ms": 200,
              "topic.metadata.refresh.interval.ms": 1000})
c.subscribe(["st"], on_assign=lambda _, ps: out("assign", parts(ps)),
            on_revoke=lambda _, ps: out("revoke", parts(ps)))
while True:
    m = c.poll(0.2)
    if m is None:
        continue
    e = m.error()
    if e is None:
        out("msg", m.value().decode())
    elif e.fatal() or e.code() == KafkaError._FATAL:
        out("fatal", e.code(), e.name(), e.str())
        sys.exit(3)
    elif e.code() != KafkaError._PARTITION_EOF:
        out("error", e.code(), e.name(), e.str())
EOF

export TARN_HOME="$dir/home"
"$TARN" init > /dev/null
serve_start "$dir/log" --listen 127.0.0.1:0 --kafka-listen 127.0.0.1:0 --kafka-batch-ms 20 \
  --no-compact --no-reclaim --no-wal-gc
b="127.0.0.1:$kport"
member() { # instance name: starts a member, its output in $dir/name.out; sets mpid
  $py "$dir/member.py" "$b" "$1" > "$dir/$2.out" 2> "$dir/$2.err" &
  mpid=$!
  pids+=("$mpid")
}
last_assign() { { grep '^assign ' "$1" || true; } | tail -1 | cut -d' ' -f2; }
events() { { grep -c '^assign \|^revoke ' "$1" || true; }; }
got() { { grep -c "^msg m$2\$" "$dir/a2.out" "$dir/b.out" "$dir/$1.out" 2> /dev/null || true; } |
  cut -d: -f2 | paste -sd+ | bc; }

$py "$dir/admin.py" "$b" create || fail "create topic st"
$py "$dir/admin.py" "$b" produce 0 40 || fail "produce 0..39"
member ia a
pa=$mpid
member ib b
pb=$mpid
# both hold two partitions, all four between them
split() {
  local x y
  x=$(last_assign "$dir/a.out") y=$(last_assign "$dir/b.out")
  [ -n "$x" ] && [ -n "$y" ] && [ "$(echo "$x,$y" | tr , '\n' | sort | paste -sd,)" = 0,1,2,3 ]
}
wait_until 30 split || fail "the two static members did not share st: a '$(last_assign "$dir/a.out")' b '$(last_assign "$dir/b.out")'"
wait_until 20 eval '[ "$(grep -c "^msg " "$dir/a.out" "$dir/b.out" | cut -d: -f2 | paste -sd+ | bc)" -ge 40 ]' ||
  fail "the members did not read the 40 messages"
pa_parts=$(last_assign "$dir/a.out")
# B's callbacks so far; none may come from here on
b_events=$(events "$dir/b.out")

# "ia" dies and comes back within session.timeout.ms (10 s)
kill -KILL "$pa"
wait "$pa" 2> /dev/null || true
member ia a2
pa2=$mpid
wait_until 15 eval '[ -n "$(last_assign "$dir/a2.out")" ]' || fail "the restarted ia got no assignment"
[ "$(last_assign "$dir/a2.out")" = "$pa_parts" ] ||
  fail "the restarted ia got '$(last_assign "$dir/a2.out")', not its partitions '$pa_parts'"
$py "$dir/admin.py" "$b" produce 40 40 || fail "produce 40..79"
all_new() { local i; for i in $(seq 40 79); do [ "$(got a2 "$i")" -ge 1 ] || return 1; done; }
wait_until 20 all_new || fail "consumption did not go on after ia's restart"
sleep 1 # a rebalance would have shown in B by now (heartbeats every 300 ms)
[ "$(events "$dir/b.out")" = "$b_events" ] ||
  fail "ib saw a rebalance when ia restarted: $(grep '^assign \|^revoke ' "$dir/b.out")"

# a third process with ia's instance ID fences the running one
member ia c
pc=$mpid
wait_until 15 eval '[ -n "$(last_assign "$dir/c.out")" ]' || fail "the new ia got no assignment"
[ "$(last_assign "$dir/c.out")" = "$pa_parts" ] ||
  fail "the new ia got '$(last_assign "$dir/c.out")', not '$pa_parts'"
wait_until 15 eval '! kill -0 "$pa2" 2> /dev/null' || fail "the fenced ia still runs: $(cat "$dir/a2.out")"
rc=0
wait "$pa2" || rc=$?
[ "$rc" = 3 ] || fail "the fenced ia exited $rc, not by a fatal error"
grep -i '^fatal .*fenced' "$dir/a2.out" > /dev/null || fail "ia was not fenced: $(tail -3 "$dir/a2.out")"
$py "$dir/admin.py" "$b" produce 80 40 || fail "produce 80..119"
all_c() { local i; for i in $(seq 80 119); do [ "$(got c "$i")" -ge 1 ] || return 1; done; }
wait_until 20 all_c || fail "consumption did not go on after the takeover"
[ "$(events "$dir/b.out")" = "$b_events" ] ||
  fail "ib saw a rebalance at the takeover: $(grep '^assign \|^revoke ' "$dir/b.out")"
kill -KILL "$pb" "$pc"
wait "$pb" "$pc" 2> /dev/null || true
stop_term "$pid"
echo "ok"
