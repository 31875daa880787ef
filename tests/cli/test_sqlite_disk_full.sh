#!/usr/bin/env bash
# Issue 31 items 8 and 10 (docs/meta.md "Sessions", "Errors"): with the sqlite
# metadata store's disk full, read-only work — read, offsets, fsck — works
# (a handle writes its session row only at its first ephemeral record; the
# old code wrote one at every open and could read nothing), and a write says
# the disk is full and is a definite failure (the old code reported
# ROLLBACK's "no transaction is active", or a commit of unknown outcome).
# The disk: a 2 MiB tmpfs (needs root; skipped otherwise).
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || skip "mounting a small tmpfs needs root"
mnt="$dir/mnt"
mkdir -p "$mnt"
mount -t tmpfs -o size=2m tmpfs "$mnt" 2> /dev/null || skip "cannot mount a tmpfs here"
cleanup_hook() { umount "$mnt" 2> /dev/null || umount -l "$mnt"; }
export TARN_HOME="$dir/h"
unset TARN_META TARN_WAL TARN_COMPACTED
"$TARN" init --meta "sqlite:$mnt/meta.db" > /dev/null
"$TARN" stream create ns/s > /dev/null
seq 1 50 | "$TARN" append ns/s --quiet
# another process keeps the database open, as a running `tarn serve` would,
# so SQLite's shared-memory file (which every reader maps) stays allocated
python3 -c 'import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1]); c.execute("SELECT count(*) FROM kv").fetchall()
print("open", flush=True); time.sleep(120)' "$mnt/meta.db" > "$dir/holder" &
pids+=("$!")
wait_until 10 grep -q open "$dir/holder" || fail "the holder did not open the database"
dd if=/dev/zero of="$mnt/fill" bs=4k 2> /dev/null || true
[ "$(df --output=avail "$mnt" | tail -1 | tr -d ' ')" -lt 8 ] || fail "the disk is not full"

# item 8: read-only work
"$TARN" read ns/s > "$dir/out.read" 2> "$dir/err.read" || fail "read on a full disk: $(cat "$dir/err.read")"
[ "$(cat "$dir/out.read")" = "$(seq 1 50)" ] || fail "read: $(head -3 "$dir/out.read")"
"$TARN" offsets ns/s > "$dir/out.offsets" 2> "$dir/err.offsets" ||
  fail "offsets on a full disk: $(cat "$dir/err.offsets")"
"$TARN" fsck > "$dir/out.fsck" 2> "$dir/err.fsck" || fail "fsck on a full disk: $(cat "$dir/err.fsck")"

# item 10: a write fails, definitely, saying why
set +e
seq 51 60 | "$TARN" append ns/s > "$dir/out.append" 2> "$dir/err.append"
rc=$?
set -e
[ "$rc" != 0 ] || fail "append on a full disk succeeded"
grep -qi "disk is full" "$dir/err.append" || fail "append: $(cat "$dir/err.append")"
! grep -qi "no transaction is active" "$dir/err.append" || fail "append: $(cat "$dir/err.append")"
grep -q " 0 of unknown outcome" "$dir/err.append" || fail "append: $(cat "$dir/err.append")"
! grep -q '^[0-9]' "$dir/out.append" || fail "offsets acknowledged on a full disk: $(cat "$dir/out.append")"

# room again: the same deployment writes and reads on
rm "$mnt/fill"
seq 51 60 | "$TARN" append ns/s --quiet
"$TARN" read ns/s > "$dir/out.read"
[ "$(cat "$dir/out.read")" = "$(seq 1 60)" ] || fail "after the disk had room: $(tail -3 "$dir/out.read")"
