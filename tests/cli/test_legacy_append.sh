#!/usr/bin/env bash
# LS-001 (issue 31): one format version per deployment. A legacy (v2) log on a
# one-directory (sqlite: + file://) deployment — the spec's §4.9 WAL object and
# its two v2 index records, written as Ursa wrote them (the object into the
# WAL root, the records into the sqlite store) — reads, and fsck says ok;
# `tarn append` to it is refused with an error naming the log and its version,
# and writes nothing. A version 3 log beside it makes the deployment mixed, and
# a v2 record after a log's v3 records makes that log mixed: fsck reports each
# as a version-mixed fault.
. "$(dirname "$0")/lib.sh"
export TARN_HOME="$dir/home"
"$TARN" init > /dev/null
old=$("$TARN" stream create ns/old --partitions 1 | sed -n 's/.*log IDs \([0-9]*\).*/\1/p')
[ -n "$old" ] || fail "no log id"
db=$(python3 - "$TARN_HOME" <<'P'
import os, sys
for d, _, fs in os.walk(sys.argv[1]):
    for f in fs:
        p = os.path.join(d, f)
        with open(p, "rb") as h:
            if h.read(16) == b"SQLite format 3\0":
                import sqlite3
                if sqlite3.connect(p).execute("SELECT 1 FROM sqlite_master WHERE name = 'kv'").fetchone():
                    print(p)
P
)
[ -n "$db" ] || fail "no sqlite metadata store under $TARN_HOME"
wal=$(find "$TARN_HOME" -type d -name wal | head -1)
[ -d "$wal" ] || fail "no WAL root"

# legacy LOG VERSION ENTRY...: writes the legacy index records of log LOG, one
# per "count:size:object:entry_id" (a v2 value when VERSION is 2), each at the
# next sequence key, as Ursa's sequenced put does (Appendix C)
legacy() {
  python3 - "$db" "$@" <<'P'
import sqlite3, sys, time
db, log, ver = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
c = sqlite3.connect(db, isolation_level=None, timeout=10)
c.execute("BEGIN IMMEDIATE")
part, prefix = str(log), "%020d-" % log
last = c.execute("SELECT key FROM kv WHERE part = ? AND key LIKE ? ORDER BY k DESC LIMIT 1",
                 (part, prefix + "%")).fetchone()
end, cum = (int(last[0][21:41]), int(last[0][42:62])) if last else (0, 0)
for e in sys.argv[4:]:
    n, size, obj, eid = e.split(":")
    end, cum = end + int(n), cum + int(size)
    key = "%s%020d-%020d" % (prefix, end, cum)
    val = "%020d-%020d-%s-%s" % (int(n), int(size), obj, eid) + ("-RAW" if ver == 2 else "")
    v = c.execute("UPDATE counter SET v = v + 1 WHERE id = 0 RETURNING v").fetchone()[0]
    c.execute("INSERT INTO kv(part, k, key, val, version, created, session) VALUES(?,?,?,?,?,?,0)",
              (part, b"\x01" + key.encode(), key, val.encode(), v, int(time.time() * 1000)))
c.execute("COMMIT")
P
}
# the §4.9 object: index_length 64, tuples (L, 0, 0, 5) and (L, 1, 5, 3), payload 01..08
python3 - "$wal/legacy-1.wal" "$old" <<'P'
import struct, sys
L = int(sys.argv[2])
open(sys.argv[1], "wb").write(struct.pack(">q4q4q", 64, L, 0, 0, 5, L, 1, 5, 3) + bytes(range(1, 9)))
P
legacy "$old" 2 2:5:legacy-1.wal:0 1:3:legacy-1.wal:1

[ "$("$TARN" read ns/old --format hex | awk '{print $NF}' | tr '\n' ' ')" = "0102030405 060708 " ] \
  || fail "legacy read: $("$TARN" read ns/old --format hex)"
"$TARN" fsck > "$dir/out" || fail "legacy log alone: fsck $?"

# the append is refused, names the log and its version, and writes nothing
set +e
echo new | "$TARN" append ns/old > "$dir/out.append" 2> "$dir/err.append"; rc=$?
set -e
[ $rc -ne 0 ] || fail "append to a legacy log succeeded"
grep -q "log $old is a legacy format version 2 log" "$dir/err.append" || fail "error: $(cat "$dir/err.append")"
grep -q "LS-001" "$dir/err.append" || fail "error names no rule: $(cat "$dir/err.append")"
"$TARN" fsck | grepq '^ok: 1 streams, 1 logs, 2 index records, 2 entries read' || fail "after refusal"

# a version 3 log beside it: the deployment mixes versions
new=$("$TARN" stream create ns/new --partitions 1 | sed -n 's/.*log IDs \([0-9]*\).*/\1/p')
printf 'a\nb\n' | "$TARN" append ns/new --quiet
set +e
"$TARN" fsck --json > "$dir/out.json"; rc=$?
set -e
[ $rc -eq 1 ] || fail "mixed deployment: fsck exit $rc"
python3 - "$dir/out.json" "$new" "$old" <<'P' || fail "mixed deployment: $(cat "$dir/out.json")"
import json, sys
r = json.load(open(sys.argv[1]))
f = [f for f in r["faults"] if f["kind"] == "version-mixed"]
# reported on whichever of the two logs fsck meets second, naming both
assert len(f) == 1 and f[0]["log_id"] in (int(sys.argv[2]), int(sys.argv[3])), f
m = f[0]["message"]
assert "deployment mixes format versions (LS-001)" in m, m
for log, ver in ((sys.argv[2], 3), (sys.argv[3], 2)):
    assert "log %s holds a version %d" % (log, ver) in m or "log %s version %d" % (log, ver) in m, m
assert len(r["faults"]) == 1, r["faults"]
P

# a v2 record after the v3 ones of log $new: that log mixes versions too
python3 - "$wal/legacy-2.wal" "$new" <<'P'
import struct, sys
open(sys.argv[1], "wb").write(struct.pack(">q4q", 32, int(sys.argv[2]), 0, 0, 1) + b"z")
P
legacy "$new" 2 1:1:legacy-2.wal:0
set +e
"$TARN" fsck > "$dir/out"; rc=$?
set -e
[ $rc -eq 1 ] || fail "mixed log: fsck exit $rc"
grep -q "^FAULT version-mixed .*log $new mixes format versions (LS-001)" "$dir/out" \
  || fail "mixed log: $(cat "$dir/out")"
echo ok
