#!/usr/bin/env bash
# tarn inspect wal / inspect key: the spec's examples, the legacy vector, and bad
# input (exit 1, one line naming the structure, the byte and the fault).
. "$(dirname "$0")/lib.sh"
: "${TARN_SRC:?}"
tmp=$dir
ex="$TARN_SRC/docs/examples/wal-v3-31.bin"
# Only coreutils: hex to bytes, bytes to hex, JSON with the whitespace removed.
unhex() { printf "$(printf '%s' "$1" | tr -d ' ' | sed 's/../\\x&/g')"; }
hexof() { od -An -v -tx1 "$1" | tr -d ' \n'; }
flat() { tr -d ' \n' <"$1"; }

bad_wal() { # FILE EXPECTED-MESSAGE
  local rc=0
  "$TARN" inspect wal "$1" >"$tmp/out" 2>"$tmp/err" || rc=$?
  [ "$rc" = 1 ] || fail "inspect wal $1: exit $rc, want 1"
  [ "$(wc -l <"$tmp/err")" = 1 ] || fail "inspect wal $1: stderr is not one line: $(cat "$tmp/err")"
  grep -qF -- "$2" "$tmp/err" || fail "inspect wal $1: '$(cat "$tmp/err")' lacks '$2'"
}

# LS-018: the spec's 31-byte example, table and JSON.
[ "$(hexof "$ex")" = 00000013000000030000000000000007020005020503010102030405060708 ] || fail "example file"
"$TARN" inspect wal "$ex" >"$tmp/out"
grep -q "format version 3" "$tmp/out" || fail "table: no version"
grep -qE "log_id 7, entry_count 2" "$tmp/out" || fail "table: no section"
grep -qE "^  1 +20 +5 +3 +1 +060708$" "$tmp/out" || fail "table: entry 1 wrong: $(cat "$tmp/out")"
"$TARN" inspect wal "$ex" --json >"$tmp/j"
f=$(flat "$tmp/j")
case "$f" in
  *'"index_length":19,"index_version":3,"payload_region_offset":23,"payload_region_size":8,"sections":[{"log_id":7,"entry_count":2,'*) ;;
  *) fail "json header: $f" ;;
esac
case "$f" in
  *'"entries":[{"payload_offset":0,"payload_size":5,"record_count":2,"payload_preview":"0102030405"},{"payload_offset":5,"payload_size":3,"record_count":1,"payload_preview":"060708"}]'*) ;;
  *) fail "json entries: $f" ;;
esac
# stdin works too.
"$TARN" inspect wal - --json <"$ex" | grepq '"index_length": 19' || fail "stdin"

# Appendix C: the 80-byte legacy vector, detected from its bytes.
unhex "0000000000000040000000000000000700000000000000000000000000000000000000000000000500000000000000070000000000000001000000000000000500000000000000030102030405060708" >"$tmp/legacy.bin"
[ "$(stat -c %s "$tmp/legacy.bin")" = 80 ] || fail "legacy vector is not 80 bytes"
"$TARN" inspect wal "$tmp/legacy.bin" >"$tmp/out"
grep -q "legacy layout" "$tmp/out" || fail "legacy not detected"
"$TARN" inspect wal "$tmp/legacy.bin" --json >"$tmp/j"
f=$(flat "$tmp/j")
case "$f" in
  *'"format_version":"legacy","index_length":64,'*'"entries":[{"entry_id":0,"payload_offset":0,"payload_length":5,"payload_preview":"0102030405"},{"entry_id":1,"payload_offset":5,"payload_length":3,"payload_preview":"060708"}]'*) ;;
  *) fail "legacy json: $f" ;;
esac

# Bad objects: every one is refused with the structure, the byte and the fault.
head -c 30 "$ex" >"$tmp/trunc.bin"
bad_wal "$tmp/trunc.bin" "wal object: byte 20: payload of log 7 entry 1"
head -c 5 "$ex" >"$tmp/short.bin"
bad_wal "$tmp/short.bin" "wal object: byte 0: 5 bytes cannot hold"
: >"$tmp/empty.bin"
bad_wal "$tmp/empty.bin" "wal object: byte 0"
# LS-002: index_version 4.
{ head -c 7 "$ex"; printf '\x04'; tail -c +9 "$ex"; } >"$tmp/v4.bin"
bad_wal "$tmp/v4.bin" "wal object: byte 4: index_version 4 is not 3"
# LS-016: record_count 0 at byte 19.
{ head -c 19 "$ex"; printf '\x00'; tail -c +21 "$ex"; } >"$tmp/rc0.bin"
bad_wal "$tmp/rc0.bin" "wal object: byte 19: record_count of log 7 entry 0 is 0"
# index_length beyond the object.
{ printf '\x00\x00\x00\x40'; tail -c +5 "$ex"; } >"$tmp/len.bin"
bad_wal "$tmp/len.bin" "wal object: byte 0: index_length 64 exceeds"
bad_wal "$tmp/nonexistent.bin" "nonexistent.bin"

# Usage.
"$TARN" inspect wal --help | grep "usage: tarn inspect wal" >/dev/null || fail "help"
rc=0; "$TARN" inspect wal 2>/dev/null || rc=$?; [ "$rc" = 2 ] || fail "missing FILE: exit $rc"
rc=0; "$TARN" inspect wal "$ex" --bogus 2>/dev/null || rc=$?; [ "$rc" = 2 ] || fail "bad option: exit $rc"

# inspect key: §4.2's K(7, 3, 8) and K(7, 3, MAX).
"$TARN" inspect key 00000000000000000007-00000000000000000003-00000000000000000008 >"$tmp/out"
grep -qE "^end_offset +3$" "$tmp/out" || fail "key table"
grep -qE "^partition +7$" "$tmp/out" || fail "key partition"
"$TARN" inspect key 00000000000000000007-00000000000000000003-09223372036854775807 --json >"$tmp/j"
case "$(flat "$tmp/j")" in
  *'"log_id":7,"end_offset":3,"cumulative_size":9223372036854775807,"partition":"7"'*) ;;
  *) fail "key json: $(cat "$tmp/j")" ;;
esac
rc=0; "$TARN" inspect key 00000000000000000007-00000000000000000003-19223372036854775807 2>"$tmp/err" || rc=$?
[ "$rc" = 1 ] || fail "key over MAX: exit $rc"
grep -qF "index key: byte 42: cumulative_size exceeds MAX" "$tmp/err" || fail "key over MAX: $(cat "$tmp/err")"
rc=0; "$TARN" inspect key 7-3-8 2>"$tmp/err" || rc=$?
[ "$rc" = 1 ] && grep -qF "index key: byte 5: 5 bytes" "$tmp/err" || fail "short key: $rc $(cat "$tmp/err")"
"$TARN" inspect key --help | grep "usage: tarn inspect key" >/dev/null || fail "key help"
echo "ok"
