# A writer that rolled and died, settled by someone else (issue 30 item 3):
# sourced by test_express_roll_{gate,takeover}.sh after lib.sh, with
# roll_mode=gate|takeover|byname, and roll_store=s3 for etcd + radosgw (the
# WAL root and two buckets behind TCP proxies killed for the outages), else the
# embedded default: sqlite (session_timeout_ms=2000) and the three file://
# bucket directories of `tarn init` (made read-only with chattr +i).
#
# `tarn append --star node-r --json` acknowledges a paced stream of lines.
# The WAL root is made read-only (chattr +i: the test runs as root, whom
# file modes do not stop), so absorb stops and every later acknowledgement
# stays in the buckets only; then two of the three buckets are made
# read-only the same way for 2 s (6 s on radosgw: below): a slot cannot
# reach W = 2, the epoch halts, the writer's fence waits for the buckets and
# the writer rolls into epoch 2 and acknowledges on. It is killed with -9
# once epoch 2 holds acknowledgements, and the WAL root comes back. Then:
#   gate      another star's `tarn append` to the same log: its open gate
#             fences and settles node-r's epochs before it counts;
#   takeover  `tarn serve`'s express-takeover job fences and settles them;
#   byname    `tarn express fence fast/r && tarn express settle fast/r`.
# Settlement went newest first, so epoch 2's entries were indexed at epoch
# 1's offsets (planted xsettle-newest-first); now every offset printed holds
# exactly the line sent for it and no line is stored twice
# (tests/cli/check_acked.py).
unset TARN_HOME TARN_META TARN_WAL TARN_COMPACTED
export TARN_HOME="$dir/home"
H=$TARN_HOME
if [ "${roll_store:-}" = s3 ]; then
  # etcd + radosgw: the WAL root and buckets b and c reach radosgw through TCP
  # proxies of their own (endpoint= in their URIs); an outage kills one
  need_env TARN_TEST_ETCD TARN_TEST_S3_URI AWS_ENDPOINT_URL
  unique_run
  declare -A pport ppid
  proxy_start() { # NAME PORT (0: any)
    rm -f "$dir/proxy.$1.port"
    python3 "$TARN_SRC/tests/cli/tcp_proxy.py" "$dir/proxy.$1.port" "$2" 2>> "$dir/proxy.err" &
    ppid[$1]=$!
    pids+=($!)
    wait_until 10 test -s "$dir/proxy.$1.port" || fail "proxy $1 did not start"
    pport[$1]=$(cat "$dir/proxy.$1.port")
  }
  for p in wal b c; do proxy_start $p 0; done
  x="$TARN_TEST_S3_URI/xroll-$run"
  export TARN_META="etcd://$TARN_TEST_ETCD?prefix=tarn-test/xroll-$run&session_timeout_ms=2000"
  export TARN_WAL="$x/wal?endpoint=http://127.0.0.1:${pport[wal]}&timeout_ms=1000"
  export TARN_COMPACTED="$x/compacted"
  "$TARN" init --express-bucket "$x/a@a" \
    --express-bucket "$x/b?endpoint=http://127.0.0.1:${pport[b]}&timeout_ms=1000@b" \
    --express-bucket "$x/c?endpoint=http://127.0.0.1:${pport[c]}&timeout_ms=1000@c" > /dev/null 2> "$dir/init.err" ||
    fail "tarn init"
  take_away() { kill -KILL "${ppid[$1]}"; wait "${ppid[$1]}" 2> /dev/null || true; }
  bring_back() { proxy_start "$1" "${pport[$1]}"; }
  # The outage must outlast the writer's giving up on the copies (3 attempts,
  # each retried by the s3 client until its timeout_ms=1000): about 3 s, more
  # on a loaded machine. Back sooner, the copies land, the slot reaches W
  # and nothing halts (a CI run at load 10+ saw no roll after a 2 s outage).
  outage_s=6
  WAL=wal B=b C=c
  # epoch 2 exists once a slot of it is in bucket a (the query's slashes
  # encoded: curl's SigV4 signs them so)
  s3_bucket=${TARN_TEST_S3_URI#s3://}
  s3_prefix=${s3_bucket#*/}
  s3_bucket=${s3_bucket%%/*}
  epoch2() {
    curl -s -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" --aws-sigv4 "aws:amz:${AWS_REGION:-us-east-1}:s3" \
      --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
      "$AWS_ENDPOINT_URL/$s3_bucket?list-type=2&max-keys=1&prefix=$s3_prefix%2Fxroll-$run%2Fa%2Fnode-r%2F00000000000000000002%2F" |
      grep -q '<Key>'
  }
else
  export TARN_META="sqlite:$dir/home/meta.db?session_timeout_ms=2000"
  "$TARN" init > /dev/null 2> "$dir/init.err" || fail "tarn init"
  need_tool chattr
  take_away() { chattr -R +i "$1" || skip "chattr +i refused (no CAP_LINUX_IMMUTABLE?)"; }
  outage_s=2 # a read-only directory fails a copy at once
  bring_back() { chattr -R -i "$1"; }
  cleanup_hook() { chattr -R -i "$dir" 2> /dev/null || true; }
  WAL=$H/wal B=$H/express/b C=$H/express/c
  epoch2() { [ -d "$H/express/a/node-r/00000000000000000002" ]; }
fi
"$TARN" stream create fast/r --class express > /dev/null
acks() { grep -c '"offset"' "$dir/out.json" 2> /dev/null || true; }
note() { echo "$(date +%T.%N) $* ($(acks) acknowledged)" >> "$dir/log"; }
wait_acks() {
  local n=$1 i
  for ((i = 0; i < 300; i++)); do
    [ "$(acks)" -ge "$n" ] && return 0
    kill -0 "$appender" 2> /dev/null || fail "the appender stopped early"
    sleep 0.1
  done
  fail "fewer than $n acknowledgements in 30 s"
}

mkfifo "$dir/fifo"
# bursts of 10 lines every 20 ms; what was sent is kept for the checker.
# While $dir/pause exists it sends nothing but the one line $dir/once asks
# for: the roll happens with nothing gathering (under load the writer's
# timer spun in seal() while the roll waited for its mutex: issue 30 item 4,
# another helper's).
( i=0; while [ $i -lt 100000 ]; do
    n=10
    if [ -e "$dir/pause" ]; then
      [ -e "$dir/once" ] || { sleep 0.01; continue; }
      rm -f "$dir/once"
      n=1
    fi
    for ((j = 0; j < n; j++)); do echo "r-$i"; i=$((i + 1)); done
    sleep 0.02
  done ) | tee "$dir/in.txt" > "$dir/fifo" &
pids+=($!)
feeder=$!
"$TARN" append fast/r --star node-r --json < "$dir/fifo" > "$dir/out.json" 2> "$dir/append.err" &
pids+=($!)
appender=$!
wait_acks 100
take_away "$WAL"
note "WAL root away"
n0=$(acks)
wait_acks $((n0 + 100))
touch "$dir/pause"
sleep 0.5 # everything sent is acknowledged
take_away "$B"
take_away "$C"
note "buckets b, c away"
touch "$dir/once" # one line: its slot cannot reach W, the epoch halts
sleep "$outage_s"
bring_back "$B"
bring_back "$C"
note "buckets b, c back"
# the writer's fence repairs the slot from its one copy (cut past it), the
# line is acknowledged in epoch 1 and the writer rolls into epoch 2
wait_acks "$(wc -l < "$dir/in.txt")"
note "the line acknowledged"
rm -f "$dir/pause"
for ((i = 0; i < 300; i++)); do
  epoch2 && break
  kill -0 "$appender" 2> /dev/null || fail "the appender stopped before its roll"
  sleep 0.1
done
epoch2 || fail "no roll into epoch 2 in 30 s"
note "epoch 2"
n1=$(acks)
wait_acks $((n1 + 100))
kill -KILL "$appender"
wait "$appender" 2> /dev/null || true
kill -KILL "$feeder" 2> /dev/null || true
bring_back "$WAL"
acked=$(acks)

if [ "$roll_mode" = gate ]; then
  # another star's append: refused (TARN_EBUSY) while node-r's lease lives,
  # then its gate fences and settles node-r's epochs, and it appends
  printf 's-0\n' > "$dir/in2.txt"
  ok=0
  for ((i = 0; i < 100; i++)); do
    if "$TARN" append fast/r --star node-s --json < "$dir/in2.txt" > "$dir/out2.json" 2> "$dir/append2.err"; then
      ok=1
      break
    fi
    sleep 0.2
  done
  runs=()
  [ "$ok" = 1 ] && runs=(--run "$dir/in2.txt" "$dir/out2.json")
elif [ "$roll_mode" = byname ]; then
  # the documented recovery, by the stream's name (issue 30 item 5): it
  # acted on the head epoch only, and epoch 1's entries stayed unreadable
  ok=0
  "$TARN" express fence fast/r --timeout-ms 20000 > "$dir/fence.out" 2> "$dir/fence.err" &&
    "$TARN" express settle fast/r --timeout-ms 20000 > "$dir/settle.out" 2> "$dir/settle.err" && ok=1
  grep -q '^node-r/1: ' "$dir/settle.out" || ok=0
  runs=()
else
  serve_start "$dir/serve.err" --listen 127.0.0.1:0 --no-compact --no-reclaim --no-wal-gc \
    --express-takeover-interval-ms 200
  ok=0
  wait_until 30 grep -q 'express takeover.*star=node-r' "$dir/serve.err" && ok=1
  stop_term "$pid"
  runs=()
fi

"$TARN" read fast/r --format json > "$dir/read.json" 2> "$dir/read.err" || fail "read"
python3 "$TARN_SRC/tests/cli/check_acked.py" --read "$dir/read.json" --run "$dir/in.txt" "$dir/out.json" \
  ${runs[@]+"${runs[@]}"} > "$dir/check.out" 2>&1 || fail "check_acked: $(cat "$dir/check.out")"
case "$roll_mode" in
  gate) why="node-s never appended" ;;
  byname) why="fence and settle by name did not settle epoch 1" ;;
  *) why="no takeover of node-r" ;;
esac
[ "$ok" = 1 ] || fail "$why"
"$TARN" fsck --no-read > "$dir/fsck.out" 2>&1 || fail "fsck: $(cat "$dir/fsck.out")"
echo "ok ($roll_mode): $acked acknowledged by node-r across its roll; $(cat "$dir/check.out")"
