#!/usr/bin/env bash
# The durability loop of issue 31: real `tarn append` and `tarn serve`
# processes on etcd + radosgw, every request through the fault-injecting proxy
# (tests/support/faultproxy.py: one per etcd member, one before radosgw), with
# a nemesis, then a checker. Each round:
#   - a fresh deployment (etcd prefix and S3 prefix of its own), stream ns/s
#     with 2 partitions; a writer per partition (`tarn append --json`, unique
#     lines fed at a few hundred a second) and one `tarn serve` (compaction);
#   - for SECONDS, every ~0.7 s one nemesis action: a proxy fault on a random
#     etcd member's proxy (answer lost with a reset or an orderly close,
#     "request timed out" then applied 1-3 requests later, a 503 burst, an
#     answer delayed past the client's 5 s timeout, a reset of a reused
#     connection, slow answers) or on radosgw's (503/429 bursts, a PUT's
#     answer lost, a delay), kill -9 of a writer (a new writer takes its
#     place) or of the serve node (restarted), and with --etcd-restarts a
#     kill -9 and restart of an etcd member of the 3-node cluster (the test
#     harness's restart-PORT.sh, at most once a round);
#   - then the faults are cleared, the writers' input ends, and the checker
#     runs per partition: tests/cli/check_acked.py (every acknowledged line
#     exactly once at its offset, nothing stored twice, nothing reported
#     failed stored) and `tarn fsck` (index-double among its faults).
# Prints one line per round and a summary line:
#   durability: ROUNDS rounds, A acknowledged, D duplicates, L lost, F failed-but-stored, X fsck faults
# Exit status 0 when every round was clean.
#
#   scripts/durability-loop.sh [--rounds N] [--seconds S] [--etcd-restarts] [--tarn PATH]
#                              [--no-serve] [--verbose] [--seed N]
#                              [--etcd-faults 'RULE;RULE...'] [--s3-faults 'RULE;...']
#
# To hunt a violation down: --no-serve keeps the RAW index records (no
# compaction: fsck's index-double then sees an entry indexed twice),
# --verbose keeps every proxy's request log (proxy.NAME.err in the work
# directory, which is kept when a round is not clean), --seed N repeats the
# nemesis' choices, and --etcd-faults / --s3-faults replace the fault lists
# (faultproxy.py rules, ';' between them; an empty list: none of that kind).
#
# Needs the shared servers (`source /tmp/servers.env`: TARN_TEST_ETCD_CLUSTER,
# TARN_TEST_S3_URI, AWS_*; TARN_TEST_ETCD_CLUSTER_DIR for --etcd-restarts).
# tests/cli/test_durability_faults.sh runs 2 short rounds of it in CI.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
rounds=1 seconds=20 restarts=0 serve=1 verbose=0 seed=
efaults_opt=- s3faults_opt=-
tarn=${TARN:-$here/build/release/tarn}
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift ;;
    --seconds) seconds=$2; shift ;;
    --etcd-restarts) restarts=1 ;;
    --tarn) tarn=$2; shift ;;
    --no-serve) serve=0 ;;
    --verbose) verbose=1 ;;
    --seed) seed=$2; shift ;;
    --etcd-faults) efaults_opt=$2; shift ;;
    --s3-faults) s3faults_opt=$2; shift ;;
    *) echo "usage: $0 [--rounds N] [--seconds S] [--etcd-restarts] [--tarn PATH] [--no-serve] [--verbose] [--seed N] [--etcd-faults L] [--s3-faults L]" >&2; exit 2 ;;
  esac
  shift
