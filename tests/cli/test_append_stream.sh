#!/usr/bin/env bash
# tarn append as a streaming producer (issue #19), on a one-directory (sqlite: + file://)
# deployment. Reproductions, each of which failed before append streamed (it printed every
# outcome only at the end of its input):
#   1. records fed slowly through a pipe are acknowledged, in order, before the input ends;
#   2. a producer killed by SIGKILL mid-stream printed offsets that all read back with their
#      records;
#   3. SIGTERM stops reading, the records read are flushed and printed, exit 0;
#   4. a record whose object write failed is reported on stderr with its line, stdout says
#      'failed' in its place, the later ones are appended, exit 1;
#   5. with the metadata store stuck, SIGTERM waits --drain-timeout-ms and reports the
#      outstanding records 'unknown' with their lines (exit 1); a second SIGTERM ends the
#      process at once, by the signal;
#   6. with the metadata store stuck before the log is open, SIGTERM ends the process at once,
#      by the signal (before, the signal stayed blocked until the open returned: with the
#      lock held by a stopped process, `timeout 60 tarn append` waited forever in CI).
. "$(dirname "$0")/lib.sh"
export TARN_HOME="$dir/home"
"$TARN" init > /dev/null
# --log L reaches only a stream's log (LS-087): logs 1..6 are this stream's partitions
"$TARN" stream create t/s --partitions 6 > /dev/null
[ "$("$TARN" offsets t/s --json | jq -c '[.partitions[].log_id]')" = '[1,2,3,4,5,6]' ] ||
  fail "logs 1..6 are not t/s's partitions"
# waits up to 20 s until file $1 has at least $2 lines
wait_lines() {
  for _ in $(seq 400); do
    [ -f "$1" ] && [ "$(wc -l < "$1")" -ge "$2" ] && return 0
    sleep 0.05
  done
  return 1
}
ms() { echo $(( $(date +%s%N) / 1000000 )); }

# 1. Slowly, through a pipe both ways: each record's offset appears while the input is
# still open (the next record is only written once the previous one was acknowledged).
mkfifo "$dir/in1"
"$TARN" append --log 1 --batch-ms 20 < "$dir/in1" > >(cat > "$dir/out1") 2> "$dir/err1" &
pid=$!; pids+=("$pid")
exec 3> "$dir/in1"
for i in 0 1 2 3 4; do
  echo "slow-$i" >&3
  wait_lines "$dir/out1" $((i + 1)) || fail "record $i not acknowledged before the input ended"
done
exec 3>&-
wait "$pid" || fail "append exit $?"
wait_lines "$dir/out1" 5
[ "$(cat "$dir/out1")" = "$(printf '0\n1\n2\n3\n4')" ] || fail "offsets out of order"
[ "$("$TARN" read --log 1)" = "$(printf 'slow-0\nslow-1\nslow-2\nslow-3\nslow-4')" ] ||
  fail "read back"

# 2. SIGKILL mid-stream: every offset printed is durable and holds its record.
mkfifo "$dir/in2"
"$TARN" append --log 2 --batch-ms 10 < "$dir/in2" > "$dir/out2" 2> "$dir/err2" &
pid=$!; pids+=("$pid")
exec 4> "$dir/in2"
for i in $(seq 0 59); do echo "rec-$i" >&4; sleep 0.01; done
wait_lines "$dir/out2" 20 || fail "no acknowledgements before the kill"
kill -9 "$pid"
wait "$pid" 2> /dev/null && fail "the producer was not killed"
exec 4>&-
n=$(wc -l < "$dir/out2")
j=0
while read -r off; do
  [[ "$off" =~ ^[0-9]+$ ]] || fail "line $j is not an offset: $off"
  [ "$("$TARN" read --log 2 --from "$off" --count 1)" = "rec-$j" ] ||
    fail "offset $off printed for record $j does not hold it"
  j=$((j + 1))
done < "$dir/out2"
echo "killed after $n acknowledgements, all read back"

# 3. SIGTERM: with one record in flight at most, record k+1 being read seals record k (so
# two acknowledgements mean the third was read); the third waits in the 60 s window until
# SIGTERM flushes it.
mkfifo "$dir/in3"
"$TARN" append --log 3 --batch-ms 60000 --max-in-flight-records 1 < "$dir/in3" \
  > "$dir/out3" 2> "$dir/err3" &
