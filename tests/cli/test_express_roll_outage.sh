#!/usr/bin/env bash
# A roll under load ends (issue 30 item 4): two of the three express buckets
# turn read-only for 3 s while `tarn append` writes an express stream. The
# writer's slots cannot reach W = 2, it halts and rolls; its fence waits for
# the buckets, then the roll republishes what was not acknowledged. On
# 4b2fedd the timer thread spun in seal() holding the writer's mutex while
# the roll was under way, and the writer hung for ever (no outcome, no exit;
# planted xtimer-spins). Now every line is acknowledged; check_acked.py
# checks each offset; then tarn fsck. Argument:
#   sqlite (default)  the embedded default: two of tarn init's three bucket
#       directories chattr -R +i (even root cannot create in them); skipped
#       (77) where chattr +i does not work (not ext4/xfs, no CAP_LINUX_IMMUTABLE)
#   etcd (test_express_roll_outage_s3.sh)  etcd + three radosgw buckets,
#       buckets a and b reached through tests/support/faultproxy.py (their S3
#       URIs name its endpoint), which answers every PUT with 403 for the 3 s:
#       S3's answer to a PUT that a bucket policy denies (radosgw refused such
#       a policy), final at once, where a 503 or a broken connection is
#       retried until the put's deadline and the slot would only be late
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/xlead_env.sh"
mode=${1:-sqlite}
if [ "$mode" = etcd ]; then
  need_env TARN_TEST_ETCD TARN_TEST_S3_URI AWS_ENDPOINT_URL
  proxy_start "${AWS_ENDPOINT_URL#*://}"
  xbucket_q=("?endpoint=http://127.0.0.1:$pport" "?endpoint=http://127.0.0.1:$pport" "")
  xlead_deploy etcd
  outage_begin() { ctl status code=403 method=PUT count=0 > /dev/null; }
  outage_end() {
    ctl clear > /dev/null
    local n
    n=$(faults)
    [ "${n:-0}" -gt 0 ] || fail "the proxy refused no PUT: no outage"
    echo "$n PUTs refused during the outage"
  }
else
  xlead_deploy sqlite
  need_chattr_ro
  ro=("$TARN_HOME/express/a" "$TARN_HOME/express/b")
  cleanup_hook() { chattr -R -i "${ro[@]}" 2> /dev/null || true; }
  outage_begin() { chattr -R +i "${ro[@]}"; }
  outage_end() { chattr -R -i "${ro[@]}"; }
fi
"$TARN" stream create fast/o --class express > /dev/null
i=0; while [ $i -lt 3000 ]; do echo "o-$i"; i=$((i + 1)); done > "$dir/in.o"
( n=0; while IFS= read -r l; do echo "$l"; n=$((n + 1)); [ $((n % 20)) = 0 ] && sleep 0.02; done < "$dir/in.o" ) |
  "$TARN" append fast/o --star ro --json > "$dir/out.o" 2> "$dir/o.err" &
a=$!
pids+=("$a")
wait_until 30 eval '[ "$(acked "$dir/out.o")" -ge 300 ]' || fail "fewer than 300 lines acknowledged in 30 s"
outage_begin
sleep 3
outage_end
wait_until 60 eval '! kill -0 "$a" 2> /dev/null' || fail "the writer hung: no end within 60 s of the outage's end"
wait "$a" || fail "tarn append: exit $?"
xlead_check fast/o "$dir/in.o" "$dir/out.o"
[ "$(acked "$dir/out.o")" = 3000 ] || fail "$(acked "$dir/out.o") of 3000 acknowledged"
echo "ok"
