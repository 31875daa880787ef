#!/usr/bin/env bash
# etcd on loopback for the metadata-store tests: etcd.sh start|stop STATE_DIR
#
# Starts a single-node etcd (client 127.0.0.1:23790, peer :23800) and a
# 3-node cluster (clients :23791-23793, peers :23801-23803), each with a fresh
# data directory under STATE_DIR/etcd/, waits until every member answers, and
# prints on stdout only:
#   export TARN_TEST_ETCD=127.0.0.1:23790
#   export TARN_TEST_ETCD_CLUSTER=127.0.0.1:23791,127.0.0.1:23792,127.0.0.1:23793
#   export TARN_TEST_ETCD_CLUSTER_DIR=STATE_DIR/etcd
# STATE_DIR/etcd/ holds the logs (*.log), a pid file per process
# (single.pid, member-<client port>.pid) and restart-<client port>.sh, which
# restarts a killed cluster member (tests kill the leader). Anything a previous
# (crashed) run left behind is stopped and wiped first.
set -euo pipefail
cmd=${1:-}
state=${2:-}
[ -n "$cmd" ] && [ -n "$state" ] || { echo "usage: etcd.sh start|stop STATE_DIR" >&2; exit 2; }
dir=$state/etcd
ETCD=${ETCD:-$(command -v etcd || echo /usr/bin/etcd)}
single_client=23790 single_peer=23800
cluster_clients=(23791 23792 23793) cluster_peers=(23801 23802 23803)

stop_all() {
  [ -d "$dir" ] || return 0
  local f pid
  for f in "$dir"/*.pid; do
    [ -e "$f" ] || continue
    pid=$(cat "$f" 2>/dev/null || true)
    # Only kill what is still an etcd we started.
    if [ -n "$pid" ] && grep -q etcd "/proc/$pid/cmdline" 2>/dev/null; then
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$f"
  done
}

# start_member NAME CLIENT PEER INITIAL_CLUSTER PIDFILE
write_member() {
  local name=$1 client=$2 peer=$3 initial=$4 pidfile=$5
  cat > "$dir/restart-$client.sh" <<EOS
#!/bin/sh
# Restarts member $name (it rejoins with its existing data directory).
nohup "$ETCD" --name $name --data-dir "$dir/$name.data" \\
  --listen-client-urls http://127.0.0.1:$client --advertise-client-urls http://127.0.0.1:$client \\
  --listen-peer-urls http://127.0.0.1:$peer --initial-advertise-peer-urls http://127.0.0.1:$peer \\
  --initial-cluster $initial --initial-cluster-state new --initial-cluster-token tarn-${initial//[^0-9]/} \\
  --heartbeat-interval 50 --election-timeout 500 >>"$dir/$name.log" 2>&1 &
echo \$! > "$pidfile"
EOS
  sh "$dir/restart-$client.sh"
}

wait_up() {
  local port=$1 i
  for i in $(seq 100); do
    if curl -s -m 0.5 -X POST "http://127.0.0.1:$port/v3/kv/range" -d '{"key":"AA=="}' 2>/dev/null \
        | grep -q '"header"'; then
      return 0
    fi
    sleep 0.1
  done
  echo "etcd on port $port did not answer; see $dir/*.log" >&2
  return 1
}

case "$cmd" in
  start)
    [ -x "$ETCD" ] || { echo "etcd not installed (apt-get install -y etcd-server etcd-client)" >&2; exit 1; }
    stop_all
    rm -rf "$dir"
    mkdir -p "$dir"
    # An etcd of another STATE_DIR on our ports would answer for ours.
    for p in $single_client "${cluster_clients[@]}" $single_peer "${cluster_peers[@]}"; do
      if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
        echo "etcd.sh: port $p is already in use (an etcd of another STATE_DIR?)" >&2
        exit 1
      fi
    done
    write_member single $single_client $single_peer \
      "single=http://127.0.0.1:$single_peer" "$dir/single.pid"
    initial=""
    for i in 0 1 2; do
      initial+="${initial:+,}m$i=http://127.0.0.1:${cluster_peers[$i]}"
    done
    for i in 0 1 2; do
      write_member "m$i" "${cluster_clients[$i]}" "${cluster_peers[$i]}" "$initial" \
        "$dir/member-${cluster_clients[$i]}.pid"
    done
    wait_up $single_client
    for p in "${cluster_clients[@]}"; do wait_up "$p"; done
    echo "export TARN_TEST_ETCD=127.0.0.1:$single_client"
    echo "export TARN_TEST_ETCD_CLUSTER=127.0.0.1:${cluster_clients[0]},127.0.0.1:${cluster_clients[1]},127.0.0.1:${cluster_clients[2]}"
    echo "export TARN_TEST_ETCD_CLUSTER_DIR=$dir"
    ;;
  stop)
    stop_all ;;
  *) echo "usage: etcd.sh start|stop STATE_DIR" >&2; exit 2 ;;
esac
