#!/usr/bin/env bash
# tarn serve: /healthz and /metrics over HTTP, structured logs, counters that
# move, a clean exit (status 0) on SIGTERM and SIGINT.
# Reproductions of issue #11 part 6 (they fail on 4d5a889): each /healthz made
# a metadata Get and two LISTs on the HTTP thread (now it answers from the
# health job's last check); connections were not bounded per client address
# (idle connections from one address beyond --http-max-per-ip are refused,
# and an idle one is cut after --http-timeout-s, while /healthz answers).
. "$(dirname "$0")/lib.sh"
export TARN_HOME="$dir/home"
"$TARN" init > /dev/null
"$TARN" stream create ns/events > /dev/null

# starts tarn serve with the given flags; sets pid and port
start() { serve_start "$dir/log" --listen 127.0.0.1:0 "$@"; }
# stops it with a signal and checks it exits 0 within 5 s
stop() {
  kill "-$1" "$pid"
  for _ in $(seq 100); do
    kill -0 "$pid" 2> /dev/null || break
    sleep 0.05
  done
  kill -0 "$pid" 2> /dev/null && fail "still running 5 s after SIG$1"
  set +e
  wait "$pid"; rc=$?
  set -e
  [ $rc -eq 0 ] || fail "exit status $rc after SIG$1"
}
metric() { # the value of one series in the scrape $1
  awk -v s="$2" '$1 == s { print $2 }' "$1"
}

start --compact-interval-ms 100 --compact-max-age-ms 0 --stats-interval-ms 100
code=$(curl -s -o "$dir/health" -w '%{http_code}' "http://127.0.0.1:$port/healthz")
[ "$code" = 200 ] || fail "healthz $code"
python3 -c 'import json,sys; h=json.load(open(sys.argv[1])); assert h["status"]=="ok" and h["meta"]=="ok", h' "$dir/health"
curl -sf "http://127.0.0.1:$port/metrics" > "$dir/m1"
grep -q '^# TYPE tarn_serve_up gauge$' "$dir/m1" || fail "no tarn_serve_up TYPE"
[ "$(metric "$dir/m1" tarn_serve_up)" = 1 ] || fail "tarn_serve_up"
grep -q '^# HELP tarn_objstore_requests_total ' "$dir/m1" || fail "objstore HELP"
# every line is HELP, TYPE or a sample
grep -Ev '^(# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .*|[a-zA-Z_:][a-zA-Z0-9_:]*(\{.*\})? [-+0-9.eInfa]+)$' "$dir/m1" \
  && fail "not exposition format"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/nothing")
[ "$code" = 404 ] || fail "404: $code"

# appends through the CLI; the node's counters move: its health job lists
# the roots, and it compacts what was appended (reads the WAL objects, writes
# Parquet files, installs the record)
lists() { metric "$1" 'tarn_objstore_requests_total{op="list",backend="file"}'; }
before=$(lists "$dir/m1")
[ -z "$(metric "$dir/m1" 'tarn_compaction_tasks_run_total{result="ok"}')" ] || fail "ran a task with nothing appended"
printf 'one\ntwo\nthree\n' | "$TARN" append ns/events --batch-ms 60000 --quiet
curl -sf "http://127.0.0.1:$port/healthz" > /dev/null
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$port/metrics" > "$dir/m2"
  [ -n "$(metric "$dir/m2" 'tarn_compaction_tasks_run_total{result="ok"}')" ] && break
  sleep 0.1
done
# the health job lists the roots every 5 s
for _ in $(seq 70); do
  after=$(lists "$dir/m2")
  [ "${after:-0}" -gt "${before:-0}" ] && break
  sleep 0.1
  curl -sf "http://127.0.0.1:$port/metrics" > "$dir/m2"
done
[ "${after:-0}" -gt "${before:-0}" ] || fail "list counter did not move: $before -> $after"
[ "$(metric "$dir/m2" 'tarn_compaction_tasks_run_total{result="ok"}')" -ge 1 ] || fail "no task ran"
[ "$(metric "$dir/m2" 'tarn_objstore_requests_total{op="get",backend="file"}')" -ge 1 ] || fail "no WAL read"
[ "$(metric "$dir/m2" 'tarn_objstore_requests_total{op="put",backend="file"}')" -ge 2 ] || fail "no file written"
grep -q '^tarn_meta_requests_total{op="cas",backend="sqlite"} ' "$dir/m2" || fail "no task CompareAndSet"
[ "$("$TARN" read ns/events)" = "$(printf 'one\ntwo\nthree')" ] || fail "read back"
stop TERM
grep -q 'INFO stopped' "$dir/log" || fail "no stopped line"

