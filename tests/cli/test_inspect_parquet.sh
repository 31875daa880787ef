#!/usr/bin/env bash
# tarn inspect parquet on files written by tarn, DuckDB and arrow-rs (tests/data/parquet),
# and its exit status and one-line message on bad input.
. "$(dirname "$0")/lib.sh"
D="$TARN_TESTDATA/parquet"
tmp=$dir

# tarn's own file: schema, the five footer keys, row groups, pages, rows (LS-057).
out=$("$TARN" inspect parquet "$D/tarn-kafka-7rows.parquet" --rows 0..)
grep -q '^  KafkaMessage  *group of 1$' <<<"$out" || fail "root schema element"
grep -q '^  payload  *BYTE_ARRAY OPTIONAL' <<<"$out" || fail "payload column"
grep -q '^  entrySerDeType  *KAFKA_BATCHED_RAW_PARQUET$' <<<"$out" || fail "entrySerDeType"
grep -q '^  rowMetadata  *7-0.index$' <<<"$out" || fail "rowMetadata"
grep -q '^row group 2: 1 rows' <<<"$out" || fail "row groups"
grep -q '^  3  *68656c6c6f2c2070617271756574$' <<<"$out" || fail "row 3"
grep -q '^  5  *null$' <<<"$out" || fail "row 5 null"

j=$("$TARN" inspect parquet "$D/tarn-kafka-7rows.parquet" --rows 1..4 --json)
[ "$(jq -r .num_rows <<<"$j")" = 7 ] || fail "json num_rows"
[ "$(jq -r '.schema[1].repetition_type' <<<"$j")" = OPTIONAL ] || fail "json repetition"
[ "$(jq -r '.key_value_metadata[] | select(.key=="parquet.avro.schema") | .value' <<<"$j")" = \
  '{"type":"record","name":"KafkaMessage","fields":[{"name":"payload","type":["null","bytes"],"default":null}]}' ] ||
  fail "json avro schema"
[ "$(jq -r '.row_groups | length' <<<"$j")" = 3 ] || fail "json row groups"
[ "$(jq -r '.row_groups[0].payload.pages | length' <<<"$j")" = 2 ] || fail "json pages"
[ "$(jq -r '.row_groups[0].payload.codec' <<<"$j")" = SNAPPY ] || fail "json codec"
[ "$(jq -c '[.rows[] | .payload]' <<<"$j")" = '[null,"","68656c6c6f2c2070617271756574"]' ] || fail "json rows"

# DuckDB (dictionary pages, zstd) and arrow-rs (data page v2, DELTA_BYTE_ARRAY, gzip).
j=$("$TARN" inspect parquet "$D/duckdb-dict-zstd.parquet" --rows 0..4 --json)
[ "$(jq -c '[.rows[] | .payload]' <<<"$j")" = \
  '["cfcd208495d565ef66e7dff9f98764da","c4ca4238a0b923820dcc509a6f75849b","c81e728d9d4c2f636f067f89cc14862c",null]' ] ||
  fail "duckdb rows"
j=$("$TARN" inspect parquet "$D/arrow-v2-gzip-kafka-parquet.parquet" --rows 9.. --json)
[ "$(jq -r '.row_groups[0].payload.pages[0].type' <<<"$j")" = DATA_PAGE_V2 ] || fail "arrow v2 page"
[ "$(jq -c '[.rows[] | .payload]' <<<"$j")" = '[null,"726f772d3130","726f772d3131"]' ] || fail "arrow rows"

# Bad input: exit 1 and one line naming the structure and the byte offset.
bad() { # file, expected text
  local rc=0
  "$TARN" inspect parquet "$1" --rows 0.. >/dev/null 2>"$tmp/err" || rc=$?
  [ "$rc" = 1 ] || fail "$1: exit $rc, expected 1"
  [ "$(wc -l <"$tmp/err")" = 1 ] || fail "$1: stderr is not one line: $(cat "$tmp/err")"
  grep -q -- "$2" "$tmp/err" || fail "$1: stderr '$(cat "$tmp/err")' lacks '$2'"
}
head -c 300 "$D/tarn-kafka-7rows.parquet" >"$tmp/truncated.parquet"
bad "$tmp/truncated.parquet" "parquet file: byte 296: no PAR1 magic at the end"
{ printf 'XXXX'; tail -c +5 "$D/tarn-kafka-7rows.parquet"; } >"$tmp/magic.parquet"
bad "$tmp/magic.parquet" "parquet file: byte 0: no PAR1 magic at the start"
size=$(stat -c %s "$D/tarn-kafka-7rows.parquet")
{ head -c $((size - 8)) "$D/tarn-kafka-7rows.parquet"; printf '\xff\xff\x00\x00PAR1'; } >"$tmp/footer.parquet"
bad "$tmp/footer.parquet" "footer length 65535 does not fit"
# A payload page damaged in the middle: the page is named, with its offset.
cp "$D/tarn-kafka-7rows.parquet" "$tmp/page.parquet"
printf '\xff\xff\xff\xff\xff' | dd of="$tmp/page.parquet" bs=1 seek=30 conv=notrunc status=none
bad "$tmp/page.parquet" "parquet page: byte 4"
bad "$tmp/nonexistent.parquet" "cannot open"

# --full: whole payloads of any length, so a script can dump a compacted file (issue #19).
# Before it, payloads over 256 bytes showed their length only.
export TARN_HOME="$tmp/home"
"$TARN" init >/dev/null
"$TARN" stream create ns/big >/dev/null
head -c 300 /dev/urandom >"$tmp/r0"
head -c 70000 /dev/urandom >"$tmp/r1"
printf 'short' >"$tmp/r2"
"$TARN" append ns/big "$tmp/r0" "$tmp/r1" "$tmp/r2" --quiet
"$TARN" compact ns/big >/dev/null
f=$(ls "$TARN_HOME"/compacted/ns/big/*.parquet)
j=$("$TARN" inspect parquet "$f" --rows 0.. --full --json)
hex() { od -An -v -tx1 "$1" | tr -d ' \n'; }
for i in 0 1 2; do
  [ "$(jq -r ".rows[$i].payload" <<<"$j")" = "$(hex "$tmp/r$i")" ] || fail "--full --json row $i"
done
out=$("$TARN" inspect parquet "$f" --rows 1..2 --full)
[ "$(awk '$1 == 1 {print $2}' <<<"$out")" = "$(hex "$tmp/r1")" ] || fail "--full text row 1"
grep -q '^  1  *(70000 bytes)$' <<<"$("$TARN" inspect parquet "$f" --rows 1..2)" ||
  fail "without --full, a long payload shows its length"
rc=0; "$TARN" inspect parquet "$f" --full >/dev/null 2>&1 || rc=$?; [ "$rc" = 2 ] || fail "--full without --rows: exit $rc"

# Usage.
rc=0; "$TARN" inspect parquet >/dev/null 2>&1 || rc=$?; [ "$rc" = 2 ] || fail "no FILE: exit $rc"
rc=0; "$TARN" inspect parquet "$D/tarn-kafka-7rows.parquet" --rows 5..2 >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "bad --rows: exit $rc"
"$TARN" inspect parquet --help | grep '^usage: tarn inspect parquet' >/dev/null || fail "--help"
echo "ok"
