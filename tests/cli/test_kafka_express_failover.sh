#!/usr/bin/env bash
# Express topics served by three `tarn serve --kafka-listen` nodes on etcd +
# S3 (radosgw), through failures (issue 15; docs/express.md "Serving through
# Kafka", docs/kafka.md "Express topics"). The deployment's express bucket set
# is three S3 prefixes (K = 3, W = 2); the topic xt (class express) has three
# partitions, each led by one node's express writer (rendezvous pick over the
# live nodes). confluent-kafka-python (librdkafka 2.0.2) produces numbered
# messages with acks=all, round robin over the partitions, and records which
# were acknowledged where; meanwhile:
#   1. the leader of partition 0 is killed with SIGKILL: its partitions go to
#      the survivors once its session expired (session_timeout_ms, 2000 here),
#      whose open gates fence and settle its epoch before their first append;
#      the time from the kill to the successor's first acknowledgement on
#      partition 0 is printed;
#   2. the killed node is started again under its node ID (its star): it wins
#      back its partitions, and the survivors hand them over through Finish
#      (the handover job), whose marks its gates consume;
#   3. a bucket outage: bucket c's endpoint is a TCP proxy on loopback (its own
#      endpoint= in its S3 URI) to radosgw; the proxy is killed (SIGKILL: its
#      connections break, new ones are refused) for 4 s, then started again on
#      the same port. With W = 2 of K = 3 the slots commit on a and b
#      meanwhile: the acknowledgements that landed during the outage are
#      counted and printed, and there must be some;
#   4. another node is drained (SIGTERM): it leaves the live list and every log
#      it leads leaves through Finish before it exits.
# Then everything is read back through a node: every acknowledged message is at
# its acknowledged partition and offset, no offset was acknowledged twice, the
# offsets of each partition are unique and increasing. The gates' verdicts the
# nodes log at exit show each handover: a dead predecessor settled (by a
# survivor, or by the restarted star itself) only for the killed node's
# partitions, every other takeover by a consumed mark (a Finish
# skipped on handover or drain makes its successor settle instead, and fails
# here; a gate bypassed reassigns acknowledged offsets, and fails above).
# TARN_TEST_SESSION_MS=15000 measures with etcd's default session timeout.
# Needs TARN_TEST_ETCD and TARN_TEST_S3_URI: skipped (77) without them, failed in CI.
. "$(dirname "$0")/lib.sh"
need_env TARN_TEST_ETCD TARN_TEST_S3_URI
need_tool kcat
py=/usr/bin/python3
$py -c 'import confluent_kafka' 2> /dev/null ||
  { echo "python3-confluent-kafka is needed (scripts/install-deps.sh)" >&2; exit 1; }
export TARN_HOME="$dir/home"
unique_run
session_ms=${TARN_TEST_SESSION_MS:-2000}
# messages: at most 300 s at 120/s (a bound: the test stops it), and 9 s more per second of session timeout
# above 2 s; the producer stops when told (the file stop), once the drain's
# successors have appended (their gates consumed the marks): under load the
# phases stretch, and a fixed count ran out before them
outage_s=4
export KXF_N=$((36000 + 1080 * (session_ms / 1000 - 2)))
export TARN_META="etcd://$TARN_TEST_ETCD?prefix=tarn-test/kxf-$run&session_timeout_ms=$session_ms"
export TARN_WAL="$TARN_TEST_S3_URI/kxf-$run/wal"
export TARN_COMPACTED="$TARN_TEST_S3_URI/kxf-$run/compacted"
x="$TARN_TEST_S3_URI/kxf-$run/express"
# bucket c reaches radosgw through a TCP proxy (tests/cli/tcp_proxy.py, killed
# for the outage): its S3 URI names its own endpoint
proxy_start() { # PORT (0: any): starts the proxy, sets proxy and proxy_port
  rm -f "$dir/proxy.port"
  $py "$TARN_SRC/tests/cli/tcp_proxy.py" "$dir/proxy.port" "$1" 2>> "$dir/proxy.err" &
  proxy=$!
  pids+=("$proxy")
  wait_until 10 test -s "$dir/proxy.port" || fail "the proxy did not start: $(cat "$dir/proxy.err")"
  proxy_port=$(cat "$dir/proxy.port")
}
proxy_start 0
"$TARN" init --express-bucket "$x/a@a" --express-bucket "$x/b@b" \
  --express-bucket "$x/c?endpoint=http://127.0.0.1:$proxy_port@c" \
  > /dev/null 2> "$dir/init.err" || fail "tarn init"
