#!/usr/bin/env bash
# Secured servers for the TLS and authentication tests: tls.sh start|stop STATE_DIR
#
# Made at start, under STATE_DIR/tls/ (wiped first):
#   ca.pem, ca.key         a test CA (openssl), and other-ca.pem, a CA nobody uses
#   server.pem/.key        the servers' certificate (127.0.0.1 and localhost), by ca.pem
#   client.pem/.key        a client certificate by ca.pem (no CN: see make_pki)
#   root-client.pem/.key   etcdctl's certificate (CN root)
#   rogue.pem/.key         a client certificate by other-ca.pem (refused by etcd)
#   etcd-password          the tarn user's etcd password (mode 0600)
# Servers:
#   etcd with TLS, --client-cert-auth, --trusted-ca-file and `auth enable`
#   (users root and tarn; tarn has the role tarn with read/write on every key),
#   simple tokens with --auth-token-ttl 3, on 127.0.0.1:23796 (peer :23806);
#   a second radosgw on the cluster of scripts/servers.d/radosgw.sh
#   (STATE_DIR/radosgw/ceph.conf, or TARN_RGW_CONF), beast with ssl_endpoint
#   on 127.0.0.1:47443 only.
# Prints on stdout only export lines:
#   TARN_TEST_ETCD_TLS=127.0.0.1:23796  TARN_TEST_TLS_DIR=STATE_DIR/tls
#   TARN_TEST_S3_TLS_ENDPOINT=https://127.0.0.1:47443 (when radosgw runs)
# The test credentials are for servers that listen on loopback only.
set -euo pipefail
cmd=${1:-}
state=${2:-}
[ -n "$cmd" ] && [ -n "$state" ] || { echo "usage: tls.sh start|stop STATE_DIR" >&2; exit 2; }
dir=$state/tls
etcd_client=${TARN_ETCD_TLS_PORT:-23796}
etcd_peer=$((etcd_client + 10))
rgw_port=${TARN_RGW_TLS_PORT:-47443}
rgw_conf=${TARN_RGW_CONF:-$state/radosgw/ceph.conf}
ETCD=${ETCD:-$(command -v etcd || echo /usr/bin/etcd)}

log() { echo "tls: $*" >&2; }

