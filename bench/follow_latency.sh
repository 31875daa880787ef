#!/usr/bin/env bash
# The latency from a line written into `tarn append`'s stdin to the same line printed by
# `tarn read --follow` on the same log (docs/cli.md quotes its figures).
#   bench/follow_latency.sh TARN [BATCH_MS] [RECORDS] [INTERVAL_MS]
# A one-directory deployment (sqlite: + file://) in a temporary directory, unless
# TARN_META and TARN_WAL are set (e.g. etcd:// and s3://, from scripts/servers.sh).
# Each record carries its send time; the follower's side stamps its arrival.
set -euo pipefail
tarn=${1:?usage: follow_latency.sh TARN [BATCH_MS] [RECORDS] [INTERVAL_MS]}
batch=${2:-250} n=${3:-200} every=${4:-20}
dir=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
if [ -z "${TARN_META:-}" ]; then
  export TARN_HOME="$dir/home"
  "$tarn" init > /dev/null
fi
# --log L reaches only a stream's log (LS-087): a fresh stream per run
stream=bench/follow-$(date +%s)-$$
"$tarn" stream create "$stream" > /dev/null
log=$("$tarn" offsets "$stream" --json | jq .partitions[0].log_id)
"$tarn" read --log "$log" --from end --follow --count "$n" |
  python3 -c '
import sys, time
for line in sys.stdin:
    print((time.time_ns() - int(line)) / 1e6, flush=True)' > "$dir/lat" &
reader=$!
sleep 1 # the follower is waiting at the end
python3 -c '
import sys, time
n, every = int(sys.argv[1]), int(sys.argv[2]) / 1000
for _ in range(n):
    print(time.time_ns(), flush=True)
    time.sleep(every)' "$n" "$every" | "$tarn" append --log "$log" --batch-ms "$batch" --quiet
wait "$reader"
sort -n "$dir/lat" | awk -v b="$batch" -v e="$every" '
  { v[NR] = $1 }
  END { printf "batch %d ms, a record every %d ms, %d records: latency median %.0f ms, p90 %.0f ms, max %.0f ms\n",
        b, e, NR, v[int(NR * 0.5) + 1], v[int(NR * 0.9) + 1], v[NR] }'
