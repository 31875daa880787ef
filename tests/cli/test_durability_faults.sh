#!/usr/bin/env bash
# Issue 31's crash loop, short (CI's part; the long form and its last result:
# scripts/durability-loop.sh, docs/durability.md): 3 rounds of 10 s of real
# `tarn append` and `tarn serve` processes on the etcd cluster and radosgw,
# every request through the fault-injecting proxy, with the nemesis (proxy
# faults on etcd and radosgw, kill -9 of writers and of the node; no etcd
# restarts here: other tests share the cluster), then the checker: every
# acknowledged entry exactly once at its offset, nothing reported failed
# stored (tests/cli/check_acked.py), `tarn fsck` clean. Needs the shared
# servers (TARN_TEST_ETCD_CLUSTER, TARN_TEST_S3_URI, AWS_*).
. "$(dirname "$0")/lib.sh"
need_env TARN_TEST_ETCD_CLUSTER TARN_TEST_S3_URI AWS_ENDPOINT_URL
require_tool python3
src=${TARN_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
# the loop's work directory (kept by it when a round is not clean) lives in ours
TMPDIR=$dir "$src/scripts/durability-loop.sh" --rounds 3 --seconds 10 --tarn "$TARN" \
  > "$dir/loop.out" 2>&1 || fail "$(tail -60 "$dir/loop.out")"
tail -1 "$dir/loop.out"
grepq '^durability: 3 rounds, [0-9]* acknowledged, 0 duplicates, 0 lost, 0 failed-but-stored, 0 fsck faults' \
  "$dir/loop.out" || fail "$(cat "$dir/loop.out")"
echo ok
