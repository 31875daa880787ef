#!/usr/bin/env bash
# tarn compact / tasks / gc on a one-directory deployment: entries read the
# same after compaction, tasks are listed, gc --dry-run deletes nothing.
. "$(dirname "$0")/lib.sh"
export TARN_HOME="$dir/home"
unset TARN_META TARN_WAL TARN_COMPACTED
# a WAL grace short enough to wait out, and legal: 4001 > 2000 + 1000 + 1000
"$TARN" init --wal-grace-ms 4001 --max-publish-delay-ms 2000 --max-put-ms 1000 --skew-allowance-ms 1000 > /dev/null
"$TARN" stream create ns/s1 --partitions 2 > /dev/null
# one record per append run: a window longer than any run (EOF flushes), so
# a slow pipe under load cannot split a run into two records
for i in 1 2 3; do
  seq "$i"00 "$i"20 | "$TARN" append ns/s1 --batch-ms 60000 --quiet
  seq "$i"00 "$i"05 | "$TARN" append ns/s1 --partition 1 --batch-ms 60000 --quiet
done
"$TARN" read ns/s1 --format json > "$dir/before"
[ "$(wc -l < "$dir/before")" = 63 ] || fail "expected 63 entries before"

"$TARN" compact ns/s1 --json > "$dir/c.json"
python3 - "$dir/c.json" <<'P' || fail "compact --json"
import json, sys
r = json.load(open(sys.argv[1]))
assert len(r) == 1 and r[0]["s"] == 0 and r[0]["e"] == 63 and r[0]["records"] == 3, r
assert r[0]["dir"] == "ns/s1/" and all(f["name"].endswith(".parquet") for f in r[0]["files"]), r
P
ls "$TARN_HOME/compacted/ns/s1/" | grepq '\.parquet$' || fail "no parquet file"
ls "$TARN_HOME/compacted/ns/s1/" | grepq '\.index$' || fail "no companion"
"$TARN" read ns/s1 --format json > "$dir/after"
cmp "$dir/before" "$dir/after" || fail "entries differ after compaction"
out=$("$TARN" compact ns/s1)
[ -z "$out" ] || fail "second compaction did something: $out"

# --all runs tasks; tarn tasks lists them
"$TARN" compact --all > "$dir/all"
grep -q "ran 1" "$dir/all" || fail "compact --all: $(cat "$dir/all")"
"$TARN" tasks | grepq COMMITTED || fail "tasks table"
"$TARN" tasks --json | python3 -c 'import json,sys; t=json.load(sys.stdin); assert t[0]["state"]=="COMMITTED", t' ||
  fail "tasks --json"

# gc: the WAL objects are now unreferenced; within the grace period nothing
# goes; after it a dry run says what would go and deletes nothing
n=$(ls -R "$TARN_HOME/wal" | grep -c '\.wal$')
gc_records() { # FILE LABEL: a pass that records all n objects and deletes none
  "$TARN" gc --json > "$1"
  python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["stats"]["wal_unreferenced"]==int(sys.argv[2]) and j["stats"]["wal_deleted"]==0, j' "$1" "$n" ||
    fail "gc $2 pass: $(cat "$1")"
}
gc_records "$dir/gc1" first
# the second pass confirms the first-seen records: the grace counts from it
gc_records "$dir/gc1b" second
sleep 4.1
"$TARN" gc --dry-run > "$dir/gc2"
[ "$(grep -c '^would delete wal' "$dir/gc2")" = "$n" ] || fail "dry run: $(cat "$dir/gc2")"
[ "$(ls -R "$TARN_HOME/wal" | grep -c '\.wal$')" = "$n" ] || fail "dry run deleted"
"$TARN" gc > /dev/null
[ "$(ls -R "$TARN_HOME/wal" | grep -c '\.wal$' || true)" = 0 ] || fail "gc kept objects"
"$TARN" read ns/s1 --format json > "$dir/after2"
cmp "$dir/before" "$dir/after2" || fail "entries differ after gc"

# usage errors
set +e
"$TARN" compact > /dev/null 2>&1; [ $? = 2 ] || fail "compact without a log"
"$TARN" gc --bogus > /dev/null 2>&1; [ $? = 2 ] || fail "gc --bogus"
set -e
"$TARN" compact --help | grep "usage: tarn compact" >/dev/null || fail "help"
echo ok