"$TARN" topic create xt --partitions 3 --config class=express > /dev/null 2> "$dir/topic.err" ||
  fail "topic create"

start() { # node ID: starts node ID (star node-ID), sets pid and kport
  serve_start "$dir/log.$1.$(date +%s%N)" --listen 127.0.0.1:0 --kafka-listen 127.0.0.1:0 \
    --kafka-node-id "$1" --no-compact --no-reclaim --no-wal-gc
}
declare -A npid nport hport
for i in 1 2 3; do
  start $i
  npid[$i]=$pid nport[$i]=$kport hport[$i]=$port
done
boot="127.0.0.1:${nport[1]},127.0.0.1:${nport[2]},127.0.0.1:${nport[3]}"
sleep 1.2 # the live list is read at most once a second

cat > "$dir/clients.py" << 'EOF2'
import os, sys, time
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
cmd, boot, d = sys.argv[1], sys.argv[2], sys.argv[3]
N, RATE = int(os.environ["KXF_N"]), 120
if cmd == "leader":  # the leader of partition 0
    md = AdminClient({"bootstrap.servers": boot, "log_level": 0}).list_topics("xt", timeout=10)
    print(md.topics["xt"].partitions[0].leader)
    with open(d + "/" + sys.argv[4], "w") as f:  # the leader map, partition:node
        print(" ".join("%d:%d" % (p.id, p.leader) for p in md.topics["xt"].partitions.values()),
              file=f)
elif cmd == "produce":
    out = open(d + "/acked", "w")
    errors = []
    def cb(err, msg):
        if err:
            errors.append(str(err))
        else:
            out.write("%d %d %s %.3f\n" % (msg.partition(), msg.offset(), msg.value().decode(),
                                           time.time()))
            out.flush()
    p = Producer({"bootstrap.servers": boot, "acks": "all", "linger.ms": 5,
                  "message.timeout.ms": 60000, "retry.backoff.ms": 100,
                  "topic.metadata.refresh.interval.ms": 500, "reconnect.backoff.max.ms": 500})
    t0 = time.time()
    for i in range(N):
        if os.path.exists(d + "/stop"):
            break
        p.produce("xt", value=b"v%d" % i, partition=i % 3, on_delivery=cb)
        while time.time() < t0 + (i + 1) / RATE:
            p.poll(0.002)
    left = p.flush(90)
    out.close()
    print("unflushed %d errors %d %s" % (left, len(errors), errors[:3]))
    sys.exit(1 if left or errors else 0)
EOF2
$py "$dir/clients.py" produce "$boot" "$dir" > "$dir/produce.out" 2> "$dir/produce.err" &
prod=$!
pids+=("$prod")
acks() { { wc -l < "$dir/acked"; } 2> /dev/null || echo 0; }
wait_acks() { # N: waits until N messages are acknowledged
  for _ in $(seq 600); do [ "$(acks)" -ge "$1" ] && return 0; sleep 0.05; done
  fail "$(acks) acknowledged, waited for $1: $(tail -5 "$dir/produce.err")"
}

wait_acks 300
k=$($py "$dir/clients.py" leader "$boot" "$dir" leaders.0 2> "$dir/leaders.err")
[ -n "${npid[$k]:-}" ] || fail "partition 0's leader is $k"
nk=$(tr ' ' '\n' < "$dir/leaders.0" | grep -c ":$k\$" || true)
echo "leaders (partition:node) $(cat "$dir/leaders.0"); killing node $k (leads $nk) at ${SECONDS} s"
kill -KILL "${npid[$k]}"
t_kill=$(date +%s.%N)
wait "${npid[$k]}" 2> /dev/null || true