done
: "${TARN_TEST_ETCD_CLUSTER:?source /tmp/servers.env}" "${TARN_TEST_S3_URI:?}" "${AWS_ENDPOINT_URL:?}"
proxy=$here/tests/support/faultproxy.py
work=$(mktemp -d)
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill -KILL "$p" 2> /dev/null || true; done
  wait 2> /dev/null || true
  [ -n "${DURABILITY_KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT

# ---- proxies --------------------------------------------------------------------
IFS=, read -r -a members <<< "$TARN_TEST_ETCD_CLUSTER"
eports=() ectl=()
start_proxy() { # UPSTREAM NAME -> sets p_port, p_ctl
  python3 "$proxy" --upstream "$1" --ports "$work/ports.$2" $([ "$verbose" = 0 ] || echo --verbose) \
    2> "$work/proxy.$2.err" &
  pids+=($!)
  local i
  for i in $(seq 100); do [ -s "$work/ports.$2" ] && break; sleep 0.1; done
  read -r p_port p_ctl < "$work/ports.$2"
}
for i in "${!members[@]}"; do
  start_proxy "${members[$i]}" "etcd$i"
  eports+=("$p_port") ectl+=("$p_ctl")
done
s3up=${AWS_ENDPOINT_URL#http://}
start_proxy "${s3up%/}" s3
s3port=$p_port s3ctl=$p_ctl

ctl() { # CONTROL_PORT COMMAND...
  local port=$1 out
  shift
  exec 3<> "/dev/tcp/127.0.0.1/$port"
  echo "$*" >&3
  out=$(cat <&3)
  exec 3>&-
  [ "${out%% *}" != error: ] || { echo "proxy: $*: $out" >&2; return 1; }
}
clear_all() {
  local c
  for c in "${ectl[@]}" "$s3ctl"; do ctl "$c" clear; done
}

etcd_faults=("lose has=LESS reused=1 fin=1" "lose has=LESS reused=1" "lose path=/v3/kv/txn"
  "timeout has=LESS after=1" "timeout has=LESS after=2" "timeout has=LESS after=3"
  "timeout path=/v3/kv/txn after=2" "status code=503 body=etcd-timeout count=5"
  "delay ms=6000 path=/v3/kv/txn" "reset reused=1" "slow ms=150 count=20"
  "lose has=LESS reused=1 fin=1 refuse_ms=300" "drop path=/v3/kv/txn")
s3_faults=("status code=503 count=5" "status code=429 count=3" "lose method=PUT"
  "lose method=PUT fin=1" "delay ms=3000 method=PUT" "reset reused=1" "slow ms=200 count=10")

# ---- one round --------------------------------------------------------------------
gen() { # TAG STOPFILE: unique lines, a few hundred a second, until STOPFILE exists
  local n
  for ((n = 0; ; n++)); do
    echo "$1-$n"
    if ((n % 25 == 24)); then
      sleep 0.1
      [ ! -e "$2" ] || break
    fi
  done
}

total_acked=0 total_dup=0 total_lost=0 total_fbs=0 total_fsck=0 bad_rounds=0
for ((r = 1; r <= rounds; r++)); do
  rd=$work/r$r
  mkdir -p "$rd"
  run=$(date +%s%N)-$$-$r
  export TARN_HOME=$rd/home
  eps=$(printf '127.0.0.1:%s,' "${eports[@]}")
  export TARN_META="etcd://${eps%,}?prefix=tarn-test/durability-$run"
  export TARN_WAL="$TARN_TEST_S3_URI/durability-$run/wal"
  export TARN_COMPACTED="$TARN_TEST_S3_URI/durability-$run/compacted"
  export AWS_ENDPOINT_URL_REAL=$AWS_ENDPOINT_URL
  export AWS_ENDPOINT_URL="http://127.0.0.1:$s3port"
  "$tarn" init > /dev/null 2> "$rd/init.err"
  "$tarn" stream create ns/s --partitions 2 > /dev/null
  declare -A wpid=() wgen=()
  runs0=() runs1=()
  nw=0
  start_writer() { # PARTITION
    local p=$1 tag
    nw=$((nw + 1))
    tag="r$r-p$p-w$nw"
    gen "$tag" "$rd/stop" | tee "$rd/in.$nw" | "$tarn" append ns/s --partition "$p" --json \
      > "$rd/out.$nw" 2> "$rd/err.$nw" &
    wpid[$p]=$!
    pids+=($!)
    if [ "$p" = 0 ]; then runs0+=(--run "$rd/in.$nw" "$rd/out.$nw"); else runs1+=(--run "$rd/in.$nw" "$rd/out.$nw"); fi
  }
  spid=
  start_serve() {
    [ "$serve" = 1 ] || return 0
    "$tarn" serve --listen 127.0.0.1:0 --compact-interval-ms 200 --compact-max-age-ms 0 \
      --stats-interval-ms 1000 2>> "$rd/serve.err" &
    spid=$!
    pids+=($!)
  }
  start_writer 0
  start_writer 1
  start_serve
  restarted=0
  end=$((SECONDS + seconds))
  actions=()
  while [ $SECONDS -lt $end ]; do
    sleep 0.$((RANDOM % 5 + 5))
    a=$((RANDOM % 20))
    if [ $a -lt 9 ] && [ ${#etcd_faults[@]} -gt 0 ]; then
      m=$((RANDOM % ${#ectl[@]}))
      f=${etcd_faults[$((RANDOM % ${#etcd_faults[@]}))]}
      ctl "${ectl[$m]}" $f && actions+=("etcd$m:$f")
    elif [ $a -ge 9 ] && [ $a -lt 13 ] && [ ${#s3_faults[@]} -gt 0 ]; then
      f=${s3_faults[$((RANDOM % ${#s3_faults[@]}))]}
      ctl "$s3ctl" $f && actions+=("s3:$f")
    elif [ $a -ge 13 ] && [ $a -lt 17 ]; then
      p=$((RANDOM % 2))
      kill -KILL "${wpid[$p]}" 2> /dev/null || true
      wait "${wpid[$p]}" 2> /dev/null || true
      start_writer "$p"
      actions+=("kill writer p$p")
    elif [ $a -ge 17 ] && [ $a -lt 19 ] && [ "$serve" = 1 ]; then
      kill -KILL "$spid" 2> /dev/null || true
      wait "$spid" 2> /dev/null || true
      start_serve
      actions+=("kill serve")
    elif [ $a -ge 19 ] && [ "$restarts" = 1 ] && [ "$restarted" = 0 ] && [ -n "${TARN_TEST_ETCD_CLUSTER_DIR:-}" ]; then
      m=$((RANDOM % ${#members[@]}))
      mport=${members[$m]##*:}
      kill -KILL "$(cat "$TARN_TEST_ETCD_CLUSTER_DIR/member-$mport.pid")" 2> /dev/null || true
      sleep 2
      sh "$TARN_TEST_ETCD_CLUSTER_DIR/restart-$mport.sh" > /dev/null 2>&1
      restarted=1
      actions+=("restart etcd $mport")
    fi
  done
  clear_all
  # the writers' input ends: each drains and exits (a killed one's generator
  # ends on its broken pipe)
  touch "$rd/stop"
  for p in 0 1; do wait "${wpid[$p]}" 2> /dev/null || true; done
  # SIGTERM, and SIGKILL after 10 s: shutdown can wait for a reclaim pass
  # (issue 31 item 7, another helper's); the checker needs no clean stop
  if [ -n "$spid" ]; then
    kill -TERM "$spid" 2> /dev/null || true
    for _ in $(seq 100); do kill -0 "$spid" 2> /dev/null || break; sleep 0.1; done
    kill -KILL "$spid" 2> /dev/null || true
    wait "$spid" 2> /dev/null || true
  fi
  export AWS_ENDPOINT_URL=$AWS_ENDPOINT_URL_REAL
  clean=1
  for p in 0 1; do
    "$tarn" read ns/s --partition "$p" --format json > "$rd/read.$p" 2> "$rd/read.$p.err" || clean=0
    if [ "$p" = 0 ]; then runs=("${runs0[@]}"); else runs=("${runs1[@]}"); fi
    python3 "$here/tests/cli/check_acked.py" --read "$rd/read.$p" "${runs[@]}" > "$rd/check.$p" || clean=0
  done
  # the counts, from check_acked's summary and violation lines
  read -r acked dup lost fbs < <(python3 - "$rd"/check.* <<'PY'
import re, sys
t = "".join(open(f).read() for f in sys.argv[1:])
def n(pat):
    return sum(int(x) for x in re.findall(pat, t))
print(n(r"(\d+) acknowledged,"), n(r"stored twice: (\d+)"),
      n(r"acknowledged, not stored: (\d+)") + n(r"acknowledged, another line stored: (\d+)"),
      n(r"reported failed, stored: (\d+)"))
PY
  )
  nf=0
  "$tarn" fsck --json --no-read > "$rd/fsck.json" 2> "$rd/fsck.err" || true
  nf=$(python3 -c 'import json,sys
try: print(len(json.load(open(sys.argv[1]))["faults"]))
except Exception: print(1)' "$rd/fsck.json")
  [ "$nf" = 0 ] || clean=0
  total_acked=$((total_acked + acked)) total_dup=$((total_dup + dup)) total_lost=$((total_lost + lost))
  total_fbs=$((total_fbs + fbs)) total_fsck=$((total_fsck + nf))
  [ "$clean" = 1 ] || bad_rounds=$((bad_rounds + 1))
  echo "round $r: $acked acknowledged, $dup duplicates, $lost lost, $fbs failed-but-stored, $nf fsck faults, ${#actions[@]} nemesis actions$([ "$clean" = 1 ] || echo " NOT CLEAN ($rd)")"
  if [ "$clean" != 1 ]; then
    cat "$rd"/check.* >&2
    printf '  action: %s\n' "${actions[@]}" >&2
    head -c 2000 "$rd/fsck.json" >&2
    export DURABILITY_KEEP=1
  fi
  unset wpid wgen
done
echo "durability: $rounds rounds, $total_acked acknowledged, $total_dup duplicates, $total_lost lost, $total_fbs failed-but-stored, $total_fsck fsck faults"
[ "$bad_rounds" = 0 ]
