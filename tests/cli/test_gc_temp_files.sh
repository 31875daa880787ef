#!/usr/bin/env bash
# Issue 31 item 9 (docs/objstore.md "Create-only and crash-safe put"): the
# ".tmp-" files a killed file:// put leaves are removed by gc once untouched
# for the root's grace (WAL: the WAL grace; compacted: the orphan grace); a
# younger one (a put that may still link it) stays, and a dry run removes
# nothing. The old code never removed them.
. "$(dirname "$0")/lib.sh"
export TARN_HOME="$dir/h"
unset TARN_META TARN_WAL TARN_COMPACTED
"$TARN" init --wal-grace-ms 4000 --max-publish-delay-ms 1000 --max-put-ms 1000 \
  --skew-allowance-ms 1000 > /dev/null
"$TARN" stream create ns/s > /dev/null
seq 1 5 | "$TARN" append ns/s --quiet
mkdir -p "$TARN_HOME/wal/ab" "$TARN_HOME/compacted/ns/s"
old=("$TARN_HOME/wal/ab/.tmp-999-1-1" "$TARN_HOME/wal/.tmp-999-2-2"
  "$TARN_HOME/compacted/ns/s/.tmp-999-3-3")
young=("$TARN_HOME/wal/ab/.tmp-999-4-4" "$TARN_HOME/compacted/ns/s/.tmp-999-5-5")
for f in "${old[@]}" "${young[@]}"; do echo partial > "$f"; done
for f in "${old[@]}"; do touch -d '-2 hours' "$f"; done
"$TARN" gc --dry-run > /dev/null
for f in "${old[@]}" "${young[@]}"; do [ -f "$f" ] || fail "a dry run removed $f"; done
"$TARN" gc --json --orphan-grace-ms 3600000 > "$dir/out"
python3 -c 'import json,sys; n=json.load(open(sys.argv[1]))["stats"]["temp_files_removed"]
assert n == 3, n' "$dir/out" || fail "gc: $(cat "$dir/out")"
for f in "${old[@]}"; do [ ! -e "$f" ] || fail "gc left $f"; done
for f in "${young[@]}"; do [ -f "$f" ] || fail "gc removed the young $f"; done
"$TARN" read ns/s > "$dir/out.read"
[ "$(cat "$dir/out.read")" = "$(seq 1 5)" ] || fail "entries changed"