wait_acks 900
# the same node ID is free once the killed node's registration (its session)
# ended: wait until a survivor's Metadata no longer lists it
# the first survivor (no `| head -1`: under pipefail the loop's second echo
# may hit a closed pipe, and the SIGPIPE ended this test silently in CI)
s1=$(for i in 1 2 3; do [ "$i" = "$k" ] || { echo $i; break; }; done)
gone() { ! timeout 10 kcat -b "127.0.0.1:${nport[$s1]}" -L 2> /dev/null | grepq "broker $k at"; }
wait_until 60 gone || fail "node $k is still registered"
echo "node $k gone from Metadata at ${SECONDS} s"
start "$k" # the same node ID, so the same star: it wins its partitions back
npid[$k]=$pid
nport[$k]=$kport
hport[$k]=$port
echo "node $k restarted at ${SECONDS} s"
# until its gates admitted every partition Metadata gives it (the survivors'
# Finishes landed and its gates consumed the marks): under load that takes
# longer than any fixed count of acknowledgements
boot="127.0.0.1:${nport[1]},127.0.0.1:${nport[2]},127.0.0.1:${nport[3]}" # the restart's port
won_back() {
  $py "$dir/clients.py" leader "$boot" "$dir" leaders.r > /dev/null 2> "$dir/leaders.err" || return 1
  local want have
  want=$(tr ' ' '\n' < "$dir/leaders.r" | grep -c ":$k\$" || true)
  have=$(curl -sf "http://127.0.0.1:${hport[$k]}/metrics" | grep '^tarn_express_gate_total{' |
    awk '{n += $2} END {print n + 0}')
  [ "$want" -gt 0 ] && [ "${have:-0}" -ge "$want" ]
}
for t in $(seq 61); do
  won_back && break
  [ "$t" = 61 ] && fail "node $k did not win back its partitions: $(cat "$dir/leaders.r")"
  sleep 1
done
wait_acks $(($(acks) + 150))
# the bucket outage: bucket c unreachable for outage_s seconds, then back on
# its port; the slots commit on a and b (W = 2) meanwhile
kill -KILL "$proxy"
wait "$proxy" 2> /dev/null || true
t_out0=$(date +%s.%N)
sleep "$outage_s"
t_out1=$(date +%s.%N)
proxy_start "$proxy_port"
n_out=$(awk -v a="$t_out0" -v b="$t_out1" '$4 >= a && $4 <= b' "$dir/acked" | wc -l)
echo "bucket outage (c, ${outage_s} s): $n_out acknowledged during it, at ${SECONDS} s"
[ "$n_out" -gt 0 ] || fail "no acknowledgement during the bucket outage"
wait_acks $(($(acks) + 120))
# the node to drain: one that leads a partition now (Metadata's leader map),
# other than the restarted one when another leads any; its logs leave
# through Finish, so the marks counted below grow by what it leads
$py "$dir/clients.py" leader "$boot" "$dir" leaders.1 > /dev/null 2> "$dir/leaders.err"
dr=$(tr ' ' '\n' < "$dir/leaders.1" | cut -d: -f2 | grep -v "^$k\$" | head -1 || true)
[ -n "$dr" ] || dr=$k
nd=$(tr ' ' '\n' < "$dir/leaders.1" | grep -c ":$dr\$" || true)
echo "leaders $(cat "$dir/leaders.1"); draining node $dr (leads $nd) at ${SECONDS} s"
stop_term "${npid[$dr]}"
grep -q 'express drained.*error=none' "$dir"/log."$dr".* || fail "node $dr: a Finish did not land"
wait_acks $(($(acks) + 150)) # 50 a partition: every successor has appended
touch "$dir/stop"
wait "$prod" || fail "producer: $(cat "$dir/produce.out") $(tail -5 "$dir/produce.err")"
echo "producer: $(cat "$dir/produce.out") at ${SECONDS} s"

