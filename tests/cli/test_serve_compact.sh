#!/usr/bin/env bash
# tarn serve compacts: reads still return every entry and tarn fsck is clean;
# two and three nodes on one sqlite: + file:// deployment converge without
# double work (each range's files written once: no compacted file is left
# that no index record names).
. "$(dirname "$0")/lib.sh"

fast=(--listen 127.0.0.1:0 --compact-interval-ms 100 --compact-max-age-ms 0 --stats-interval-ms 100
      --compact-workers 2)

# fills a fresh home: streams ns/a (3 partitions) and ns/b, several batches each
fill() {
  export TARN_HOME="$dir/$1"
  # a WAL grace short enough to wait out, and legal: 4001 > 2000 + 1000 + 1000
  "$TARN" init --wal-grace-ms 4001 --max-publish-delay-ms 2000 --max-put-ms 1000 --skew-allowance-ms 1000 > /dev/null
  "$TARN" stream create ns/a --partitions 3 > /dev/null
  "$TARN" stream create ns/b > /dev/null
  for i in 1 2 3 4; do
    for p in 0 1 2; do
      printf 'a%s-%s-x\na%s-%s-y\n' "$p" "$i" "$p" "$i" | "$TARN" append ns/a --partition $p --batch-ms 60000 --quiet
    done
    printf 'b-%s\n' "$i" | "$TARN" append ns/b --batch-ms 60000 --quiet
  done
}
expected() { # every entry, in order, of each partition
  for p in 0 1 2; do for i in 1 2 3 4; do printf 'a%s-%s-x\na%s-%s-y\n' "$p" "$i" "$p" "$i"; done; done
  for i in 1 2 3 4; do printf 'b-%s\n' "$i"; done
}
actual() {
  for p in 0 1 2; do "$TARN" read ns/a --partition $p; done
  "$TARN" read ns/b
}
# starts n nodes; waits until no RAW record is left (fsck: every record
# PARQUET means records == compacted ranges) or fails after 30 s
run_nodes() {
  local n=$1
  local mypids=()
  for k in $(seq "$n"); do
    "$TARN" serve "${fast[@]}" 2> "$dir/log.$k" &
    mypids+=($!)
    pids+=($!)
  done
  for _ in $(seq 300); do
    raw=$(python3 - "$TARN" <<'PY'
import json, subprocess, sys
# RAW records left: every index record minus the PARQUET ones
r = json.loads(subprocess.run([sys.argv[1], "fsck", "--json", "--no-read"], capture_output=True).stdout)
print(r["records"] - r["compacted_records"] if "compacted_records" in r else -1)
PY
)
    [ "$raw" = 0 ] && break
    sleep 0.1
  done
  [ "$raw" = 0 ] || fail "$n node(s): RAW records left: $raw"
  for p in "${mypids[@]}"; do kill -TERM "$p"; done
  for p in "${mypids[@]}"; do
    set +e; wait "$p"; rc=$?; set -e
    [ $rc -eq 0 ] || fail "node exit $rc"
  done
}
check() {
  [ "$(actual)" = "$(expected)" ] || fail "reads after compaction: $(actual)"
  "$TARN" fsck --json > "$dir/fsck.json" || fail "fsck: $(cat "$dir/fsck.json")"
  on_disk=$(find "$TARN_HOME/compacted" -name '*.parquet' | wc -l)
  named=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["compacted_files"])' "$dir/fsck.json")
  [ "$on_disk" -gt 0 ] || fail "nothing compacted"
  [ "$on_disk" = "$named" ] || fail "double work: $on_disk files on disk, $named named by the index"
}

fill one
run_nodes 1
check
# the node's metrics said so too
grep -q 'compaction planned' "$dir/log.1" || fail "no planning logged"

# WAL collection: every record is PARQUET now, so no WAL object is named; a
# node with a short grace period deletes them all (LS-085: unreferenced only),
# reads still return every entry, and its metrics count the deletions
[ "$(find "$TARN_HOME/wal" -name '*.wal' | wc -l)" -gt 0 ] || fail "no WAL objects before gc"
walbytes=$(find "$TARN_HOME/wal" -name '*.wal' -printf '%s\n' | awk '{ t += $1 } END { print t }')
serve_start "$dir/log.gc" --listen 127.0.0.1:0 --no-compact --wal-grace-ms 4001 --wal-gc-interval-ms 100 \
  --reclaim-interval-ms 100
for _ in $(seq 200); do
  [ "$(find "$TARN_HOME/wal" -name '*.wal' | wc -l)" = 0 ] && break
  sleep 0.1
done
[ "$(find "$TARN_HOME/wal" -name '*.wal' | wc -l)" = 0 ] || fail "WAL objects left after gc"
sleep 0.3
curl -sf "http://127.0.0.1:$port/metrics" > "$dir/m.gc"
series() { awk -v k="$1" '$1 == k { print $2 }' "$dir/m.gc"; }
deleted=$(series 'tarn_reclaimed_objects_total{root="wal",reason="wal"}')
[ "${deleted:-0}" -gt 0 ] || fail "no WAL deletion counted"
# their bytes, sized without a HEAD per deletion
[ "$(series 'tarn_reclaimed_bytes_total{root="wal",reason="wal"}')" = "$walbytes" ] ||
  fail "reclaimed bytes: $(grep reclaimed_bytes "$dir/m.gc"), on disk $walbytes"
[ "$(series 'tarn_objstore_requests_total{op="head",backend="file"}')" = "" ] ||
  fail "HEAD requests: $(grep 'op="head"' "$dir/m.gc")"
grep -q 'INFO reclaimed job=wal-gc' "$dir/log.gc" || fail "no reclaimed log line"
stop_term "$pid"
check

for n in 2 3; do
  fill "multi$n"
  run_nodes "$n"
  check
done
echo ok
