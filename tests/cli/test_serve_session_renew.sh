#!/usr/bin/env bash
# Issue 31 item 6: tarn serve loses its metadata-store session (SIGSTOP for
# longer than the session timeout, on the embedded default sqlite: +
# file://), renews it (the health job, every 5 s) and produces again. Before
# the fix the node's writer kept the old session's lease, and every produce
# to a partition it had written before failed until a restart. Also
# asserted: the renewal happens once (the heartbeat's late verdict on the
# old session ended the new one, and the node renewed twice, 5 s apart),
# and the old lease record does not come back (a new session, new leases).
. "$(dirname "$0")/lib.sh"
require_tool kcat sqlite3
export TARN_HOME="$dir/home"
export TARN_META="sqlite:$dir/meta.db?session_timeout_ms=1500"
export TARN_WAL="file://$dir/wal" TARN_COMPACTED="file://$dir/compacted"
"$TARN" init > /dev/null
serve_start "$dir/log" --listen 127.0.0.1:0 --kafka-listen 127.0.0.1:0 --kafka-batch-ms 20 \
  --kafka-auto-create-topics --no-compact --no-reclaim --no-wal-gc
k() { timeout 20 kcat -b "127.0.0.1:$kport" "$@"; }
produce() { echo "$1" | k -P -t t -X message.timeout.ms=8000 2> "$dir/err.p" || fail "produce $1: $(cat "$dir/err.p")"; }
leases() { sqlite3 "$dir/meta.db" "SELECT key FROM kv WHERE key LIKE '/stream-write-leases/%'" | sort; }
produce one
old=$(leases)
[ -n "$old" ] || fail "no lease record after the first produce"
# stopped past the session timeout: when it runs again, its heartbeat finds
# the session expired; the health job opens a new one
kill -STOP "$pid"
sleep 2.5
kill -CONT "$pid"
wait_until 15 grep -q "a new one opened" "$dir/log" || fail "no renewal logged"
produce two
produce three
new=$(leases)
[ -n "$new" ] || fail "no lease record after the renewal"
[ "$new" != "$old" ] || fail "the old lease record came back: $old"
timeout 20 kcat -b "127.0.0.1:$kport" -C -t t -o beginning -e -q -X fetch.wait.max.ms=50 -f '%o %s\n' \
  > "$dir/out.read" 2> "$dir/err.read" || fail "read back"
[ "$(cat "$dir/out.read")" = "$(printf '0 one\n1 two\n2 three')" ] || fail "log: $(cat "$dir/out.read")"
# one renewal, not a second one after the first (the race)
sleep 6
n=$(grep -c "a new one opened" "$dir/log")
[ "$n" = 1 ] || fail "$n renewals for one loss"
stop_term "$pid"
echo ok
