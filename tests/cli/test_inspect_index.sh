#!/usr/bin/env bash
# tarn inspect index / offsets / fileindex against the spec's examples (tables
# §4.3–§4.7, §4.9), their --json field names, and bad input.
. "$(dirname "$0")/lib.sh"
: "${TARN_SRC:?}"
tmp=$dir

raw=$(cat "$TARN_SRC/docs/examples/raw-entryindex-61.hex")
pq=$(cat "$TARN_SRC/docs/examples/parquet-entryindex-123.hex")
b64=AAAAAAAAAAIAAAALNy0wLnBhcnF1ZXQAAAAAAAAABgAAAAs3LTMucGFycXVldA==

# The 61-byte RAW record, from hex and from a binary file.
out=$("$TARN" inspect index --hex "$raw")
grep -q '^location  *7-00000001.wal$' <<<"$out" || fail "raw location: $out"
grep -q '^offset_in_file  *-1$' <<<"$out" || fail "raw offset_in_file"
grep -q 'entries  *\[0,2) \[2,3)$' <<<"$out" || fail "raw entries"
python3 -c 'import sys; sys.stdout.buffer.write(bytes.fromhex(sys.argv[1].replace(" ", "")))' "$raw" >"$tmp/raw.bin"
[ "$(stat -c %s "$tmp/raw.bin")" = 61 ] || fail "raw example is not 61 bytes"
"$TARN" inspect index "$tmp/raw.bin" | diff - <(echo "$out") || fail "file and --hex differ"
"$TARN" inspect index - <"$tmp/raw.bin" >/dev/null || fail "stdin"
# The example files themselves are hex text.
"$TARN" inspect index "$TARN_SRC/docs/examples/raw-entryindex-61.hex" | diff - <(echo "$out") \
  || fail "hex-text file"
"$TARN" inspect index "$TARN_SRC/docs/examples/parquet-entryindex-123.hex" | grepq '^file_type  *1 (PARQUET)$' \
  || fail "parquet hex-text file"

# --json with the spec's field names and values.
"$TARN" inspect index --hex "$raw" --json | python3 -c '
import json, sys
j = json.load(sys.stdin)
want = {"version": 3, "location": "7-00000001.wal", "file_type": "RAW", "index_type": "COMPACT",
        "message_count": 3, "entry_size_bytes": 8, "file_size": 8, "offset_in_file": -1,
        "entry_count": 2}
for k, v in want.items():
    assert j[k] == v, (k, j.get(k))
eo = j["entry_offsets"]
assert eo == {"compression_type": "FastPFOR", "uncompressed_size": 8,
              "compressed_payload": "000000020000000000008182", "boundaries": [2, 3]}, eo
assert j["entries"] == [{"start": 0, "end": 2}, {"start": 2, "end": 3}]
assert j["extraData"] == []
' || fail "raw --json"

# The 123-byte PARQUET record and its file index.
out=$("$TARN" inspect index --hex "$pq")
grep -q "CompactedObjectFileIndex = $b64" <<<"$out" || fail "parquet extraData"
grep -q '1  *3  *6  *7-3.parquet$' <<<"$out" || fail "parquet file index: $out"
"$TARN" inspect index --hex "$pq" --json | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert (j["version"], j["file_type"], j["index_type"], j["message_count"], j["entry_size_bytes"],
        j["file_size"], j["offset_in_file"], j["entry_count"]) == (3, "PARQUET", "COMPACT", 7, 28, 28, 0, 1), j
assert "entry_offsets" not in j
assert j["extraData"] == [{"key": "CompactedObjectFileIndex",
                           "value": "AAAAAAAAAAIAAAALNy0wLnBhcnF1ZXQAAAAAAAAABgAAAAs3LTMucGFycXVldA=="}]
assert j["file_index"] == [{"name": "7-0.parquet", "last_offset": 2, "base_offset": 0},
                           {"name": "7-3.parquet", "last_offset": 6, "base_offset": 3}], j["file_index"]
