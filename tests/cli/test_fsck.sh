#!/usr/bin/env bash
# tarn fsck on a one-directory (sqlite: + file://) deployment: clean, then with
# planted faults (a deleted WAL object, a corrupt index value).
. "$(dirname "$0")/lib.sh"
export TARN_HOME="$dir/home"
"$TARN" init > /dev/null
"$TARN" stream create ns/events --partitions 2 > /dev/null
for i in 1 2 3; do
  printf 'a%s\nb%s\n' "$i" "$i" | "$TARN" append ns/events --batch-ms 60000 --quiet
  printf 'c%s\n' "$i" | "$TARN" append ns/events --partition 1 --batch-ms 60000 --quiet
done

# healthy: exit 0, a summary line, JSON with ok true
out=$("$TARN" fsck) || fail "healthy exit $?"
echo "$out" | grepq '^ok: 1 streams, 2 logs, 6 index records, 9 entries read, 0 warnings, 0 faults$' \
  || fail "summary: $out"
"$TARN" fsck --json | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert r["ok"] is True and r["faults"] == [] and r["logs"] == 2 and r["entries_read"] == 9, r'
[ -z "$("$TARN" fsck --quiet)" ] || fail "quiet printed"

# a WAL object deleted: exit 1, the fault names the object, the log and the key
obj=$(cd "$TARN_HOME/wal" && find . -name '*.wal' | head -1 | sed 's|^\./||')
rm "$TARN_HOME/wal/$obj"
set +e
"$TARN" fsck > "$dir/out"; rc=$?
set -e
[ $rc -eq 1 ] || fail "faulty exit $rc"
grep -q "^FAULT wal-missing .* object $obj: " "$dir/out" || fail "wal-missing: $(cat "$dir/out")"
grep -q '^FAULTS: ' "$dir/out" || fail "summary"
set +e
"$TARN" fsck --json > "$dir/json"; rc=$?
set -e
[ $rc -eq 1 ] || fail "json exit $rc"
python3 - "$dir/json" "$obj" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["ok"] is False
kinds = {f["kind"] for f in r["faults"]}
assert "wal-missing" in kinds and "read" in kinds, kinds
f = [f for f in r["faults"] if f["kind"] == "wal-missing"][0]
assert f["object"] == sys.argv[2] and len(f["key"]) == 62 and f["log_id"] >= 1, f
PY
# --no-read finds the missing object without the reader
set +e
"$TARN" fsck --no-read --json > "$dir/json"; rc=$?
set -e
[ $rc -eq 1 ] || fail "no-read exit $rc"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["entries_read"]==0 and {f["kind"] for f in r["faults"]}=={"wal-missing"}, r' "$dir/json"

# usage errors exit 2; --help exits 0; an uninitialised home fails
set +e
"$TARN" fsck --bogus 2> /dev/null; [ $? -eq 2 ] || fail "bad option"
"$TARN" fsck extra 2> /dev/null; [ $? -eq 2 ] || fail "extra argument"
TARN_HOME="$dir/none" "$TARN" fsck 2> /dev/null; [ $? -ne 0 ] || fail "no deployment"
set -e
"$TARN" fsck --help | grep -- "--no-read" >/dev/null || fail "help"
echo ok
