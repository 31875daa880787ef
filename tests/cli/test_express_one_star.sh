#!/usr/bin/env bash
# At most one live process per star (issue 30 item 2; docs/express.md
# "Leadership"). 1: a second `tarn append --star S` while a live process
# holds S fails at once (exit 1, naming the holder) and acknowledges nothing.
# 2: two plain `tarn append` (no --star, no TARN_STAR) on one host to one log
# at the same time: the second derives a star no live process holds ({host}.1)
# and waits at the log's gate until the first leaves it, instead of being
# admitted as "the same star restarted" and fencing the live writer's epoch
# (on 4b2fedd: offsets acknowledged to both, acknowledged lines missing).
# check_acked.py checks every offset each run printed; then tarn fsck.
# Argument: sqlite (default) or etcd (test_express_one_star_s3.sh).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/xlead_env.sh"
mode=${1:-sqlite}
xlead_deploy "$mode"
"$TARN" stream create fast/s --class express > /dev/null
"$TARN" stream create fast/d --class express > /dev/null
pace() { n=0; while IFS= read -r l; do echo "$l"; n=$((n + 1)); [ $((n % 20)) = 0 ] && sleep 0.02; done < "$1"; }
gen() { i=0; while [ $i -lt "$2" ]; do echo "$1-$i"; i=$((i + 1)); done; }

# 1. an explicit star held by a live process
gen a 800 > "$dir/in.a"
gen b 100 > "$dir/in.b"
pace "$dir/in.a" | "$TARN" append fast/s --star s1 --json > "$dir/out.a" 2> "$dir/a.err" &
a=$!
pids+=("$a")
wait_until 30 eval '[ "$(acked "$dir/out.a")" -ge 100 ]' || fail "A acknowledged fewer than 100 lines"
st=0
timeout 30 "$TARN" append fast/s --star s1 --json < "$dir/in.b" > "$dir/out.b" 2> "$dir/b.err" || st=$?
[ "$st" = 1 ] || fail "a second process of star s1: exit $st, not 1"
grep -q "star s1 is held by a live process (host=" "$dir/b.err" || fail "no holder named: $(cat "$dir/b.err")"
[ "$(acked "$dir/out.b")" = 0 ] || fail "the second process of s1 acknowledged lines"
wait_until 60 eval '! kill -0 "$a" 2> /dev/null' || fail "A did not end within 60 s"
wait "$a" || fail "A: exit $?"
xlead_check fast/s "$dir/in.a" "$dir/out.a" "$dir/in.b" "$dir/out.b"

# 2. two plain tarn append on one host, one log
gen c 800 > "$dir/in.c"
gen d 800 > "$dir/in.d"
pace "$dir/in.c" | "$TARN" append fast/d --json > "$dir/out.c" 2> "$dir/c.err" &
c=$!
pids+=("$c")
wait_until 30 eval '[ "$(acked "$dir/out.c")" -ge 100 ]' || fail "C acknowledged fewer than 100 lines"
pace "$dir/in.d" | "$TARN" append fast/d --json > "$dir/out.d" 2> "$dir/d.err" &
d=$!
pids+=("$d")
# on 4b2fedd the two writers could hang each other (settlement stuck)
wait_until 60 eval '! kill -0 "$c" 2> /dev/null && ! kill -0 "$d" 2> /dev/null' ||
  fail "C and D did not end within 60 s"
wait "$c" || fail "C: exit $?"
wait "$d" || fail "D: exit $?"
echo "C: $(acked "$dir/out.c") acknowledged, D: $(acked "$dir/out.d") acknowledged"
xlead_check fast/d "$dir/in.c" "$dir/out.c" "$dir/in.d" "$dir/out.d"
[ "$(acked "$dir/out.c")" = 800 ] && [ "$(acked "$dir/out.d")" = 800 ] || fail "not every line acknowledged"
echo "ok"