' || fail "parquet --json"

# Legacy values (§4.9).
v1=$(printf '%s' 00000000000000000002-00000000000000000005-7-00000001.wal-0 | od -An -tx1 | tr -d ' \n')
"$TARN" inspect index --hex "$v1" --json | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j == {"version": 1, "message_count": 2, "entry_size_bytes": 5, "location": "7-00000001.wal", "entry_id": 0}, j
' || fail "legacy v1"
"$TARN" inspect index --hex "${v1}2d524157" | grepq '^file_type  *RAW$' || fail "legacy v2"

# Entry offsets: the Appendix D acceptance line, and decoding.
[ "$("$TARN" inspect offsets --boundaries "$(seq -s, 1 40)")" = "00000028 00000001 ffffffff 81818181 81818181" ] \
  || fail "offsets 1..40"
[ "$("$TARN" inspect offsets --boundaries 2,3)" = "00000002 00000000 00008182" ] || fail "offsets 2,3"
out=$("$TARN" inspect offsets --hex "00000002 00000000 00008182")
grep -q '^n  *2$' <<<"$out" && grep -q '^boundaries 2,3$' <<<"$out" || fail "offsets --hex: $out"
"$TARN" inspect offsets --hex "00000028 00000001 ffffffff 81818181 81818181" --json | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j["n"] == 40 and j["boundaries"] == list(range(1, 41)), j
' || fail "offsets --json"

# File index.
out=$("$TARN" inspect fileindex "$b64")
grep -q '^0  *0  *2  *7-0.parquet$' <<<"$out" && grep -q '^1  *3  *6  *7-3.parquet$' <<<"$out" \
  || fail "fileindex: $out"
"$TARN" inspect fileindex "$b64" --start 0 --json | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j["files"] == 2 and j["file_index"][1] == {"name": "7-3.parquet", "last_offset": 6, "base_offset": 3}, j
' || fail "fileindex --json"

# Bad input: exit 1 and one line naming the structure, the byte and the fault.
bad() {
  local want=$1; shift
  set +e
  "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  set -e
  [ "$rc" = 1 ] || fail "'$*' exited $rc, want 1"
  [ "$(wc -l <"$tmp/err")" = 1 ] || fail "'$*' wrote $(wc -l <"$tmp/err") lines on stderr"
  grep -q -- "$want" "$tmp/err" || fail "'$*': $(cat "$tmp/err") lacks '$want'"
}
bad 'entry index: byte 0: version 2 is not 3' "$TARN" inspect index --hex "0802${raw:4}"
bad 'entry index: byte 4: length-delimited field needs 14 bytes, 2 left' "$TARN" inspect index --hex "0803120e372d"
bad 'index value: byte 0: begins with 0xff' "$TARN" inspect index --hex ff00
bad 'legacy index value: byte 19: message_count' "$TARN" inspect index --hex "${v1:0:38}78${v1:40}"
bad 'entry offsets: byte 4: bit width 33 exceeds 32' "$TARN" inspect offsets --hex "00000020 00000021"
bad 'entry offsets: byte 12: 1 trailing words' "$TARN" inspect offsets --hex "00000002 00000000 00008182 00000000"
bad 'file index base64: byte 61: base64: non-zero bits' "$TARN" inspect fileindex "${b64%A==}B=="
bad 'file index: byte 8: file 0: name_length' "$TARN" inspect fileindex AAAAAAAAAAIAAAAM
# Usage errors exit 2; --help exits 0.
set +e
"$TARN" inspect offsets --boundaries 1,x 2>/dev/null; [ $? = 2 ] || fail "usage error"
"$TARN" inspect index 2>/dev/null; [ $? = 2 ] || fail "usage error (no input)"
set -e
"$TARN" inspect index --help | grep usage >/dev/null || fail "--help"
echo "ok"
