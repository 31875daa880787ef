#!/usr/bin/env bash
# Crash tests with real processes: writers appending to one log, a compactor
# compacting it and `tarn serve` nodes (task-driven compaction) are SIGKILLed
# at random moments, again and again; then every entry a writer was told was
# acknowledged must be readable at its offset with its bytes (from its WAL
# object or its compacted file), and `tarn fsck` must find no fault (sqlite
# only: on the shared etcd it would check every test's streams).
#   crash_test.sh sqlite|etcd TARN_CRASH_BINARY TARN_BINARY
# sqlite: a sqlite: metadata store and a file:// WAL root in a temporary
# directory. etcd: etcd://$TARN_TEST_ETCD and s3 $TARN_TEST_S3_URI (+ AWS_*);
# missing servers fail in CI (CI=true) and skip (exit 77) elsewhere.
# TARN_CRASH_RUNS sets the number of kill rounds (default 60 on sqlite, 50 on
# etcd, whose rounds are slower: a writer that starts after a killed one waits out
# the killed session (3 s) before its first acknowledgement; about 3 min in all).
set -euo pipefail
backend=$1
crash=$2
tarn=$3
default_runs=60
[ "$backend" = etcd ] && default_runs=50
runs=${TARN_CRASH_RUNS:-$default_runs}
dir=$(mktemp -d)
trap 'kill -9 $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
case "$backend" in
  sqlite)
    meta="sqlite:$dir/meta.db?session_timeout_ms=3000"
    mkdir -p "$dir/wal" "$dir/compacted"
    wal="file://$dir/wal"
    cmp="file://$dir/compacted" ;;
  etcd)
    if [ -z "${TARN_TEST_ETCD:-}" ] || [ -z "${TARN_TEST_S3_URI:-}" ]; then
      if [ "${CI:-}" = true ] || [ "${CI:-}" = 1 ]; then
        echo "crash_test: TARN_TEST_ETCD and TARN_TEST_S3_URI must be set in CI" >&2
        exit 1
      fi
      echo "crash_test: TARN_TEST_ETCD or TARN_TEST_S3_URI not set: skipped"
      exit 77
    fi
    meta="etcd://$TARN_TEST_ETCD?session_timeout_ms=3000"
    wal="$TARN_TEST_S3_URI"
    base=${TARN_TEST_S3_URI%%\?*}
    cmp="$base-compacted${TARN_TEST_S3_URI#"$base"}" ;;
  *) echo "usage: crash_test.sh sqlite|etcd BINARY" >&2; exit 2 ;;
esac

# a catalog stream of its own, so that the compactor knows the log's directory
log=$("$crash" setup --meta "$meta" --wal "$wal" --tag "s$$-$RANDOM$RANDOM")

for r in $(seq 1 "$runs"); do
  nw=$(( RANDOM % 2 + 1 ))
  pids=()
  for k in $(seq 1 "$nw"); do
    "$crash" write --meta "$meta" --wal "$wal" --log "$log" --tag "r$r.w$k" \
      --batch-ms $(( RANDOM % 30 + 1 )) > "$dir/acks.$r.$k" 2> "$dir/err.$r.$k" &
    pids+=($!)
  done
  case $(( RANDOM % 3 )) in
    0) "$crash" compact --meta "$meta" --wal "$wal" --compacted "$cmp" --log "$log" \
         2> "$dir/cerr.$r" &
       pids+=($!) ;;
    1) "$tarn" serve --meta "$meta" --wal "$wal" --compacted "$cmp" --listen 127.0.0.1:0 \
         --compact-interval-ms 20 --compact-max-age-ms 50 --no-wal-gc \
         > /dev/null 2> "$dir/serve.$r" &
       pids+=($!) ;;
  esac
  # a random moment: during start-up, an upload, an index put, an ack, or a
  # compaction's C2 or C3-C5. Every other round counts its moment from the
  # first acknowledgement, not from the start: on a loaded machine start-up
  # against etcd can outlast the whole window, and rounds that never reach an
  # append test nothing but start-up.
  if [ $(( r % 2 )) -eq 0 ]; then
    for _ in $(seq 1 200); do
      [ -s "$dir/acks.$r.1" ] && break
      kill -0 "${pids[0]}" 2>/dev/null || break
      sleep 0.05
    done
  fi
  sleep "0.$(printf '%03d' $(( RANDOM % 250 + 5 )))"
  kill -9 "${pids[@]}" 2>/dev/null || true
  wait "${pids[@]}" 2>/dev/null || true
done
# one clean run at the end: the log still takes appends after all the crashes
"$crash" write --meta "$meta" --wal "$wal" --log "$log" --tag final --count 50 > "$dir/acks.final"
[ "$(wc -l < "$dir/acks.final")" -eq 50 ] || { echo "crash_test: the final run lost acks" >&2; exit 1; }
acked=$(cat "$dir"/acks.* | wc -l)
killed=$(cat "$dir"/acks.[0-9]* | wc -l)
echo "crash_test: $backend: $runs kill rounds, $acked acknowledged entries ($killed in rounds that were killed)"
# the rounds timed from their first acknowledgement acknowledge at least one entry each
# (a quarter of the rounds leaves room for a writer that could not start in 10 s)
[ "$killed" -ge $(( runs / 4 )) ] || { echo "crash_test: too few acknowledgements in the killed rounds to mean anything" >&2; exit 1; }
"$crash" verify --meta "$meta" --wal "$wal" --compacted "$cmp" --log "$log" "$dir"/acks.*
if [ "$backend" = sqlite ]; then
  "$tarn" fsck --meta "$meta" --wal "$wal" --compacted "$cmp" --json > "$dir/fsck.json"
  echo "crash_test: tarn fsck: $(tr -d ' \n' < "$dir/fsck.json")"
fi