pid=$!; pids+=("$pid")
exec 5> "$dir/in3"
printf 'a\nb\nc\n' >&5
wait_lines "$dir/out3" 2 || fail "SIGTERM: first records not acknowledged"
t0=$(ms)
kill -TERM "$pid"
rc=0; wait "$pid" || rc=$?
exec 5>&-
[ "$rc" = 0 ] || fail "SIGTERM after a clean drain: exit $rc"
[ $(( $(ms) - t0 )) -lt 10000 ] || fail "SIGTERM waited out the batch window"
[ "$(cat "$dir/out3")" = "$(printf '0\n1\n2')" ] || fail "SIGTERM: outcomes"
grep -q "stopped by SIGTERM after 3 records" "$dir/err3" || fail "SIGTERM message"
[ "$("$TARN" read --log 3)" = "$(printf 'a\nb\nc')" ] || fail "SIGTERM: read back"

# 4. A failed object write: every WAL prefix directory ({pp}/, LS-008) is made a plain file
# while record 1 waits in the open batch, so its object cannot be written.
wal="$TARN_HOME/wal"
mkfifo "$dir/in4"
"$TARN" append --log 4 --batch-ms 60000 --max-in-flight-records 1 < "$dir/in4" \
  > "$dir/out4" 2> "$dir/err4" &