# read back through a live node, until every acknowledged offset is indexed
live=$k
[ "$live" = "$dr" ] && live=$(for i in 1 2 3; do [ "$i" = "$dr" ] || { echo $i; break; }; done)
# until every acknowledged (partition, offset) is read: a partition this node
# does not lead is served from the index only, which its leader's absorb
# reaches within a pass; a count would be fooled by a retry's duplicates
unread() { # how many acknowledged offsets log_all lacks
  $py - "$dir" << 'EOF3'
import sys
d = sys.argv[1]
read = {tuple(l.split()[:2]) for l in open(d + "/log_all") if l.strip()}
print(sum(1 for l in open(d + "/acked") if l.strip() and tuple(l.split()[:2]) not in read))
EOF3
}
for _ in $(seq 40); do
  timeout 40 kcat -b "127.0.0.1:${nport[$live]}" -C -t xt -o beginning -e -q \
    -X fetch.wait.max.ms=50 -f '%p %o %s\n' > "$dir/log_all" 2> "$dir/kcat.err" ||
    fail "read back: $(tail -5 "$dir/kcat.err")"
  [ "$(unread)" = 0 ] && break
  sleep 0.5
done
for i in 1 2 3; do
  [ "$i" = "$dr" ] || stop_term "${npid[$i]}"
done

$py - "$dir" "$t_kill" "$nk" "$nd" << 'EOF2' || fail "check"
import glob, os, re, sys
from collections import Counter, defaultdict
d, t_kill, nk, nd = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
acked = [l.split() for l in open(d + "/acked") if l.strip()]
read = [l.split() for l in open(d + "/log_all") if l.strip()]
stored = {(p, o): v for p, o, v in read}
assert len(stored) == len(read), "an offset read twice"
last = defaultdict(lambda: -1)
for p, o, _ in read:
    assert int(o) > last[p], ("offsets not increasing", p, o, last[p])
    last[p] = int(o)
assert len(set((p, o) for p, o, _, _ in acked)) == len(acked), "an offset acknowledged twice"
lost = [(p, o, v, stored.get((p, o))) for p, o, v, _ in acked if stored.get((p, o)) != v]
# (partition, offset, acknowledged value, what the log holds there: None = not read)
assert not lost, ("acknowledged but not in the log there", len(lost), lost[:5],
                  "read ends", dict(last))
after = [float(t) for p, _, _, t in acked if p == "0" and float(t) > t_kill]
assert after, "no acknowledgement on partition 0 after the kill"
twice = sum(n - 1 for n in Counter(stored.values()).values())
# the gates' verdicts, from every node's "express writer closed" line
v = Counter()
for f in glob.glob(d + "/log.*"):
    for l in open(f, errors="replace"):
        if "express writer closed" in l:
            for k, n in re.findall(r"gate_(\w+)=(\d+)", l):
                v[k] += int(n)
print("acked %d, log %d records (stored twice by a retry: %d); gates: %s"
      % (len(acked), len(read), twice, dict(v)))
print("failover (kill -9 of partition 0's leader until its successor's first ack): %d ms"
      % ((min(after) - t_kill) * 1000))
# the killed node's logs are settled by their successors' gates (or found
# settled by a takeover job first); the restart's and the drain's handovers
# are Finishes whose marks the next gates consumed
# each log the killed node led is settled by a survivor's gate, or, when the
# restarted node wins it back before a survivor appended to it, by the
# restarted star's own gate (its old epoch superseded); the survivors hand
# back through Finish the logs they took, and the drained node its own
assert v["settled"] + v["restart"] == nk, ("logs settled, the killed node led %d" % nk, v)
assert v["marked"] >= v["settled"] + nd, ("the handovers were not by marks: %d + %d expected"
                                          % (v["settled"], nd), v)
EOF2
echo ok
