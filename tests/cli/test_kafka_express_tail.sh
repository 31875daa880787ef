#!/usr/bin/env bash
# Fetch of an express topic serves the acknowledged tail before absorb (item
# 4 of issue 15; docs/kafka.md "Express topics", src/kafka/api_fetch.c
# read_tail_part): one `tarn serve --kafka-listen` node on the embedded
# default, its express writer's absorb window an hour (--express-absorb-ms),
# so nothing acknowledged reaches the index while the test runs. kcat
# produces three messages with acks=all; a consumer through the node reads
# all three at offsets 0, 1, 2 (LS-099) while `tarn read` of the stream (the
# index) has none of them. Without the tail the consumer sees nothing and
# this fails. After a SIGTERM (drain: Finish absorbs) the index has all three.
. "$(dirname "$0")/lib.sh"
require_tool kcat
export TARN_HOME="$dir/home"
"$TARN" init > /dev/null
"$TARN" topic create xt --partitions 1 --config class=express > /dev/null 2> "$dir/topic.err" ||
  fail "topic create: $(cat "$dir/topic.err")"
stream=$("$TARN" stream list | awk '$2 ~ /^xt-topic-id-/ { print $2 }')
[ -n "$stream" ] || fail "no stream for topic xt"
serve_start "$dir/log" --listen 127.0.0.1:0 --kafka-listen 127.0.0.1:0 --kafka-node-id 1 \
  --express-absorb-ms 3600000 --no-compact --no-reclaim --no-wal-gc
node=$pid
sleep 1.2 # the live list is read at most once a second
printf 'm0\nm1\nm2\n' | timeout 30 kcat -b "127.0.0.1:$kport" -P -t xt -p 0 \
  -X request.required.acks=-1 2> "$dir/prod.err" || fail "produce: $(cat "$dir/prod.err")"
timeout 30 kcat -b "127.0.0.1:$kport" -C -t xt -p 0 -o beginning -c 3 -q \
  -X fetch.wait.max.ms=50 -f '%o %s\n' > "$dir/got" 2> "$dir/cons.err" ||
  fail "consume: $(cat "$dir/cons.err") got: $(cat "$dir/got")"
printf '0 m0\n1 m1\n2 m2\n' | diff - "$dir/got" > "$dir/diff" || fail "consumed: $(cat "$dir/diff")"
indexed=$("$TARN" read "default/$stream" --format hex | wc -l)
[ "$indexed" = 0 ] || fail "the index had $indexed entries: the records were not read from the tail"
stop_term "$node"
indexed=$("$TARN" read "default/$stream" --format hex | wc -l)
[ "$indexed" -ge 1 ] || fail "after the drain the index has nothing"
echo ok
