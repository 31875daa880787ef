#!/usr/bin/env bash
# tarn inspect companion and tarn inspect kafka on files built by an independent
# generator (python3: zlib/json/base64, and kafka-python's record builders).
. "$(dirname "$0")/lib.sh"
: "${TARN_SRC:?}"
d=$dir
# Debian's python3 is the one that sees python3-kafka (a pyenv python may not,
# and its shim is slow to start).
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
"$py" "$TARN_SRC/tests/cli/gen_companion_kafka.py" "$d"

# Expects exit 1 and one stderr line holding the text.
refuse() {
  local want=$1; shift
  set +e; "$@" >"$d/out" 2>"$d/err"; local rc=$?; set -e
  [ $rc -eq 1 ] || fail "$* exited $rc, wanted 1"
  [ "$(wc -l <"$d/err")" -eq 1 ] || fail "$*: stderr is not one line: $(cat "$d/err")"
  grep -qF -- "$want" "$d/err" || fail "$*: stderr lacks '$want': $(cat "$d/err")"
}

# --- companion -------------------------------------------------------------------
"$TARN" inspect companion --help | grep "usage: tarn inspect companion" >/dev/null
set +e; "$TARN" inspect companion 2>/dev/null; rc=$?; set -e
[ $rc -eq 2 ] || fail "no FILE: exit $rc"

# LS-060: the §4.8 example, gzip and uncompressed.
"$TARN" inspect companion "$d/example.index" --json >"$d/ex.json"
"$py" - "$d/ex.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["streamBytes"] == 132, j
assert j["blocks"] == [{"position": 0, "length": 107, "firstRow": 0, "rows": 2}], j["blocks"]
r = j["rows"]
assert r[0] == {"row": 0, "offset": 0, "numberOfMessages": 2, "writtenTimestamp": 1700000000000,
                "entrySize": 5, "cumulativeSize": 5}, r[0]
assert r[1]["offset"] == 2 and r[1]["numberOfMessages"] == 1 and r[1]["cumulativeSize"] == 8
assert j["offsetMap"] == {"0": 0, "2": 1}
PY
"$TARN" inspect companion --stream "$d/example.stream" | grepq "2 rows in 1 blocks, 132-byte stream"
# LS-065: offset 1 is not a key; its floor is 0, row 0.
"$TARN" inspect companion "$d/example.index" --lookup 1 | grepq "lookup 1: row 0"
# LS-065: numeric, not lexical: the floor of 95 among {9, 10} is 10 (row 1).
"$TARN" inspect companion "$d/nine_ten.index" --lookup 95 --json |
  "$py" -c 'import json,sys; j=json.load(sys.stdin); assert j["lookup"]=={"offset":95,"row":1}, j; assert list(j["offsetMap"])==["9","10"], j'
"$TARN" inspect companion "$d/nine_ten.index" --lookup 8 | grepq "lookup 8: below the first entry"
# LS-062: an empty last block is accepted.
"$TARN" inspect companion "$d/empty_last.index" --json |
  "$py" -c 'import json,sys; j=json.load(sys.stdin); assert [b["rows"] for b in j["blocks"]]==[2,2,0], j["blocks"]; assert j["blocks"][2]["length"]==2'

refuse "companion file: byte 4: block 0 row 0 (row 0): offset \"00\" is not a canonical decimal" \
  "$TARN" inspect companion "$d/bad_offset.index"
refuse "offset map: key \"0\": value is not a row number below 1" "$TARN" inspect companion "$d/bad_map.index"
refuse "companion file: byte 6: block 0 is empty but is not the last block" \
  "$TARN" inspect companion "$d/empty_middle.index"
refuse "companion file (gzip): byte" "$TARN" inspect companion "$d/truncated.index"
refuse "not a gzip stream" "$TARN" inspect companion "$d/not_gzip.index"
refuse "companion file: byte 132: 1 trailing bytes after the offset map" \
  "$TARN" inspect companion --stream "$d/trailing.stream"

# --- kafka -----------------------------------------------------------------------
"$TARN" inspect kafka --help | grep "usage: tarn inspect kafka" >/dev/null
if [ ! -e "$d/have_kafka" ]; then
  echo "kafka-python (python3-kafka) is missing: the Kafka part needs it" >&2
  exit 1
fi
# LS-095, LS-099: batches of 3, 1 and 5 records at entry offset 100.
"$TARN" inspect kafka "$d/v2.kafka" --offset 100 --records 9 --json >"$d/v2.json"
"$py" - "$d/v2.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["records"] == 9 and j["entryOffset"] == 100
b = j["batches"]
assert [(x["firstOffset"], x["lastOffset"], x["recordCount"]) for x in b] == \
    [(100, 102, 3), (103, 103, 1), (104, 108, 5)], b
assert all(x["magic"] == 2 and x["baseOffset"] == 0 and x["crcOk"] for x in b)
assert b[2]["compression"] == "gzip"
assert b[0]["position"] == 0 and b[1]["position"] == b[0]["length"]
PY
"$TARN" inspect kafka "$d/v2.kafka" --offset 100 | grepq -E "^2 .* 104-108 +5 "
refuse "its batches hold 9 records, the entry says 8" "$TARN" inspect kafka "$d/v2.kafka" --records 8
# LS-097: magic 0/1 messages and gzip, snappy (xerial) and lz4 wrappers.
"$TARN" inspect kafka "$d/legacy.kafka" --json |
  "$py" -c 'import json,sys; j=json.load(sys.stdin); b=j["batches"]; assert [x["recordCount"] for x in b]==[1,1,3,4,2,2], b; assert [x["compression"] for x in b]==["none","none","gzip","snappy","lz4","none"]; assert [x["magic"] for x in b]==[0,1,1,1,1,2]; assert j["records"]==13'
refuse "transactional batch is not allowed" "$TARN" inspect kafka "$d/transactional.kafka" # LS-098
refuse "byte 17: batch 0: CRC32C is" "$TARN" inspect kafka "$d/badcrc.kafka"            # LS-095
refuse "runs past the payload's end" "$TARN" inspect kafka "$d/truncated.kafka"          # LS-095
echo ok
