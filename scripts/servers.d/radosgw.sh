#!/usr/bin/env bash
# Ceph radosgw on loopback, an S3 server that checks SigV4 signatures and honours
# If-None-Match: * -- for the s3:// object-store tests.
#
#   radosgw.sh start STATE_DIR   prints `export ...` lines (and nothing else) on stdout
#   radosgw.sh stop STATE_DIR    stops rgw, osd and mon by PID
#
# One monitor, one memstore OSD and one radosgw, all state and logs under
# STATE_DIR/radosgw/ (wiped on start, so a crashed earlier run does not matter).
# Fixed ports, chosen high and away from common services:
#   TARN_RGW_MON_PORT (default 46789): ceph-mon, msgr v1
#   TARN_RGW_PORT     (default 47480): radosgw's S3 endpoint (beast)
set -euo pipefail
cmd=${1:-}
state=${2:-}
[ -n "$cmd" ] && [ -n "$state" ] || { echo "usage: radosgw.sh start|stop STATE_DIR" >&2; exit 2; }
dir=$state/radosgw
mon_port=${TARN_RGW_MON_PORT:-46789}
rgw_port=${TARN_RGW_PORT:-47480}
# Test-only credentials for a server that listens on loopback only.
access_key=TARNTESTACCESSKEY000
secret_key=tarnTestSecretKey0000000000000000000000
bucket=tarn-test
region=us-east-1

log() { echo "radosgw: $*" >&2; }

stop_all() {
  for p in rgw osd mon; do
    f=$dir/$p.pid
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
      kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$f"
  done
}

wait_for() { # wait_for SECONDS WHAT COMMAND...
  local secs=$1 what=$2; shift 2
  local end=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $end ]; then log "timed out waiting for $what (logs in $dir)"; return 1; fi
    sleep 0.5
  done
}

case "$cmd" in
stop)
  stop_all
  ;;
start)
  for b in ceph-mon ceph-osd radosgw radosgw-admin monmaptool ceph uuidgen curl; do
    command -v "$b" >/dev/null || { log "$b not installed (TARN_WITH_SERVERS=1 scripts/install-deps.sh)"; exit 1; }
  done
  stop_all
  rm -rf "$dir"
  mkdir -p "$dir"/mon "$dir"/osd "$dir"/run "$dir"/log
  fsid=$(uuidgen)
  conf=$dir/ceph.conf
  cat >"$conf" <<CONF
[global]
fsid = $fsid
mon host = v1:127.0.0.1:$mon_port
auth cluster required = none
auth service required = none
auth client required = none
auth allow insecure global id reclaim = true
ms bind msgr2 = false
osd objectstore = memstore
memstore device bytes = 1073741824
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
mon allow pool size one = true
mon warn on pool no redundancy = false
osd crush chooseleaf type = 0
# The OSD's own start-up commands to the monitor (set its device class, move it
# in the CRUSH map) race the monitor map: sent before the map arrives they carry
# a zero fsid, the monitor answers "wrong fsid" and the OSD exits. On a loaded
# machine that race was lost on every attempt, so the OSD never runs them: it
# is placed in the CRUSH map by the admin CLI below, which waits for the map.
osd class update on start = false
osd crush update on start = false
run dir = $dir/run
log file = $dir/log/\$name.log
admin socket = $dir/run/\$name.asok
mon data = $dir/mon/\$name
osd data = $dir/osd/\$name
keyring = $dir/keyring
[client.rgw]
rgw frontends = beast endpoint=127.0.0.1:$rgw_port
rgw data = $dir/rgw
rgw dns name = localhost
rgw enable usage log = false
CONF
  export CEPH_CONF=$conf
  monmaptool --create --add a "v1:127.0.0.1:$mon_port" --fsid "$fsid" "$dir/monmap" >"$dir/log/setup.log" 2>&1
  ceph-mon --mkfs -i a --monmap "$dir/monmap" >>"$dir/log/setup.log" 2>&1
  setsid ceph-mon -f -i a </dev/null >>"$dir/log/mon.out" 2>&1 &
  echo $! >"$dir/mon.pid"
  wait_for 60 "ceph-mon" timeout 5 ceph health
  # An OSD that does not come up (a slow machine) is removed and made again.
  osd_up=0
  for attempt in 1 2 3; do
    [ $attempt = 1 ] || sleep $((3 * attempt))
    osd_uuid=$(uuidgen)
    osd_id=$(timeout 30 ceph osd create "$osd_uuid" 2>>"$dir/log/setup.log") || continue
    timeout 30 ceph osd crush add "osd.$osd_id" 1.0 host=localhost root=default \
      >>"$dir/log/setup.log" 2>&1 || continue
    mkdir -p "$dir/osd/osd.$osd_id"
    ceph-osd -i "$osd_id" --mkfs --osd-uuid "$osd_uuid" >>"$dir/log/setup.log" 2>&1
    setsid ceph-osd -f -i "$osd_id" </dev/null >>"$dir/log/osd.out" 2>&1 &
    echo $! >"$dir/osd.pid"
    if wait_for 45 "the OSD (attempt $attempt)" bash -c "timeout 5 ceph osd stat | grep -q '1 up'"; then
      osd_up=1
      break
    fi
    pid=$(cat "$dir/osd.pid")
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$dir/osd.pid"
    timeout 30 ceph osd rm "$osd_id" >>"$dir/log/setup.log" 2>&1 || true
    rm -rf "$dir/osd/osd.$osd_id"
  done
  [ $osd_up = 1 ] || { log "the OSD did not come up (logs in $dir)"; exit 1; }
  mkdir -p "$dir/rgw"
  setsid radosgw -n client.rgw -f </dev/null >>"$dir/log/rgw.out" 2>&1 &
  echo $! >"$dir/rgw.pid"
  wait_for 90 "radosgw" curl -sf -o /dev/null "http://127.0.0.1:$rgw_port/"
  wait_for 60 "the rgw user" timeout 20 radosgw-admin user create --uid=tarn --display-name=tarn \
    --access-key="$access_key" --secret-key="$secret_key"
  # The bucket, created with curl's SigV4 (no query string here, so curl 7.88's
  # uncanonicalised query is not a problem).
  wait_for 60 "the bucket" curl -sf -o /dev/null -X PUT --aws-sigv4 "aws:amz:$region:s3" \
    --user "$access_key:$secret_key" -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" \
    "http://127.0.0.1:$rgw_port/$bucket"
  log "up on 127.0.0.1:$rgw_port (mon $mon_port), bucket $bucket"
  cat <<OUT
export TARN_TEST_S3_URI=s3://$bucket/tarn
export AWS_ENDPOINT_URL=http://127.0.0.1:$rgw_port
export AWS_REGION=$region
export AWS_ACCESS_KEY_ID=$access_key
export AWS_SECRET_ACCESS_KEY=$secret_key
OUT
  ;;
*)
  echo "usage: radosgw.sh start|stop STATE_DIR" >&2; exit 2 ;;
esac