# /healthz answers from the health job's last check: 20 requests make no
# store call (the job itself checks every 5 s, so at most a few in this time)
start --no-compact --no-reclaim --no-wal-gc --http-timeout-s 2 --http-max-per-ip 4
curl -sf "http://127.0.0.1:$port/metrics" > "$dir/m1"
for _ in $(seq 20); do curl -sf "http://127.0.0.1:$port/healthz" > /dev/null || fail "healthz"; done
curl -sf "http://127.0.0.1:$port/metrics" > "$dir/m2"
gets() { metric "$1" 'tarn_meta_requests_total{op="get",backend="sqlite"}'; }
l1=$(lists "$dir/m1") l2=$(lists "$dir/m2") g1=$(gets "$dir/m1") g2=$(gets "$dir/m2")
[ $((${l2:-0} - ${l1:-0})) -le 6 ] || fail "20 /healthz made $((${l2:-0} - ${l1:-0})) LISTs"
[ $((${g2:-0} - ${g1:-0})) -le 3 ] || fail "20 /healthz made $((${g2:-0} - ${g1:-0})) metadata Gets"
# connection bounds: 12 idle connections from 127.0.0.2 (the whole of 127/8 is
# loopback): the first 4 are held, the rest refused at once; /healthz from
# 127.0.0.1 still answers at once; the held ones are cut after ~2 s idle
python3 - "$port" <<'PY' || fail "connection bounds"
import select, socket, subprocess, sys, time
port = int(sys.argv[1])
socks = []
for _ in range(12):
    s = socket.socket()
    s.bind(("127.0.0.2", 0))
    s.connect(("127.0.0.1", port))
    s.settimeout(6)
    socks.append(s)
t0 = time.monotonic()
out = subprocess.run(["curl", "-s", "-m", "2", "-o", "/dev/null", "-w", "%{http_code}",
                      "http://127.0.0.1:%d/healthz" % port], capture_output=True, text=True)
assert out.stdout == "200", ("healthz while 12 connections wait", out.stdout)
closed = {}
while len(closed) < len(socks) and time.monotonic() - t0 < 6:
    ready, _, _ = select.select([s for s in socks if s not in closed], [], [], 0.1)
    for s in ready:
        try:
            data = s.recv(1)
        except ConnectionResetError:
            data = b""
        assert data == b"", ("an idle connection got bytes", data)
        closed[s] = time.monotonic() - t0
closed = sorted(closed.values())
early = [t for t in closed if t < 1]
late = [t for t in closed if t >= 1]
assert len(early) == 8 and len(late) == 4, ("per-address limit", closed)
assert len(closed) == len(socks) and all(t < 5 for t in late), ("idle connections not cut", closed)
PY
stop TERM

# JSON logs; SIGINT stops it too
start --log-format json --no-compact
python3 - "$dir/log" <<'PY' || fail "json log lines"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert any(l["msg"] == "serving" and int(l["port"]) > 0 for l in lines), lines
assert all({"ts", "level", "msg"} <= set(l) for l in lines), lines
PY
# a second node cannot take the same port: exit 1, one error line
set +e
"$TARN" serve --listen "127.0.0.1:$port" 2> "$dir/err2"; rc=$?
set -e
[ $rc -eq 1 ] || fail "port taken exit $rc"
grep -q 'cannot start' "$dir/err2" || fail "port taken message"
stop INT

# a store that does not answer (an S3 endpoint nobody listens on): 503
AWS_ACCESS_KEY_ID=x AWS_SECRET_ACCESS_KEY=y AWS_REGION=us-east-1 \
  start --no-compact --no-reclaim --no-wal-gc \
  --wal 's3://nobucket/wal?endpoint=http://127.0.0.1:1&timeout_ms=500'
code=$(curl -s -m 10 -o "$dir/health" -w '%{http_code}' "http://127.0.0.1:$port/healthz")
[ "$code" = 503 ] || fail "healthz with an unreachable WAL root: $code $(cat "$dir/health")"
python3 -c 'import json,sys; h=json.load(open(sys.argv[1])); assert h["status"]=="unavailable" and h["meta"]=="ok" and h["wal"]!="ok", h' "$dir/health"
stop TERM

# usage errors exit 2; --help exits 0
set +e
"$TARN" serve --log-format xml 2> /dev/null; [ $? -eq 2 ] || fail "bad log format"
"$TARN" serve --listen nope 2> /dev/null; [ $? -eq 2 ] || fail "bad listen"
"$TARN" serve --compact-workers x 2> /dev/null; [ $? -eq 2 ] || fail "bad number"
TARN_HOME="$dir/none" "$TARN" serve 2> "$dir/err3"; [ $? -eq 1 ] || fail "no deployment"
set -e
grep -q "tarn init" "$dir/err3" || fail "no deployment message: $(cat "$dir/err3")"
"$TARN" serve --help | grep -- "--compact-workers" >/dev/null || fail "help"
echo ok
