#!/usr/bin/env bash
# #11 part 6: a root the deployment creates is durable — the parent of every
# directory `tarn init` creates (TARN_HOME, the file:// roots, the sqlite
# file's directory) is fsynced after the mkdir (src/util/dirs.c), checked
# on the system calls with strace.
. "$(dirname "$0")/lib.sh"
command -v strace > /dev/null || { echo "FAIL: this test needs strace" >&2; exit 1; }
unset TARN_META TARN_WAL TARN_COMPACTED TARN_HOME
# LeakSanitizer cannot run under ptrace (ASan builds); leaks are checked elsewhere
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" strace -f -qq -e trace=mkdir,mkdirat,open,openat,fsync -o "$dir/trace" \
  "$TARN" init --home "$dir/x/home" --wal "file://$dir/y/wal" > /dev/null
python3 - "$dir/trace" "$dir" <<'PY'
import os, re, sys
mk = re.compile(r'mkdir(?:at)?\((?:AT_FDCWD, )?"([^"]+)", \w+\)\s+= 0')
op = re.compile(r'open(?:at)?\((?:AT_FDCWD, )?"([^"]+)", [^)]*O_DIRECTORY[^)]*\)\s+= (\d+)')
fs = re.compile(r'fsync\((\d+)\)\s+= 0')
created, synced, fds = [], [], {}
for i, l in enumerate(open(sys.argv[1]).read().splitlines()):
    if m := mk.search(l):
        created.append((i, m.group(1)))
    elif m := op.search(l):
        fds[m.group(2)] = m.group(1)
    elif (m := fs.search(l)) and m.group(1) in fds:
        synced.append((i, fds[m.group(1)]))
made = [d for _, d in created]
for w in ("x", "x/home", "y", "y/wal", "x/home/compacted"):
    assert os.path.join(sys.argv[2], w) in made, f"{w} not created: {made}"
for i, d in created:
    parent = os.path.dirname(d)
    assert any(p == parent and j > i for j, p in synced), f"parent of {d} not fsynced after its mkdir"
PY
echo ok
