#!/usr/bin/env bash
# `tarn serve` takes over a dead express writer (issue 15 "Serving";
# src/server/jobs_express.c, docs/express.md "Serving"): a `tarn append` to
# an express stream is killed with SIGKILL mid-run; once its session expired
# (sqlite session_timeout_ms=2000) the node's express-takeover job fences and
# settles its epoch, with no command run by hand; then every offset the
# appender printed reads back holding the line sent for it, the log is the
# lines in order once each, and the time from the kill to the takeover is
# printed. A live writer (another star, still appending) is never taken over.
. "$(dirname "$0")/lib.sh"
unset TARN_HOME TARN_META TARN_WAL TARN_COMPACTED
export TARN_HOME="$dir/home"
session_ms=${TARN_TEST_SESSION_MS:-2000} # 15000 (the default) for the README figure
export TARN_META="sqlite:$dir/home/meta.db?session_timeout_ms=$session_ms"
"$TARN" init > /dev/null 2> "$dir/init.err" || fail "tarn init"
"$TARN" stream create fast/k --class express > /dev/null
"$TARN" stream create fast/live --class express > /dev/null

serve_start "$dir/serve.err" --listen 127.0.0.1:0 --no-compact --no-reclaim --no-wal-gc \
  --express-takeover-interval-ms 200
serve=$pid

# the live writer: appends a line every 100 ms for the whole test
( i=0; while :; do echo "live-$i"; i=$((i + 1)); sleep 0.1; done ) | "$TARN" append fast/live --star live-w \
  > "$dir/live.acked" 2> "$dir/live.err" &
pids+=($!)

mkfifo "$dir/in"
( i=0; while [ $i -lt 100000 ]; do echo "line-$i"; i=$((i + 1)); [ $((i % 20)) = 0 ] && sleep 0.02; done ) > "$dir/in" &
pids+=($!)
feeder=$!
"$TARN" append fast/k --star dead-w < "$dir/in" > "$dir/acked" 2> "$dir/append.err" &
pids+=($!)
appender=$!
for _ in $(seq 1 300); do
  [ "$(wc -l < "$dir/acked")" -ge 500 ] && break
  kill -0 "$appender" 2> /dev/null || fail "the appender stopped early"
  sleep 0.1
done
[ "$(wc -l < "$dir/acked")" -ge 500 ] || fail "fewer than 500 acknowledgements in 30 s"
kill -KILL "$appender"
t_kill=$(date +%s%N)
wait "$appender" 2> /dev/null || true
kill -KILL "$feeder" 2> /dev/null || true
acked=$(wc -l < "$dir/acked")

for _ in $(seq 1 $((200 + session_ms / 100))); do
  grep -q 'express takeover.*star=dead-w' "$dir/serve.err" && break
  kill -0 "$serve" 2> /dev/null || fail "tarn serve stopped"
  sleep 0.1
done
grep -q 'express takeover.*star=dead-w' "$dir/serve.err" || fail "no takeover of dead-w"
t_take=$(date +%s%N)
# a few more passes: the live writer is still not taken over, and still acknowledges
live0=$(wc -l < "$dir/live.acked")
sleep 1.5
grep -q 'express takeover.*star=live-w' "$dir/serve.err" && fail "the live writer was taken over"
[ "$(wc -l < "$dir/live.acked")" -gt "$live0" ] || fail "the live writer stopped acknowledging"
# one takeover of dead-w: once settled it is never fenced again
[ "$(grep -c 'express takeover.*star=dead-w' "$dir/serve.err")" = 1 ] || fail "dead-w taken over more than once"

"$TARN" read fast/k > "$dir/read" 2> "$dir/read.err" || fail "read"
awk 'NR == FNR { at[FNR - 1] = $0; next }
     at[$1] != "line-" $1 { print "offset " $1 " holds \"" at[$1] "\""; bad = 1 }
     END { exit bad }' "$dir/read" "$dir/acked" || fail "an acknowledged offset does not hold its line"
awk '$0 != "line-" NR - 1 { print "entry " NR - 1 " is " $0; bad = 1 } END { exit bad }' "$dir/read" ||
  fail "the log is not the lines in order, once each"
total=$(wc -l < "$dir/read")
[ "$total" -ge "$acked" ] || fail "$total entries read, $acked acknowledged"
stop_term "$serve"
echo "ok: $acked acknowledged, $total read; kill -9 to takeover $(( (t_take - t_kill) / 1000000 )) ms (session timeout $session_ms ms)"
