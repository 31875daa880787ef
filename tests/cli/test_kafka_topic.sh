#!/usr/bin/env bash
# Kafka topics from the command line (docs/kafka.md "Topics and the binding"):
# tarn topic create/list/describe/delete/add-partitions; `tarn append` to a
# topic's log takes only record batches (LS-095, LS-096) and stores nothing of
# a refused one; `tarn read --format kafka` prints records with the offsets
# LS-099 assigns, from the WAL and after compaction, gzip batches decompressed.
# Batches come from gen_kafka_batch.py (Kafka's layout, its own CRC32C).
. "$(dirname "$0")/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)
tmp=$dir
unset TARN_HOME TARN_META TARN_WAL TARN_COMPACTED
cd "$tmp"
gen() { python3 "$here/gen_kafka_batch.py" "$@"; }

"$TARN" init > /dev/null
"$TARN" topic create orders --partitions 2 --config max.message.bytes=5000 --json > t.json
id=$(python3 -c 'import json,sys; print(json.load(open("t.json"))["topic_id"])')
stream=$(python3 -c 'import json,sys; print(json.load(open("t.json"))["stream"])')
[ "${#id}" = 22 ] || fail "topic ID '$id' is not 22 characters"
[ "$stream" = "orders-topic-id-$id" ] || fail "stream '$stream'"
"$TARN" stream describe "default/$stream" | grepq "lakestream.kafka.topic.name=orders" ||
  fail "no topic-name property"
"$TARN" stream describe "default/$stream" | grepq "lakestream.source.logical.name=orders" ||
  fail "no logical-name property"
"$TARN" topic list | grepq "^orders .* $id 2$" || fail "topic list: $("$TARN" topic list)"
rc=0; "$TARN" topic create orders 2> err || rc=$?
[ "$rc" = 1 ] && grep -q "already exists" err || fail "second create: exit $rc: $(cat err)"
# Kafka's topic configs (tarn/kafka_configs.h, issue 37): a value of the wrong
# type and an unknown name are refused with Kafka's messages; nothing created
rc=0; "$TARN" topic create bad --config retention.ms=banana 2> err || rc=$?
[ "$rc" = 1 ] && grep -q "Invalid value banana for configuration retention.ms: Not a number of type LONG" err ||
  fail "retention.ms=banana: exit $rc: $(cat err)"
rc=0; "$TARN" topic create bad --config retention.msx=1 2> err || rc=$?
[ "$rc" = 1 ] && grep -q "Unknown topic config name: retention.msx" err ||
  fail "retention.msx: exit $rc: $(cat err)"
! "$TARN" topic list | grepq "^bad " || fail "a refused topic was created"
"$TARN" topic create good --config retention.ms=5000 --config cleanup.policy=delete > /dev/null ||
  fail "good configs refused"

# LS-095 … LS-096: bytes that are no batch, a batch with a bad CRC, a batch
# with base offset 1: refused with the batch, the byte and the rule; nothing stored
gen none "k0=v0" "k1=v1;h1=x,h2=y" > b1
gen gzip "-=z0" "k=z1" "k=z2" > b2
printf 'hello' > bad1
cp b1 bad2 && printf '\x00' | dd of=bad2 bs=1 seek=70 conv=notrunc 2> /dev/null
python3 -c 'import sys; d=bytearray(open("b1","rb").read()); d[7]=1; sys.stdout.buffer.write(d)' > bad3
for f in bad1 bad2 bad3; do
  rc=0; "$TARN" append "default/$stream" "$f" > out 2> err || rc=$?
  [ "$rc" = 1 ] || fail "append $f: exit $rc"
  grep -q "Kafka topic's; entry refused: kafka entry payload: byte [0-9]*: batch 0" err ||
    fail "append $f: $(cat err)"
done
grep -q "baseOffset is 1, not 0" err || fail "bad3: $(cat err)"
end=$("$TARN" read "default/$stream" --format hex | wc -l)
[ "$end" = 0 ] || fail "a refused entry was stored"

# good batches: entry offsets count records (2 + 3)
"$TARN" append "default/$stream" b1 b2 > out
[ "$(cat out)" = "$(printf '0\n2')" ] || fail "append offsets: $(cat out)"
"$TARN" read "default/$stream" --format kafka > rec.txt
cat > want.txt <<'W'
0 1700000000000 key=k0 value=v0
1 1700000000010 key=k1 value=v1 headers h1=x,h2=y
2 1700000000000 key=- value=z0
3 1700000000010 key=k value=z1
4 1700000000020 key=k value=z2
W
diff want.txt rec.txt || fail "read --format kafka"
"$TARN" read "default/$stream" --format kafka --json | sed -n 2p > j.txt
grep -q '"offset":1,.*"key":"k1","value":"v1","headers":\[{"key":"h1","value":"x"},{"key":"h2","value":"y"}\],"entry_offset":0' j.txt ||
  fail "json: $(cat j.txt)"
# the stored bytes keep base offset 0; the read for Kafka writes 2 into the second entry's
"$TARN" read "default/$stream" --format hex | sed -n 2p | awk '{print substr($4,1,16)}' | grepq -x 0000000000000000 || fail "stored base offset changed"

# after compaction the rows give the same records
"$TARN" compact "default/$stream" --json > c.json
"$TARN" read "default/$stream" --format json | grepq . || fail "nothing read after compaction"
"$TARN" read "default/$stream" --format kafka > rec2.txt
diff want.txt rec2.txt || fail "read --format kafka after compaction"

# a plain stream is no topic: it takes any bytes
"$TARN" stream create plain > /dev/null
echo hi | "$TARN" append plain > /dev/null
"$TARN" topic list | grepq plain && fail "plain stream listed as a topic"

"$TARN" topic add-partitions orders --partitions 3 | grepq "3 partition" || fail "grow"
"$TARN" topic delete orders > /dev/null
rc=0; "$TARN" topic describe orders 2> err || rc=$?
[ "$rc" = 1 ] || fail "describe after delete: exit $rc"
"$TARN" topic create orders --json > t2.json
id2=$(python3 -c 'import json,sys; print(json.load(open("t2.json"))["topic_id"])')
[ "$id2" != "$id" ] || fail "a re-created topic kept its ID"
echo "ok"
