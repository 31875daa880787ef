#!/usr/bin/env bash
# Two and three `tarn serve` nodes on one etcd:// + s3:// deployment compact
# disjoint tasks and converge: every record ends PARQUET, reads return every
# entry, tarn fsck is clean, and no compacted file is left that no record
# names (no range written twice). The sqlite: + file:// counterpart is
# test_serve_compact.sh. Needs TARN_TEST_ETCD and TARN_TEST_S3_URI (+ AWS_*)
# from `eval "$(scripts/servers.sh start)"`: skipped without them, failed in CI.
. "$(dirname "$0")/lib.sh"
need_env TARN_TEST_ETCD TARN_TEST_S3_URI
unset TARN_HOME TARN_META TARN_WAL TARN_COMPACTED

fast=(--listen 127.0.0.1:0 --compact-interval-ms 100 --compact-max-age-ms 0 --stats-interval-ms 200
      --compact-workers 2 --no-wal-gc --no-reclaim)

# A deployment of its own per run: etcd and the bucket keep what earlier runs wrote.
deployment() {
  local run
  run=$(date +%s%N)-$$-$1
  export TARN_HOME="$dir/$1"
  export TARN_META="etcd://$TARN_TEST_ETCD?prefix=tarn-test/serve-$run"
  export TARN_WAL="$TARN_TEST_S3_URI/serve-$run/wal"
  export TARN_COMPACTED="$TARN_TEST_S3_URI/serve-$run/compacted"
  "$TARN" init > /dev/null
  "$TARN" stream create ns/a --partitions 3 > /dev/null
  "$TARN" stream create ns/b > /dev/null
  for i in 1 2 3; do
    for p in 0 1 2; do
      printf 'a%s-%s-x\na%s-%s-y\n' "$p" "$i" "$p" "$i" | "$TARN" append ns/a --partition $p --batch-ms 60000 --quiet
    done
    printf 'b-%s\n' "$i" | "$TARN" append ns/b --batch-ms 60000 --quiet
  done
}
expected() {
  for p in 0 1 2; do for i in 1 2 3; do printf 'a%s-%s-x\na%s-%s-y\n' "$p" "$i" "$p" "$i"; done; done
  for i in 1 2 3; do printf 'b-%s\n' "$i"; done
}
actual() {
  for p in 0 1 2; do "$TARN" read ns/a --partition $p; done
  "$TARN" read ns/b
}
raw_left() { # index records that are not PARQUET yet
  "$TARN" fsck --json --no-read | python3 -c '
import json, sys
r = json.load(sys.stdin)
print(r["records"] - r["compacted_records"])'
}

for n in 2 3; do
  deployment "nodes$n"
  mine=()
  for k in $(seq "$n"); do
    "$TARN" serve "${fast[@]}" 2> "$dir/log.$n.$k" &
    mine+=($!)
    pids+=($!)
  done
  raw=-1
  for _ in $(seq 300); do
    raw=$(raw_left) || raw=-1
    [ "$raw" = 0 ] && break
    sleep 0.2
  done
  [ "$raw" = 0 ] || fail "$n nodes: RAW records left: $raw"
  for p in "${mine[@]}"; do kill -TERM "$p"; done
  for p in "${mine[@]}"; do
    set +e; wait "$p"; rc=$?; set -e
    [ $rc -eq 0 ] || fail "$n nodes: a node exited $rc"
  done
  [ "$(actual)" = "$(expected)" ] || fail "$n nodes: reads after compaction: $(actual)"
  "$TARN" fsck --json > "$dir/fsck.json" || fail "$n nodes: fsck: $(cat "$dir/fsck.json")"
  # every compacted file is named by a record: no range was compacted twice
  "$TARN" gc --dry-run --orphan-grace-ms 0 --json > "$dir/gc.json"
  python3 - "$dir/gc.json" "$dir/fsck.json" <<'PY' || fail "$n nodes: $(cat "$dir/gc.json")"
import json, sys
gc, fsck = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
s = gc["stats"]
assert s["compacted_orphans"] == 0, s
assert fsck["compacted_files"] > 0, fsck
# each file has its companion: listed = 2 x named
assert s["compacted_listed"] == 2 * fsck["compacted_files"], (s, fsck["compacted_files"])
PY
  grep -q 'compaction planned' "$dir"/log.$n.* || fail "$n nodes: no planning logged"
done
echo ok
