#!/usr/bin/env bash
# test_kafka_kcat.sh on an etcd:// + s3:// deployment (radosgw): kcat against
# one node and against two. Needs TARN_TEST_ETCD and TARN_TEST_S3_URI (+ AWS_*)
# from `eval "$(scripts/servers.sh start)"`: skipped without them, failed in CI.
set -euo pipefail
if [ -z "${TARN_TEST_ETCD:-}" ] || [ -z "${TARN_TEST_S3_URI:-}" ]; then
  if [ "${CI:-}" = true ] || [ "${CI:-}" = 1 ]; then
    echo "FAIL: TARN_TEST_ETCD / TARN_TEST_S3_URI not set: CI must start the servers" >&2
    exit 1
  fi
  echo "SKIP: TARN_TEST_ETCD / TARN_TEST_S3_URI not set"
  exit 0
fi
unset TARN_META TARN_WAL TARN_COMPACTED
KCAT_DEPLOYMENT=etcd-s3 exec bash "$(dirname "$0")/test_kafka_kcat.sh"
