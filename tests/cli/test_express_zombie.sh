#!/usr/bin/env bash
# A fenced writer must not keep acknowledging (issue 30 item 1; docs/express.md
# "Leadership"). Writer A (star za) appends to an express stream and is
# stopped (SIGSTOP) past its session; writer B (star zb) opens the log: its
# gate finds A's lease gone, fences and settles A's epoch, and appends. A
# resumes: its slots meet the fence's poison, it rolls, and its mint of a new
# epoch must fail (its star lease ended with its session), so it acknowledges
# nothing in a new epoch. On 4b2fedd A minted, republished its unacknowledged
# entries at offsets B had already handed out and acknowledged them: offsets
# acknowledged twice, A's lines not in the log. check_acked.py checks every
# offset either run printed; then tarn fsck. Argument: sqlite (default) or
# etcd (test_express_zombie_s3.sh: etcd + radosgw buckets).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/xlead_env.sh"
mode=${1:-sqlite}
xlead_deploy "$mode"
"$TARN" stream create fast/z --class express > /dev/null

i=0; while [ $i -lt 4000 ]; do echo "a-$i"; i=$((i + 1)); done > "$dir/in.a"
i=0; while [ $i -lt 300 ]; do echo "b-$i"; i=$((i + 1)); done > "$dir/in.b"
# A reads its lines in bursts of 20 every 20 ms: it is mid-stream when stopped
( n=0; while IFS= read -r l; do echo "$l"; n=$((n + 1)); [ $((n % 20)) = 0 ] && sleep 0.02; done < "$dir/in.a" ) |
  "$TARN" append fast/z --star za --json > "$dir/out.a" 2> "$dir/a.err" &
a=$!
pids+=("$a")
wait_until 30 eval '[ "$(acked "$dir/out.a")" -ge 300 ]' || fail "A acknowledged fewer than 300 lines in 30 s"
xlead_stop "$a" # outside a sqlite write transaction: B must not wait for A
# past A's session (etcd grants no lease under its minimum TTL: longer there)
pause=$((session_ms * 3))
[ "$mode" = etcd ] && [ $pause -lt 5000 ] && pause=5000
sleep "$(awk -v ms=$pause 'BEGIN { printf "%.3f", ms / 1000 }')"
timeout 60 "$TARN" append fast/z --star zb --json < "$dir/in.b" > "$dir/out.b" 2> "$dir/b.err" ||
  fail "B: exit $?"
[ "$(acked "$dir/out.b")" = 300 ] || fail "B acknowledged $(acked "$dir/out.b") of 300"
kill -CONT "$a"
wait_until 60 eval '! kill -0 "$a" 2> /dev/null' || fail "A did not end within 60 s of SIGCONT"
st=0; wait "$a" || st=$?
echo "A: exit $st, $(acked "$dir/out.a") acknowledged; B: 300 acknowledged"
xlead_check fast/z "$dir/in.a" "$dir/out.a" "$dir/in.b" "$dir/out.b"
# A stopped acknowledging: what it held ended unknown or failed, not acked
[ "$st" != 0 ] || fail "A exited 0: it acknowledged every line after its epoch was fenced"
echo "ok"
