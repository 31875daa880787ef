#!/usr/bin/env bash
# The embedded metadata file holds SCRAM keys (tarn kafka user) and producer
# state: it and its -wal and -shm files are created 0600 whatever the umask
# lets through (issue 33: meta.db was created 0644); a file that exists keeps
# the mode its operator gave it.
. "$(dirname "$0")/lib.sh"
unique_run
unset TARN_META TARN_WAL TARN_COMPACTED
export TARN_HOME=$dir/home
umask 022
"$TARN" init > /dev/null 2>&1 || fail "init"
"$TARN" stream create ns/s > /dev/null 2>&1 || fail "stream create"
seq 3 | "$TARN" append ns/s --quiet 2> /dev/null || fail "append"
for f in meta.db meta.db-wal meta.db-shm; do
  [ -e "$TARN_HOME/$f" ] || continue
  mode=$(stat -c %a "$TARN_HOME/$f")
  [ "$mode" = 600 ] || fail "$f was created with mode $mode, not 600"
done
[ -e "$TARN_HOME/meta.db" ] || fail "no meta.db in $TARN_HOME"
# an operator's own mode stands
chmod 640 "$TARN_HOME/meta.db"
"$TARN" stream list > /dev/null 2>&1 || fail "stream list"
mode=$(stat -c %a "$TARN_HOME/meta.db")
[ "$mode" = 640 ] || fail "an open changed meta.db's mode 640 to $mode"
echo "ok: meta.db and its files are created 0600"
