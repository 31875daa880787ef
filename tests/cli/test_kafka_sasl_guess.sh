#!/usr/bin/env bash
# Issue 33 item 4 (docs/kafka.md "Security"): password guessing is limited and
# does not slow other users' logins. A guesser (tests/support/kafka_hostile.py
# guess, 16 threads from 127.0.0.3) tries wrong passwords of "victim", a user
# of 1,000,000 PBKDF2 iterations (the costliest hash), as fast as it is
# answered, while alice logs in again and again from 127.0.0.2:
#   - the guesser's attempts mostly come back throttled ("retry later", no
#     hash): the ones hashed stay within the limits (before the fix every
#     attempt ran the hash on a request worker: none throttled)
#   - alice's logins stay under 2 s each and their median within 10x her
#     unloaded median + 0.5 s (before the fix the guesses held the 16
#     request workers: a login waited seconds)
#   - a wrong password is answered after the failure delay
#     (--kafka-connection-failed-authentication-delay-ms, Kafka's
#     connection.failed.authentication.delay.ms), not at once
#   - tarn_kafka_auth_throttled_total counts the refusals
. "$(dirname "$0")/lib.sh"
require_tool python3
hostile="$TARN_SRC/tests/support/kafka_hostile.py"
export TARN_HOME="$dir/home"
"$TARN" init > /dev/null
pw='Guess-S3cret-77a1'
printf '%s\n' "$pw" | "$TARN" kafka user add alice > "$dir/out" 2>&1 || fail "user add: $(cat "$dir/out")"
printf '%s\n' 'Victim-S3cret-9' | "$TARN" kafka user add victim --iterations 1000000 > "$dir/out" 2>&1 ||
  fail "user add victim: $(cat "$dir/out")"

metric() { curl -s "http://127.0.0.1:$port/metrics" | awk -v m="$1" '$1 ~ "^"m {s += $2} END {print s + 0}'; }
hostile() { timeout 60 python3 "$hostile" "$@" --host 127.0.0.1 --port "$kport"; }
median() { python3 -c 'import json,sys,statistics; print(statistics.median(json.load(sys.stdin)["latencies"]))'; }
maxof() { python3 -c 'import json,sys; print(max(json.load(sys.stdin)["latencies"]))'; }
field() { python3 -c "import json,sys; print(json.load(sys.stdin)[\"$1\"])"; }

serve_start "$dir/log" --listen 127.0.0.1:0 --kafka-listen 0.0.0.0:0 --no-compact --no-reclaim \
  --no-wal-gc --kafka-sasl plain --kafka-connection-failed-authentication-delay-ms 300

# the failure delay: a wrong password is answered after 300 ms
out=$(hostile login --source 127.0.0.4 --user alice --password wrong --count 1)
echo "wrong password: $out"
[ "$(field failed <<< "$out")" = 1 ] || fail "a wrong password was taken: $out"
python3 -c "import sys; sys.exit(0 if $(maxof <<< "$out") >= 0.3 else 1)" ||
  fail "a wrong password was answered before the 300 ms delay: $out"

# alice unloaded
base=$(hostile login --source 127.0.0.2 --user alice --password "$pw" --count 5)
echo "unloaded: $base"
[ "$(field failed <<< "$base")" = 0 ] || fail "alice's logins failed: $base"

# the guesser at full speed, alice meanwhile
hostile guess --source 127.0.0.3 -n 16 --user victim --hold 8 > "$dir/guess.json" &
gpid=$!
sleep 1
loaded=$(hostile login --source 127.0.0.2 --user alice --password "$pw" --count 10)
wait "$gpid" || fail "the guesser failed: $(cat "$dir/guess.json")"
g=$(cat "$dir/guess.json")
echo "loaded: $loaded"
echo "guesser: $g"
[ "$(field failed <<< "$loaded")" = 0 ] || fail "alice's logins failed beside the guesser: $loaded"
bm=$(median <<< "$base") lm=$(median <<< "$loaded") lx=$(maxof <<< "$loaded")
python3 -c "import sys; sys.exit(0 if $lx < 2.0 and $lm < 10 * $bm + 0.5 else 1)" ||
  fail "alice's logins beside the guesser: median $lm s (unloaded $bm s), slowest $lx s"
# the limits: the pair's 10 and one per 2 s, one hash of the address at a
# time; 20 leaves room for a slow machine (before the fix: every answer hashed)
hashed=$(field hashed <<< "$g") throttled=$(field throttled <<< "$g")
[ "$hashed" -le 20 ] || fail "the guesser had $hashed passwords hashed in 8 s: $g"
[ "$throttled" -gt 0 ] || fail "no guess was throttled: $g"
t=$(metric tarn_kafka_auth_throttled_total)
[ "$t" -ge "$throttled" ] || fail "tarn_kafka_auth_throttled_total $t, the guesser saw $throttled"
stop_term "$pid"
echo PASS
