#!/usr/bin/env bash
# tarn append / tarn read on a one-directory (sqlite: + file://) deployment.
. "$(dirname "$0")/lib.sh"
export TARN_HOME="$dir/home"
"$TARN" init > /dev/null
# --log L names a log a stream has (LS-087): two streams' logs, by ID
log_of() { "$TARN" stream describe "$1" --json |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["log_ids"][0])'; }
"$TARN" stream create raw/a > /dev/null
"$TARN" stream create raw/b > /dev/null
l7=$(log_of raw/a) l8=$(log_of raw/b)

# lines in, offsets out in input order (LS-039: printed only once acknowledged)
out=$(printf 'alpha\nbeta\n\ngamma\n' | "$TARN" append --log "$l7" --batch-ms 60000)
[ "$out" = "$(printf '0\n1\n2\n3')" ] || fail "offsets: $out"
# read back: whole entries in order, the empty record too
[ "$("$TARN" read --log "$l7")" = "$(printf 'alpha\nbeta\n\ngamma')" ] || fail "read raw"
# from an offset, a count; hex and json formats
[ "$("$TARN" read --log "$l7" --from 1 --count 1)" = "beta" ] || fail "from/count"
"$TARN" read --log "$l7" --format hex --from 3 | grepq -E '^3 1 [0-9]+ 67616d6d61$' || fail "hex"
"$TARN" read --log "$l7" --format json | tail -1 | grepq '"cumulative_size":14' || fail "json cumulative"

# length-delimited in and out, and whole files as records
printf '\0\0\0\003abc\0\0\0\0' | "$TARN" append --log "$l7" --length-delimited --quiet
printf 'file-record\nwith two lines' > "$dir/rec"
"$TARN" append --log "$l7" "$dir/rec" --json > "$dir/ack.json"
[ "$(jq -c 'select(.record == 0) | .offset' "$dir/ack.json")" = 6 ] || fail "file record offset"
[ "$(jq -c 'select(.log_id) | [.records, .appended, .failed, .unknown]' "$dir/ack.json")" = \
  '[1,1,0,0]' ] || fail "json summary: $(cat "$dir/ack.json")"
"$TARN" read --log "$l7" --from 4 --length-delimited | od -An -tx1 | tr -d ' \n' > "$dir/ld"
[ "$(cut -c1-22 "$dir/ld")" = "0000000361626300000000" ] || fail "length-delimited out: $(cat "$dir/ld")"
[ "$("$TARN" read --log "$l7" --from 6)" = "$(printf 'file-record\nwith two lines')" ] || fail "file record"

# a truncated length prefix is bad input (exit 1, one message)
set +e
printf '\0\0' | "$TARN" append --log "$l7" --length-delimited 2> "$dir/err"; rc=$?
set -e
[ $rc -eq 1 ] || fail "truncated prefix exit $rc"
grep -q "truncated length prefix" "$dir/err" || fail "truncated message"

# --follow waits for new entries; --timeout-ms ends the wait (exit 0)
"$TARN" read --log "$l8" --follow --timeout-ms 5000 --count 2 > "$dir/follow" &
pid=$!
sleep 0.3
printf 'one\ntwo\n' | "$TARN" append --log "$l8" --batch-ms 60000 --quiet
wait $pid
[ "$(cat "$dir/follow")" = "$(printf 'one\ntwo')" ] || fail "follow: $(cat "$dir/follow")"
start=$(date +%s%N)
"$TARN" read --log "$l8" --from end --follow --timeout-ms 200 > /dev/null
[ $(( ($(date +%s%N) - start) / 1000000 )) -ge 180 ] || fail "timeout did not wait"

# usage errors exit 2; --help exits 0
set +e
"$TARN" read --log "$l7" --format xml 2> /dev/null; [ $? -eq 2 ] || fail "bad format"
"$TARN" append 2> /dev/null < /dev/null; [ $? -eq 2 ] || fail "no target"
"$TARN" read --log x 2> /dev/null; [ $? -eq 2 ] || fail "bad log"
"$TARN" read nosuch/stream 2> "$dir/err"; [ $? -eq 1 ] || fail "missing stream exit"
set -e
grep -q "does not exist" "$dir/err" || fail "missing stream message"
"$TARN" append --help | grep -- "--length-delimited" >/dev/null || fail "append help"
"$TARN" read --help | grep -- "--follow" >/dev/null || fail "read help"

# NS/NAME and --partition through the catalog; NAME alone is namespace default
"$TARN" stream create ns/events --partitions 2 > /dev/null
echo hello | "$TARN" append ns/events --partition 1 --quiet
[ "$("$TARN" read ns/events --partition 1)" = "hello" ] || fail "stream read"
[ -z "$("$TARN" read ns/events)" ] || fail "partition 0 not empty"
"$TARN" stream create plain > /dev/null
echo there | "$TARN" append plain --quiet
[ "$("$TARN" read default/plain --format hex | cut -d' ' -f1,4)" = "0 7468657265" ] || fail "default ns"
set +e
"$TARN" read ns/events --partition 2 2> "$dir/err"; [ $? -eq 1 ] || fail "no partition 2"
set -e
grep -q "has 2 partitions" "$dir/err" || fail "partition message"
echo OK
