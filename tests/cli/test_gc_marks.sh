#!/usr/bin/env bash
# LS-086, the reclaim pass marks (docs/compaction.md "Pass marks"): every
# `tarn gc` pass writes an ephemeral l-{id} (it needs a live metadata-store
# session) and a persistent p-{kind}-{id} before its index scan and removes
# them at its end. Shown on the default sqlite store and on etcd: a pass
# still deletes what is past its grace (a mark left behind would make the
# next pass confirm every stamp again, or delete nothing), and leaves no
# mark; the sqlite store is read back for the marks too.
. "$(dirname "$0")/lib.sh"
unset TARN_META TARN_WAL TARN_COMPACTED

# CASE INIT-FLAGS...: a grace short enough to wait out, and legal:
# 4001 > 2000 + 1000 + 1000
gc_case() {
  local name=$1; shift
  export TARN_HOME="$dir/$name"
  "$TARN" init "$@" --wal-grace-ms 4001 --max-publish-delay-ms 2000 --max-put-ms 1000 \
    --skew-allowance-ms 1000 > /dev/null || fail "$name: init"
  "$TARN" stream create ns/s > /dev/null
  for i in 1 2 3; do
    seq "$i"00 "$i"40 | "$TARN" append ns/s --batch-ms 60000 --quiet
  done
  "$TARN" compact ns/s > /dev/null
  # the first pass records the unreferenced WAL objects, the second confirms
  # the records: the grace counts from it; neither deletes
  local n
  for n in 1 2; do
    "$TARN" gc --json > "$dir/$name.gc$n" 2> "$dir/$name.gc$n.err" || fail "$name: gc $n"
    python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["stats"]
assert s["wal_unreferenced"] == 3 and s["wal_deleted"] == 0, s' "$dir/$name.gc$n" ||
      fail "$name: gc $n: $(cat "$dir/$name.gc$n")"
  done
  # the deployment's grace, and on etcd its clock's tick: whole seconds, so a
  # deletion waits for grace + 1 s on it, and readings 7 s apart differ by 6
  sleep "$wait_s"
  "$TARN" gc --json > "$dir/$name.gc3" 2> "$dir/$name.gc3.err" || fail "$name: gc 3"
  python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["stats"]
assert s["wal_deleted"] == 3 and s["wal_unreferenced"] == 3, s' "$dir/$name.gc3" ||
    fail "$name: the pass past the grace deleted nothing: $(cat "$dir/$name.gc3")"
  "$TARN" read ns/s | wc -l | grepq -x 123 || fail "$name: read after gc"
}

wait_s=4.1
gc_case sqlite
# the sqlite store read back: no pass mark (l-, p-) is left
python3 - "$dir/sqlite" <<'P' || fail "sqlite: pass marks left"
import os, sqlite3, sys
seen = 0
for d, _, fs in os.walk(sys.argv[1]):
    for f in fs:
        p = os.path.join(d, f)
        with open(p, "rb") as h:
            if h.read(16) != b"SQLite format 3\0":
                continue
        c = sqlite3.connect(p)
        if not c.execute("SELECT 1 FROM sqlite_master WHERE name = 'kv'").fetchone():
            continue
        seen += 1
        left = [r[0] for r in c.execute("SELECT key FROM kv WHERE part = 'tarn-reclaim'")
                if r[0].startswith(("l-", "p-"))]
        assert not left, left
assert seen, "no sqlite metadata store under " + sys.argv[1]
P

need_env TARN_TEST_ETCD
unique_run
wait_s=7.1
gc_case etcd --meta "etcd://$TARN_TEST_ETCD?prefix=tarn-test/gcmarks-$run" --wal "file://$dir/etcd-wal" \
  --compacted "file://$dir/etcd-compacted"
echo ok
