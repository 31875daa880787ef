#!/usr/bin/env bash
# Issue 33, denial of service items 2 and 3 (docs/kafka.md "Limits"): hostile
# clients (tests/support/kafka_hostile.py, from 127.0.0.2-127.0.0.6) beside a
# well-behaved one (kcat on 127.0.0.1), with short deadlines so that the test
# stays short:
#   - oversized before login: 10 unauthenticated clients each announcing a
#     100 MiB request and sending 16 MiB of it: the node's peak RSS (VmHWM)
#     grows by less than 16 MiB (they are closed at the size prefix;
#     before the fix it grew by their 160 MiB)
#   - in-flight budget (no SASL, --kafka-max-inflight-bytes 4 MiB): 10
#     clients each sending 12 MiB of a 16 MiB request: one is read, the
#     others wait unread (tarn_kafka_budget_waits_total); peak RSS grows by
#     less than 40 MiB (before: 120 MiB)
#   - per-address limit (--kafka-max-connections-per-ip 20): of 40 idle
#     connections from one address 20 are closed at once
#   - login deadline (--kafka-auth-timeout-ms 1500): the idle connections
#     that were accepted are closed after 1.5 s, not before
#   - request-read deadline (--kafka-request-timeout-ms 1500): a client
#     trickling a byte every 0.2 s is closed after 1.5 s (before the fix each
#     byte reset the idle clock: never)
#   - HTTP: four clients trickling a request line do not keep /healthz from
#     answering
#   - meanwhile kcat (SASL PLAIN) produces and consumes
. "$(dirname "$0")/lib.sh"
require_tool kcat python3
hostile="$TARN_SRC/tests/support/kafka_hostile.py"
export TARN_HOME="$dir/home"
"$TARN" init > /dev/null
pw='Dos-S3cret-51b0'
printf '%s\n' "$pw" | "$TARN" kafka user add alice > "$dir/out" 2>&1 || fail "user add: $(cat "$dir/out")"

hwm() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status"; } # KiB
metric() { curl -s "http://127.0.0.1:$port/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
# a client that fails (the node refused it: it died?) fails the test with the node's log,
# sanitizer reports first (run in $(...) too: fail prints before the subshell exits)
hostile() {
  timeout 30 python3 "$hostile" "$@" --host 127.0.0.1 --port "$kport" || fail "kafka_hostile.py $1"
}
# the close times of "closed" in a JSON line: one per line, "null" when not closed
closes() { sed 's/.*"closed": \[\([^]]*\)\].*/\1/' <<< "$1" | tr ',' '\n' | tr -d ' '; }
k() {
  timeout 30 kcat -b "127.0.0.1:$kport" -X security.protocol=SASL_PLAINTEXT \
    -X sasl.mechanism=PLAIN -X sasl.username=alice -X sasl.password="$pw" "$@"
}

serve_start "$dir/log" --listen 127.0.0.1:0 --kafka-listen 0.0.0.0:0 --kafka-batch-ms 20 \
  --no-compact --no-reclaim --no-wal-gc --kafka-auto-create-topics --kafka-sasl plain \
  --kafka-max-connections-per-ip 20 --kafka-auth-timeout-ms 1500
echo warm | k -P -t dos 2> "$dir/err" || fail "produce: $(cat "$dir/err")"

# oversized before login
before=$(hwm "$pid")
out=$(hostile oversized --source 127.0.0.2 -n 10 --size $((100 << 20)) --send $((16 << 20)) --hold 1)
grown=$(($(hwm "$pid") - before))
echo "oversized before login: $out, peak RSS grew by $grown KiB"
[ "$grown" -lt $((16 << 10)) ] || fail "10 unauthenticated 100 MiB requests grew the node by $grown KiB"

# per-address limit and login deadline, a well-behaved client meanwhile
hostile idle --source 127.0.0.3 -n 40 --hold 5 > "$dir/idle.json" &
hpid=$!
sleep 0.5
printf 'm-1\nm-2\nm-3\n' | k -P -t dos 2> "$dir/err" || fail "produce beside idle clients: $(cat "$dir/err")"
k -C -X fetch.wait.max.ms=50 -e -t dos -o beginning > "$dir/got" 2> "$dir/err" ||
  fail "consume beside idle clients: $(cat "$dir/err")"
[ "$(cat "$dir/got")" = $'warm\nm-1\nm-2\nm-3' ] || fail "consumed: $(cat "$dir/got")"
wait "$hpid" || fail "the idle clients failed: $(cat "$dir/idle.json")"
closes "$(cat "$dir/idle.json")" > "$dir/idle"
echo "idle: $(tr '\n' ' ' < "$dir/idle")"
at_once=$(awk '$1 != "null" && $1 < 0.5' "$dir/idle" | wc -l)
[ "$at_once" -eq 20 ] || fail "per-address limit: $at_once of 40 closed at once, not 20: $(cat "$dir/idle.json")"
late=$(awk '$1 != "null" && $1 >= 1.0 && $1 < 4.5' "$dir/idle" | wc -l)
[ "$late" -eq 20 ] || fail "login deadline: $late of 20 closed after 1.5 s: $(cat "$dir/idle.json")"
stop_term "$pid"

# without SASL: the in-flight budget, the request-read deadline, HTTP
serve_start "$dir/log" --listen 127.0.0.1:0 --kafka-listen 0.0.0.0:0 --kafka-batch-ms 20 \
  --no-compact --no-reclaim --no-wal-gc --kafka-auto-create-topics \
  --kafka-max-inflight-bytes $((4 << 20)) --kafka-request-timeout-ms 1500 --kafka-idle-ms 60000
before=$(hwm "$pid")
out=$(hostile oversized --source 127.0.0.4 -n 10 --size $((16 << 20)) --send $((12 << 20)) --hold 1)
grown=$(($(hwm "$pid") - before))
waits=$(metric tarn_kafka_budget_waits_total)
echo "in-flight budget: $out, peak RSS grew by $grown KiB, $waits waits"
[ "$grown" -lt $((40 << 10)) ] || fail "10 requests of 16 MiB past a 4 MiB budget grew the node by $grown KiB"
[ "${waits:-0}" -gt 0 ] || fail "no connection waited for the budget"

out=$(hostile trickle --source 127.0.0.5 -n 4 --hold 4 --interval 0.2)
echo "trickle: $out"
closes "$out" > "$dir/trickle"
n=$(awk '$1 != "null" && $1 >= 1.0 && $1 < 4' "$dir/trickle" | wc -l)
[ "$n" -eq 4 ] || fail "request-read deadline: $n of 4 trickling clients closed after 1.5 s: $out"

out=$(timeout 30 python3 "$hostile" http --host 127.0.0.1 --port "$port" --source 127.0.0.6 -n 4 \
  --hold 3 --interval 0.5)
echo "http: $out"
grepq '"status": "HTTP/1.1 200 OK"' <<< "$out" || fail "/healthz beside 4 trickling clients: $out"

# the node still serves a client (the budget is free again)
echo after | timeout 30 kcat -b "127.0.0.1:$kport" -P -t dos2 2> "$dir/err" || fail "produce: $(cat "$dir/err")"
timeout 30 kcat -b "127.0.0.1:$kport" -C -X fetch.wait.max.ms=50 -e -t dos2 -o beginning > "$dir/got" \
  2> "$dir/err" || fail "consume: $(cat "$dir/err")"
[ "$(cat "$dir/got")" = after ] || fail "consumed: $(cat "$dir/got")"
stop_term "$pid"
echo PASS
