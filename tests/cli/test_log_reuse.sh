#!/usr/bin/env bash
# Reproductions of the durability issue (#11 part 3), with the command line:
#  - `append --log 1` wrote to a log the catalog never allocated, and the next
#    `stream create` got log 1 and read that data (LS-087);
#  - `--log L` reached a log whose stream was dropped.
. "$(dirname "$0")/lib.sh"
export TARN_HOME="$dir/home"
unset TARN_META TARN_WAL TARN_COMPACTED
"$TARN" init > /dev/null

# LS-087: raw access to a log no stream has is refused, and writes nothing.
set +e; printf 'x\n' | "$TARN" append --log 1 --quiet 2> "$dir/err"; rc=$?; set -e
[ "$rc" -ne 0 ] || fail "append --log 1 wrote to a log the catalog never allocated"
grep -q "no stream" "$dir/err" || fail "append --log 1 message: $(cat "$dir/err")"
set +e; "$TARN" read --log 1 > /dev/null 2>&1; rc=$?; set -e
[ "$rc" -ne 0 ] || fail "read --log 1 read a log the catalog never allocated"
"$TARN" stream create default/fresh > /dev/null
[ -z "$("$TARN" read default/fresh)" ] || fail "a new stream reads someone else's data"

# --log L of an allocated log works, and reads what NS/NAME reads.
log=$("$TARN" stream describe default/fresh --json |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["log_ids"][0])')
printf 'y\n' | "$TARN" append --log "$log" --quiet
[ "$("$TARN" read default/fresh)" = y ] || fail "append --log $log did not reach default/fresh"
[ "$("$TARN" read --log "$log")" = y ] || fail "read --log $log"

# After the drop, --log L is refused.
"$TARN" stream drop default/fresh > /dev/null
set +e; "$TARN" read --log "$log" > /dev/null 2> "$dir/err"; rc=$?; set -e
[ "$rc" -ne 0 ] || fail "read --log $log of a dropped stream"
set +e; printf 'z\n' | "$TARN" append --log "$log" --quiet 2> "$dir/err"; rc=$?; set -e
[ "$rc" -ne 0 ] || fail "append --log $log of a dropped stream"
echo ok
