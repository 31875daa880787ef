#!/usr/bin/env bash
# Until tarn serves transactions (issue 34), a transactional client is told so
# at once (issue 37): FindCoordinator for a transactional id answers
# TRANSACTIONAL_ID_AUTHORIZATION_FAILED (final), not a retriable error that
# made confluent-kafka's init_transactions() wait out its timeout
# (src/kafka/api_find_coordinator.c). Asserted with confluent-kafka
# (librdkafka): init_transactions(30 s) fails within 10 s with that error, and
# a plain producer on the same node goes on producing.
. "$(dirname "$0")/lib.sh"
py=/usr/bin/python3
$py -c 'import confluent_kafka' 2> /dev/null ||
  { echo "python3-confluent-kafka is needed (scripts/install-deps.sh)" >&2; exit 1; }
export TARN_HOME="$dir/home"
"$TARN" init > /dev/null
"$TARN" topic create tx > /dev/null
serve_start "$dir/log" --listen 127.0.0.1:0 --kafka-listen 127.0.0.1:0 --no-compact --no-reclaim \
  --no-wal-gc
node=$pid
cat > "$dir/t.py" << 'EOF'
import sys, time
from confluent_kafka import Producer, KafkaException
boot = sys.argv[1]
p = Producer({"bootstrap.servers": boot, "transactional.id": "tx-1"})
t0 = time.time()
try:
    p.init_transactions(30)
    sys.exit("init_transactions succeeded")
except KafkaException as e:
    took = time.time() - t0
    err = e.args[0]
    assert took < 10, "refused after %.1f s: %s" % (took, err)
    assert "TRANSACTIONAL_ID_AUTHORIZATION_FAILED" in err.name() or err.code() == 53, err
q = Producer({"bootstrap.servers": boot, "acks": "all"})
q.produce("tx", b"v")
assert q.flush(20) == 0
print("refused in %.1f s" % took)
EOF
timeout 60 $py "$dir/t.py" "127.0.0.1:$kport" > "$dir/out" 2>&1 || fail "$(cat "$dir/out")"
cat "$dir/out"
stop_term "$node"
echo ok