stop_all() {
  [ -d "$dir" ] || return 0
  local f pid
  for f in "$dir"/*.pid; do
    [ -e "$f" ] || continue
    pid=$(cat "$f" 2>/dev/null || true)
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$f"
  done
}

# cert NAME CA SUBJECT EXT: a key and a certificate signed by CA
cert() {
  local name=$1 ca=$2 subj=$3 ext=$4
  openssl req -newkey rsa:2048 -nodes -keyout "$dir/$name.key" -subj "$subj" \
    -out "$dir/$name.csr" 2>/dev/null
  printf '%s\n' "$ext" > "$dir/$name.ext"
  openssl x509 -req -in "$dir/$name.csr" -CA "$dir/$ca.pem" -CAkey "$dir/$ca.key" \
    -CAcreateserial -days 2 -sha256 -extfile "$dir/$name.ext" -out "$dir/$name.pem" 2>/dev/null
  chmod 600 "$dir/$name.key"
}

make_pki() {
  for ca in ca other-ca; do
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$dir/$ca.key" -subj "/CN=tarn test $ca" \
      -days 2 -sha256 -out "$dir/$ca.pem" 2>/dev/null
  done
  cert server ca /CN=localhost "subjectAltName=IP:127.0.0.1,DNS:localhost
extendedKeyUsage=serverAuth,clientAuth"
  # etcd 3.4's JSON gateway refuses a client certificate with a CommonName when
  # auth is on ("CommonName ... against gateway will be ignored"): tarn's
  # certificates name no CN and tarn signs in with a password. etcdctl (gRPC)
  # signs in as root by the CN of its own certificate.
  cert client ca /O=tarn/OU=client "extendedKeyUsage=clientAuth"
  cert root-client ca /CN=root "extendedKeyUsage=clientAuth"
  cert rogue other-ca /O=tarn/OU=client "extendedKeyUsage=clientAuth"
  cat "$dir/server.pem" "$dir/server.key" > "$dir/server-bundle.pem"
  chmod 600 "$dir/server-bundle.pem"
}

start_etcd() {
  cat > "$dir/restart-etcd.sh" <<EOS
#!/bin/sh
# Restarts the TLS etcd on its data directory (a restart forgets every simple token).
nohup "$ETCD" --name tls --data-dir "$dir/etcd.data" \\
  --listen-client-urls https://127.0.0.1:$etcd_client --advertise-client-urls https://127.0.0.1:$etcd_client \\
  --listen-peer-urls http://127.0.0.1:$etcd_peer --initial-advertise-peer-urls http://127.0.0.1:$etcd_peer \\
  --initial-cluster tls=http://127.0.0.1:$etcd_peer --initial-cluster-state new \\
  --cert-file "$dir/server.pem" --key-file "$dir/server.key" \\
  --client-cert-auth --trusted-ca-file "$dir/ca.pem" --auth-token simple --auth-token-ttl 3 \\
  >>"$dir/etcd.log" 2>&1 &
echo \$! > "$dir/etcd.pid"
EOS
  sh "$dir/restart-etcd.sh"
}

ctl() {
  ETCDCTL_API=3 etcdctl --endpoints "https://127.0.0.1:$etcd_client" --cacert "$dir/ca.pem" \
    --cert "$dir/root-client.pem" --key "$dir/root-client.key" "$@"
}

case "$cmd" in
  stop) stop_all ;;
  start)
    for b in openssl etcdctl curl; do
      command -v "$b" >/dev/null || { log "$b not installed (TARN_WITH_SERVERS=1 scripts/install-deps.sh)"; exit 1; }
    done
    stop_all
    rm -rf "$dir"
    mkdir -p "$dir"
    chmod 700 "$dir"
    for p in $etcd_client $etcd_peer $rgw_port; do
      if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
        log "port $p is already in use"; exit 1
      fi
    done
    make_pki
    start_etcd
    for _ in $(seq 100); do ctl endpoint health >/dev/null 2>&1 && break; sleep 0.1; done
    ctl endpoint health >/dev/null 2>&1 || { log "etcd did not answer; see $dir/etcd.log"; exit 1; }
    # A password of random letters, in a file of the owner's only.
    (umask 077; head -c 24 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' > "$dir/etcd-password")
    root_pw=$(head -c 24 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')
    {
      ctl user add "root:$root_pw"
      ctl user add "tarn:$(cat "$dir/etcd-password")"
      ctl role add tarn
      ctl role grant-permission tarn --prefix=true readwrite ''
      ctl user grant-role tarn tarn
      ctl auth enable
    } >> "$dir/setup.log" 2>&1 || { log "etcd auth setup failed; see $dir/setup.log"; exit 1; }
    echo "export TARN_TEST_ETCD_TLS=127.0.0.1:$etcd_client"
    echo "export TARN_TEST_TLS_DIR=$dir"
    if [ -f "$rgw_conf" ] && command -v radosgw >/dev/null; then
      mkdir -p "$dir/rgw"
      # The cluster's client.rgw section holds the plain frontend: this
      # gateway's own options come on its command line.
      CEPH_CONF=$rgw_conf setsid radosgw -n client.rgwtls -f --rgw-data "$dir/rgw" \
        --log-file "$dir/rgw.log" --admin-socket "$dir/rgw.asok" \
        --rgw-frontends "beast ssl_endpoint=127.0.0.1:$rgw_port ssl_certificate=$dir/server.pem ssl_private_key=$dir/server.key" \
        </dev/null >>"$dir/rgw.out" 2>&1 &
      echo $! > "$dir/rgw.pid"
      for _ in $(seq 120); do
        curl -s -o /dev/null --cacert "$dir/ca.pem" "https://127.0.0.1:$rgw_port/" && break
        sleep 0.5
      done
      if curl -s -o /dev/null --cacert "$dir/ca.pem" "https://127.0.0.1:$rgw_port/"; then
        echo "export TARN_TEST_S3_TLS_ENDPOINT=https://127.0.0.1:$rgw_port"
      else
        log "the TLS radosgw did not answer; see $dir/rgw.log"; exit 1
      fi
    else
      log "no radosgw cluster at $rgw_conf: no TLS S3 endpoint"
    fi
    ;;
  *) echo "usage: tls.sh start|stop STATE_DIR" >&2; exit 2 ;;
esac
