#!/usr/bin/env bash
# librdkafka's own example programs (librdkafka-dev 2.0.2's examples, compiled
# by the build into build/rdkafka/, tests/rdkafka/CMakeLists.txt) against
# tarn serve's Kafka listener on the embedded default (sqlite: + file://):
#   - rdkafka_example -L lists the node as the broker and the topic
#   - rdkafka_example -P produces lines from stdin (acks=-1); -C -e reads every
#     one back, in order, from the beginning, and from an offset
#   - rdkafka_performance -P -a -1 -c 3000 -s 200: all 3000 delivered (the
#     program counts its delivery reports); -C -o beginning -c 3000 -e
#     consumes exactly 3000 messages of 200 bytes (-e: to the partition's end)
. "$(dirname "$0")/lib.sh"
bin=$(dirname "$TARN")/rdkafka
[ -x "$bin/rdkafka_example" ] && [ -x "$bin/rdkafka_performance" ] ||
  { echo "$bin has no rdkafka_example/rdkafka_performance (librdkafka-dev: scripts/install-deps.sh)" >&2; exit 1; }
export TARN_HOME="$dir/home"
"$TARN" init > /dev/null

serve_start "$dir/log" --listen 127.0.0.1:0 --kafka-listen 127.0.0.1:0 --kafka-batch-ms 20 \
  --kafka-auto-create-topics --no-compact --no-reclaim --no-wal-gc
b="127.0.0.1:$kport"
ex() { timeout 30 "$bin/rdkafka_example" -b "$b" "$@"; }
perf() { timeout 30 "$bin/rdkafka_performance" -b "$b" "$@"; }

seq 1 50 | sed 's/^/line-/' > "$dir/lines"
ex -P -t ex -p 0 -X acks=-1 < "$dir/lines" > "$dir/p.out" 2>&1 || fail "rdkafka_example -P: $(cat "$dir/p.out")"
ex -L -t ex > "$dir/md" 2>&1 || fail "rdkafka_example -L: $(cat "$dir/md")"
grep -q "127.0.0.1:$kport" "$dir/md" && grep -q 'topic "ex" with 1 partitions' "$dir/md" ||
  fail "rdkafka_example -L: $(cat "$dir/md")"
# -A: the raw payloads, one per line as produced
ex -C -t ex -p 0 -o beginning -e -A -q -X fetch.wait.max.ms=50 > "$dir/c.out" 2> "$dir/c.err" ||
  fail "rdkafka_example -C: $(cat "$dir/c.err")"
diff <(tr -d '\0' < "$dir/c.out" | grep -v '^$') "$dir/lines" > /dev/null ||
  fail "rdkafka_example -C read back: $(head -c 400 "$dir/c.out")"
ex -C -t ex -p 0 -o 45 -e -A -q -X fetch.wait.max.ms=50 > "$dir/c2.out" 2> "$dir/c.err" ||
  fail "rdkafka_example -C -o 45: $(cat "$dir/c.err")"
diff <(tr -d '\0' < "$dir/c2.out" | grep -v '^$') <(tail -5 "$dir/lines") > /dev/null ||
  fail "rdkafka_example -C -o 45: $(cat "$dir/c2.out")"

# rdkafka_performance: a short produce with acks=all, then consume it all.
perf -P -t perf -p 0 -a -1 -c 3000 -s 200 -X linger.ms=5 > "$dir/pp.out" 2>&1 ||
  fail "rdkafka_performance -P: $(tail -20 "$dir/pp.out")"
# its summary: every message delivered (a delivery report without error), the
# last at offset 2999 of the new partition, none failed
grep -q '^% 3000 messages produced (600000 bytes), 3000 delivered (offset 2999, 0 failed)' "$dir/pp.out" ||
  fail "rdkafka_performance -P: $(tail -20 "$dir/pp.out")"
perf -C -t perf -p 0 -o beginning -c 3000 -e -X fetch.wait.max.ms=50 > "$dir/pc.out" 2>&1 ||
  fail "rdkafka_performance -C: $(tail -20 "$dir/pc.out")"
[ "$(grep '^% [0-9]* messages (' "$dir/pc.out" | tail -1 | cut -d' ' -f2-5)" = "3000 messages (600000 bytes)" ] ||
  fail "rdkafka_performance -C: $(tail -20 "$dir/pc.out")"
stop_term "$pid"
echo ok
