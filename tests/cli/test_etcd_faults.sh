#!/usr/bin/env bash
# Issue 31 items 1 and 2: an append whose index put's outcome is unknown on
# etcd is indexed once, acknowledged once, and never reported failed when it
# landed. Real `tarn append` processes talk to the shared etcd through the
# fault-injecting proxy (tests/support/faultproxy.py), which plays each cause
# the etcd crash loop met, deterministically:
#  1a  the answer to the sequenced put's txn is lost on a reused keep-alive
#      connection (closed in order or reset): libcurl sends the txn again on
#      a fresh connection by itself (the proxy listens again at once), or
#      that reconnect is refused (the proxy stops listening for 300 ms) and
#      the put was taken for "never sent": either way 4b2fedd indexed the
#      entries twice;
#  1b  etcd answers "request timed out" and applies the put later: just
#      before the 1st, 2nd or 3rd request that follows (4b2fedd looked for its
#      nonce, then read the state: applied in between, the entries were
#      indexed twice);
#   2  after an unknown outcome (the put landed), every read fails (503
#      "request timed out", longer than the 15 s of retries): the entries
#      must be reported unknown, never failed (4b2fedd: failed).
# Checked by tests/cli/check_acked.py (every acknowledged line once at its
# offset, nothing stored twice, nothing failed stored) and `tarn fsck`
# (it reports an index that names one WAL section twice: item 4).
# A file:// WAL: the faults are etcd's. Needs TARN_TEST_ETCD.
. "$(dirname "$0")/lib.sh"
need_env TARN_TEST_ETCD
require_tool python3
unset TARN_HOME TARN_META TARN_WAL TARN_COMPACTED
src=${TARN_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
proxy_start "$TARN_TEST_ETCD"

unique_run
export TARN_HOME=$dir/home
export TARN_META="etcd://127.0.0.1:$pport?prefix=tarn-test/faults-$run"
export TARN_WAL="file://$dir/wal"
export TARN_COMPACTED="file://$dir/compacted"
"$TARN" init > /dev/null
"$TARN" stream create ns/s > /dev/null

runs=() n=0
append() { append_slowly "$@"; }
# The rule must have fired (else the case tested nothing).
fired() {
  local before=$1 now
  now=$(faults)
  [ "$now" -gt "$before" ] || fail "case $2: the proxy's fault never fired"
}

# 1a: the txn's answer lost on a reused connection (closed in order, or
# reset); libcurl's reconnect refused for 300 ms, or accepted at once.
for how in "fin=1 refuse_ms=300" "fin=1" "refuse_ms=300"; do
  f=$(faults)
  ctl lose has=LESS reused=1 $how > /dev/null
  append "lose${how//[^0-9a-z]/}"
  fired "$f" "1a $how"
done
# 1b: "request timed out", applied before the k-th request that follows.
for k in 1 2 3; do
  f=$(faults)
  ctl timeout has=LESS after=$k > /dev/null
  append "timeout$k"
  fired "$f" "1b after=$k"
done
# 1c: the put lands, its answer is held past the client's 5 s timeout, and
# meanwhile a compaction (`tarn compact`, straight to etcd) rewrites the log's
# records, the put's own last one in place (C3's CompareAndSet). The retry
# must not take that record for another's: cc6867b looked for its nonce
# there, found C3's, and indexed the entries again after it (the durability
# loop's duplicate). Now C3 keeps the nonce, and a retry after the log moved
# on is refused (unknown), never sent.
f=$(faults)
ctl delay ms=6000 has=LESS reused=1 > /dev/null
n=$((n + 1)) # as append_slowly, with the compaction beside it
for i in 1 2 3 4; do echo "compact-$n-$i"; done > "$dir/in.$n"
(for i in 1 2 3 4; do echo "compact-$n-$i"; sleep 0.3; done) |
  "$TARN" append ns/s --batch-ms 0 --json > "$dir/out.$n" 2> "$dir/err.$n" &
apid=$!
pids+=($apid)
runs+=(--run "$dir/in.$n" "$dir/out.$n")
wait_until 10 eval '[ "$(faults)" -gt "$f" ]' || fail "case 1c: the proxy's fault never fired"
TARN_META="etcd://$TARN_TEST_ETCD?prefix=tarn-test/faults-$run" "$TARN" compact ns/s \
  > "$dir/compact.out" 2>&1 || fail "case 1c: tarn compact: $(cat "$dir/compact.out")"
wait "$apid" || true
# 2: the put answers "timed out" and lands at once; then every read answers
# "timed out" for longer than the 15 s of retries, so the put cannot learn
# that it landed: its entries must be unknown, not failed.
f=$(faults)
ctl timeout has=LESS after=1 > /dev/null
ctl status code=503 body=etcd-timeout path=/v3/kv/range count=400 after_fault=1 > /dev/null
append "unknown" 1
fired "$f" "2"
ctl clear > /dev/null

"$TARN" read ns/s --format json > "$dir/read.jsonl"
python3 "$src/tests/cli/check_acked.py" --read "$dir/read.jsonl" "${runs[@]}" > "$dir/check" ||
  fail "$(cat "$dir/check")"
grep -q '"status": *"unknown"' "$dir/out.$n" || fail "case 2: not unknown: $(cat "$dir/out.$n")"
"$TARN" fsck > "$dir/fsck" 2>&1 || fail "fsck: $(cat "$dir/fsck")"
echo ok