pid=$!; pids+=("$pid")
exec 6> "$dir/in4"
printf 'y0\ny1\n' >&6
wait_lines "$dir/out4" 1 || fail "failure: first record not acknowledged"
mkdir "$dir/walsave"
mv "$wal"/* "$dir/walsave"/
for pp in $(printf '%02x ' $(seq 0 255)); do : > "$wal/$pp"; done
printf 'y2\n' >&6 # seals y1, whose object write fails
wait_lines "$dir/out4" 2 || fail "failure: no outcome for record 1"
rm -f "$wal"/*
mv "$dir/walsave"/* "$wal"/
exec 6>&- # y2 is written at the end of the input
rc=0; wait "$pid" || rc=$?
[ "$rc" = 1 ] || fail "failed record: exit $rc"
[ "$(sed -n 2p "$dir/out4")" = failed ] || fail "stdout lacks 'failed' for record 1"
[ "$(wc -l < "$dir/out4")" = 3 ] && [[ "$(sed -n 3p "$dir/out4")" =~ ^[0-9]+$ ]] ||
  fail "the record after the failed one"
grep -q "^tarn: append: record 1 (line 2): failed: .*writing WAL object" "$dir/err4" ||
  fail "stderr lacks record 1's line"
[ "$(grep -c "^tarn: append: record" "$dir/err4")" = 1 ] || fail "other records reported"
[ "$("$TARN" read --log 4)" = "$(printf 'y0\ny2')" ] || fail "failure: read back"

# 4c. A WAL root that refuses every write: the first failed record is reported at once,
# the rest of the run of records failed alike in one line (issue 33: one line a record,
# 5,001 lines for 5,000 records); stdout still has a line a record. One batch (the
# input's end seals it): each batch's message names its own object, so a batch is a run.
mv "$wal"/* "$dir/walsave"/
for pp in $(printf '%02x ' $(seq 0 255)); do : > "$wal/$pp"; done
rc=0; seq 500 | "$TARN" append --log 4 --batch-ms 60000 > "$dir/out4c" 2> "$dir/err4c" || rc=$?
rm -f "$wal"/*
mv "$dir/walsave"/* "$wal"/
[ "$rc" = 1 ] || fail "refusing root: exit $rc"
[ "$(grep -c '^failed$' "$dir/out4c")" = 500 ] || fail "refusing root: stdout $(head -3 "$dir/out4c")"
grep -q "^tarn: append: record 0 (line 1): failed: .*writing WAL object" "$dir/err4c" ||
  fail "refusing root: no line for record 0: $(head -3 "$dir/err4c")"
grep -q "^tarn: append: records 1-499 (lines 2-500): failed, as record 0$" "$dir/err4c" ||
  fail "refusing root: no line for the run: $(head -5 "$dir/err4c")"
[ "$(wc -l < "$dir/err4c")" = 3 ] || fail "refusing root: $(wc -l < "$dir/err4c") lines on stderr"

# 4b. A dropped stream's log is refused before anything is read (LS-087): exit 1, one
# message, nothing on stdout.
"$TARN" stream create ns/gone > /dev/null
gone=$("$TARN" offsets ns/gone --json | jq .partitions[0].log_id)
"$TARN" stream drop ns/gone > /dev/null
rc=0; printf 'g0\ng1\n' | "$TARN" append --log "$gone" > "$dir/out4b" 2> "$dir/err4b" || rc=$?
[ "$rc" = 1 ] || fail "dropped: exit $rc"
[ ! -s "$dir/out4b" ] || fail "dropped: stdout $(cat "$dir/out4b")"
[ "$(grep -c "belongs to no stream" "$dir/err4b")" = 1 ] || fail "dropped: stderr $(cat "$dir/err4b")"

# 5. A stuck metadata store: another process holds the SQLite write lock, so the put of
# the record SIGTERM flushes waits (busy timeout 30 s).
lock_meta() { # holds the lock for 30 s; prints 'locked' once it has it
  python3 -c '
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=10)
c.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(30)' "$TARN_HOME/meta.db" > "$dir/locked$1" &
  lpid=$!; pids+=("$lpid")
  wait_lines "$dir/locked$1" 1 || fail "could not lock the metadata store"
}
for round in drain second; do
  mkfifo "$dir/in5$round"
  timeout=500 log=5
  [ "$round" = second ] && timeout=60000 log=6 # log 5's lease stays with the dead session
  "$TARN" append --log $log --batch-ms 60000 --max-in-flight-records 1 --drain-timeout-ms $timeout \
    < "$dir/in5$round" > "$dir/out5$round" 2> "$dir/err5$round" &
  pid=$!; pids+=("$pid")
  exec 7> "$dir/in5$round"
  printf 'z0\nz1\n' >&7
  wait_lines "$dir/out5$round" 1 || fail "stuck store: first record not acknowledged"
  lock_meta $round
  t0=$(ms)
  kill -TERM "$pid"
  if [ "$round" = second ]; then
    sleep 0.5
    kill -0 "$pid" || fail "the first SIGTERM did not wait for the outstanding record"
    kill -TERM "$pid"
  fi
  rc=0; wait "$pid" || rc=$?
  el=$(( $(ms) - t0 ))
  exec 7>&-
  kill "$lpid"; wait "$lpid" 2> /dev/null || true
  [ "$el" -lt 10000 ] || fail "$round: took $el ms"
  if [ "$round" = drain ]; then
    [ "$rc" = 1 ] || fail "drain timeout: exit $rc"
    [ "$(sed -n 2p "$dir/out5$round")" = unknown ] || fail "drain timeout: stdout"
    grep -q "^tarn: append: record 1 (line 2): unknown: no outcome within --drain-timeout-ms" \
      "$dir/err5$round" || fail "drain timeout: stderr"
  else
    [ "$rc" = 143 ] || fail "second SIGTERM: exit $rc, not death by SIGTERM"
    [ "$(cat "$dir/out5$round")" = 0 ] || fail "second SIGTERM: stdout"
  fi
done

# 6. SIGTERM while the open waits on the locked store (the busy timeout is 30 s, and the
# open retries): the first signal ends the process at once, by that signal; nothing is read.
before=$("$TARN" read --log 1)
lock_meta open
printf 'w0\n' > "$dir/in6"
"$TARN" append --log 1 < "$dir/in6" > "$dir/out6" 2> "$dir/err6" &
pid=$!; pids+=("$pid")
sleep 1
kill -0 "$pid" 2> /dev/null || fail "open: append ended with the store locked: $(cat "$dir/err6")"
t0=$(ms)
kill -TERM "$pid"
rc=0; wait "$pid" || rc=$?
el=$(( $(ms) - t0 ))
kill "$lpid" 2> /dev/null || true; wait "$lpid" 2> /dev/null || true
[ "$el" -lt 5000 ] || fail "open: SIGTERM took $el ms"
[ "$rc" = 143 ] || fail "open: exit $rc, not death by SIGTERM"
grep -q "^tarn: append: stopped by SIGTERM before the log was open" "$dir/err6" ||
  fail "open: stderr $(cat "$dir/err6")"
[ ! -s "$dir/out6" ] || fail "open: stdout $(cat "$dir/out6")"
[ "$("$TARN" read --log 1)" = "$before" ] || fail "open: a record was appended"
echo OK
