#!/usr/bin/env bash
# tarn gc reports the bytes it deletes (and, with --dry-run, would delete):
# per object and per kind, equal to the sizes of the files actually removed.
. "$(dirname "$0")/lib.sh"
export TARN_HOME="$dir/home"
unset TARN_META TARN_WAL TARN_COMPACTED
# a grace short enough to wait out, and legal: 4001 > 2000 + 1000 + 1000
"$TARN" init --wal-grace-ms 4001 --max-publish-delay-ms 2000 --max-put-ms 1000 \
  --skew-allowance-ms 1000 > /dev/null
"$TARN" stream create ns/s1 > /dev/null
for i in 1 2 3; do
  seq "$i"00 "$i"40 | "$TARN" append ns/s1 --batch-ms 60000 --quiet
done
"$TARN" compact ns/s1 > /dev/null
# the WAL objects are now unreferenced: a first pass only records them, the
# second confirms the records (the grace counts from it)
"$TARN" gc --json > "$dir/gc0"
"$TARN" gc --json > "$dir/gc0b"

# name -> size of every WAL object on disk
sizes() {
  python3 - "$TARN_HOME/wal" <<'P'
import json, os, sys
root = sys.argv[1]
print(json.dumps({os.path.relpath(os.path.join(d, f), root): os.path.getsize(os.path.join(d, f))
                  for d, _, fs in os.walk(root) for f in fs if f != "tarn-deployment"}))
P
}
sizes > "$dir/before"
sleep 4.1 # the deployment's grace
"$TARN" gc --dry-run --json > "$dir/dry"
"$TARN" gc --dry-run > "$dir/dry.txt"
"$TARN" gc --json > "$dir/real"
sizes > "$dir/after"
python3 - "$dir/before" "$dir/after" "$dir/dry" "$dir/real" <<'P' || fail "bytes: $(cat "$dir/dry" "$dir/real")"
import json, sys
before, after, dry, real = (json.load(open(p)) for p in sys.argv[1:])
gone = {n: s for n, s in before.items() if n not in after}
assert gone and not after, (before, after)
assert dry["dry_run"] and not real["dry_run"]
for run in (dry, real):
    wal = [d for d in run["deleted"] if d["kind"] == "wal"]
    assert {d["name"]: d["bytes"] for d in wal} == gone, (wal, gone)
    assert run["stats"]["wal_deleted"] == len(gone), run["stats"]
    assert run["stats"]["wal_deleted_bytes"] == sum(gone.values()), run["stats"]
    assert run["stats"]["compacted_deleted_bytes"] == 0, run["stats"]
    assert run["stats"]["trimmed_files_deleted_bytes"] == 0, run["stats"]
P
n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$dir/before")
total=$(python3 -c 'import json,sys; print(sum(json.load(open(sys.argv[1])).values()))' "$dir/before")
[ "$(grep -c '^would delete wal .* [0-9][0-9]* bytes$' "$dir/dry.txt")" = "$n" ] ||
  fail "dry run text: $(cat "$dir/dry.txt")"
grep -q "$n would be deleted ($total bytes)" "$dir/dry.txt" || fail "summary: $(cat "$dir/dry.txt")"

# files of trimmed records: the bytes of the Parquet files and companions
seq 500 510 | "$TARN" append ns/s1 --batch-ms 60000 --quiet
"$TARN" trim ns/s1 --through 122 > /dev/null
ctotal=$(python3 - "$TARN_HOME/compacted" <<'P'
import os, sys
print(sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(sys.argv[1]) for f in fs
          if f != "tarn-deployment"))
P
)
[ "$ctotal" -gt 0 ] || fail "no compacted files"
"$TARN" gc --json > "$dir/trim"
python3 - "$dir/trim" "$ctotal" <<'P' || fail "trimmed bytes: $(cat "$dir/trim")"
import json, sys
j, total = json.load(open(sys.argv[1])), int(sys.argv[2])
assert j["stats"]["trimmed_files_deleted"] == 2, j["stats"]
assert j["stats"]["trimmed_files_deleted_bytes"] == total, (j["stats"], total)
assert sum(d.get("bytes", 0) for d in j["deleted"] if d["kind"] == "trimmed") == total, j
assert [d for d in j["deleted"] if d["kind"] == "hard-trim"] and \
    all("bytes" not in d for d in j["deleted"] if d["kind"] == "hard-trim"), j
P
[ -z "$(find "$TARN_HOME/compacted" -type f ! -name tarn-deployment)" ] || fail "compacted files left"
"$TARN" gc --help | grep "bytes" >/dev/null || fail "help says nothing of bytes"
echo ok
