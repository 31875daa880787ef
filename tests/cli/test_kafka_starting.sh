#!/usr/bin/env bash
# No request reaches a half-built Kafka node (issue 37: a Metadata request
# crashed a node while it started). The listener binds before the node joins
# the live list (port 0 is advertised as bound); until the node is whole
# (src/kafka/node.c sets ready), a request read is refused by closing its
# connection (src/kafka/kreq.c), and the client reconnects. Here the node's
# etcd answers through faultproxy.py, each 150 ms late, so the join takes a
# while; a client sends Metadata requests to the node's fixed port every few
# ms from before it starts. Asserted: the node lives, some requests met the
# starting node and were refused (the window was hit), and then Metadata is
# answered. Before the fix the node died with SIGSEGV in the registry.
# Needs TARN_TEST_ETCD: skipped (77) without it.
. "$(dirname "$0")/lib.sh"
need_env TARN_TEST_ETCD
py=/usr/bin/python3
unique_run
proxy_start "$TARN_TEST_ETCD"
export TARN_META="etcd://127.0.0.1:$pport?prefix=tarn-test/kstart-$run"
export TARN_WAL="file://$dir/wal" TARN_COMPACTED="file://$dir/compacted"
"$TARN" init > /dev/null
kp=$($py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat > "$dir/hammer.py" << 'EOF'
import socket, struct, sys, time
port, out = int(sys.argv[1]), sys.argv[2]
req = struct.pack(">hhih", 3, 1, 5, 0) + struct.pack(">i", -1)  # Metadata v1, all topics
closed = answered = 0
deadline = time.time() + 60
while time.time() < deadline and answered < 20:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as c:
            c.sendall(struct.pack(">i", len(req)) + req)
            head = c.recv(4)
            if len(head) < 4:
                closed += 1
            else:
                answered += 1
    except ConnectionRefusedError:
        pass  # not bound yet
    except (ConnectionResetError, BrokenPipeError, socket.timeout):
        closed += 1
    time.sleep(0.003)
open(out, "w").write("%d %d\n" % (closed, answered))
EOF
$py "$dir/hammer.py" "$kp" "$dir/counts" &
hammer=$!
pids+=("$hammer")
ctl slow ms=150 count=0 > /dev/null
serve_start "$dir/log" --listen 127.0.0.1:0 --kafka-listen "127.0.0.1:$kp" --no-compact --no-reclaim \
  --no-wal-gc
node=$pid
ctl clear > /dev/null
wait "$hammer" || fail "the client failed"
read -r closed answered < "$dir/counts"
kill -0 "$node" 2> /dev/null || fail "the node died while starting: $(tail -5 "$dir/log")"
[ "$answered" -ge 20 ] || fail "Metadata answered $answered times"
curl -sSf "http://127.0.0.1:$port/metrics" > "$dir/metrics" || fail "GET /metrics"
refused=$(awk '$1 == "tarn_kafka_requests_refused_starting_total" { print $2 }' "$dir/metrics")
[ "${refused:-0}" -ge 1 ] || fail "no request met the starting node (closed $closed): the window was missed"
echo "refused while starting: $refused; closed seen by the client: $closed; answered: $answered"
stop_term "$node"
echo ok
