#!/usr/bin/env bash
# tarn_kafka_requests_total counts every request under Kafka's name of its API
# key and the version asked, also the ones the node refuses (issue 37,
# "Metrics"; src/kafka/kreq.c count, src/kafka/api.c tarn__kapi_name): a
# ElectLeaders v2 (an API tarn does not serve: it has no replicas) and a Fetch v12 (a version
# it does not serve) are counted as api="ElectLeaders",version="2" and
# api="Fetch",version="12", result "unsupported", where they were "unknown"
# before; an API key past Kafka's is "unknown"; a served request, ok.
. "$(dirname "$0")/lib.sh"
export TARN_HOME="$dir/home"
"$TARN" init > /dev/null
serve_start "$dir/log" --listen 127.0.0.1:0 --kafka-listen 127.0.0.1:0 --no-compact --no-reclaim \
  --no-wal-gc
node=$pid
# one request header v1 (key, version, correlation 1, client id "") and an
# empty body; the node closes the connection after an unsupported one
send() { # api-key version
  /usr/bin/python3 - "$kport" "$1" "$2" << 'PY' || fail "send $1 v$2"
import socket, struct, sys
port, key, ver = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
req = struct.pack(">hhih", key, ver, 1, 0) + (b"\0" * 4 if key == 18 else b"")
with socket.create_connection(("127.0.0.1", port), timeout=10) as c:
    c.sendall(struct.pack(">i", len(req)) + req)
    c.settimeout(10)
    while c.recv(4096):
        if key == 18:
            break
PY
}
send 43 2     # ElectLeaders v2 (no replicas: never served)
send 1 12     # Fetch v12 (0-11 are served)
send 999 0    # no Kafka API
send 18 0     # ApiVersions v0: served
curl -sSf "http://127.0.0.1:$port/metrics" > "$dir/metrics" || fail "GET /metrics"
has() { grep -q "^tarn_kafka_requests_total{$1} 1\$" "$dir/metrics" ||
  fail "no $1 counted once: $(grep requests_total "$dir/metrics")"; }
has 'api="ElectLeaders",result="unsupported",version="2"'
has 'api="Fetch",result="unsupported",version="12"'
has 'api="unknown",result="unsupported",version="0"'
has 'api="ApiVersions",result="ok",version="0"'
stop_term "$node"
echo ok
