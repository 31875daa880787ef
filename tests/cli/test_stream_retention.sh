#!/usr/bin/env bash
# Retention of plain streams (issue 37; docs/log.md "Retention"): streams
# created with `tarn stream create --retention-bytes/--retention-ms` are
# trimmed by tarn serve's retention job on the embedded default (sqlite +
# file://): by size at once, by time once their entries are provably older
# than retention.ms (never before: the first pass only marks the log's end),
# a stream without the properties never; reads start at the new first
# offset. Bad values are refused at creation (exit 2).
. "$(dirname "$0")/lib.sh"
export TARN_HOME="$dir/home"
unset TARN_META TARN_WAL TARN_COMPACTED
"$TARN" init > /dev/null
expect_exit 2 "$TARN" stream create ns/bad --retention-ms banana
grepq -i "retention-ms" "$dir/err" || fail "no word of the option: $(cat "$dir/err")"
expect_exit 2 "$TARN" stream create ns/bad --retention-bytes -2

"$TARN" stream create ns/sized --retention-bytes 250 > /dev/null
"$TARN" stream create ns/timed --retention-ms 3000 > /dev/null
"$TARN" stream create ns/kept > /dev/null
"$TARN" stream describe ns/timed --json | jq -e '.properties["retention.ms"] == "3000"' > /dev/null ||
  fail "retention.ms not a property: $("$TARN" stream describe ns/timed --json)"
# ten index records of one 99-byte record each (one append each: records
# appended together share an index record, and retention trims whole ones)
row=$(printf '%099d' 7)
for s in sized timed kept; do
  for i in $(seq 10); do echo "$row" | "$TARN" append "ns/$s" --quiet; done
done
first() { "$TARN" offsets "ns/$1" --json | jq -r '.partitions[0].first_offset'; }
[ "$(first timed)" = 0 ] && [ "$(first sized)" = 0 ] || fail "trimmed before serve"

t0=$(date +%s%N)
serve_start "$dir/serve.log" --listen 127.0.0.1:0 --no-compact --retention-check-ms 200
# by size: at least 250 of 990 bytes kept: whole entries from the oldest, 3 stay
wait_until 10 eval '[ "$(first sized)" = 7 ]' || fail "sized starts at $(first sized), not 7"
# by time: not within the first 3 s (the first mark is taken at the first
# pass, after the appends), then all but the last entry (LS-080 keeps it)
[ "$(first timed)" = 0 ] || fail "timed trimmed at once: $(first timed)"
wait_until 15 eval '[ "$(first timed)" = 9 ]' || fail "timed starts at $(first timed), not 9"
waited=$((($(date +%s%N) - t0) / 1000000))
[ "$waited" -ge 3000 ] || fail "timed trimmed after $waited ms, before its retention.ms"
[ "$(first kept)" = 0 ] || fail "a stream without retention was trimmed"
# reads start at the new first offset
n=$("$TARN" read ns/sized --from 0 2> "$dir/read.err" | wc -l) || true
[ "$n" = 3 ] || fail "read ns/sized gave $n records, not 3: $(cat "$dir/read.err")"
curl -s "http://127.0.0.1:$port/metrics" | grepq '^tarn_retention_trims_total [1-9]' ||
  fail "no retention trims counted"
stop_term "$pid"
grepq "retention trimmed" "$dir/serve.log" || fail "no log line: $(cat "$dir/serve.log")"
echo ok
