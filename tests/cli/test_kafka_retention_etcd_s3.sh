#!/usr/bin/env bash
# test_kafka_retention.sh on an etcd:// + s3:// deployment (radosgw). Needs
# TARN_TEST_ETCD and TARN_TEST_S3_URI (+ AWS_*) from `eval "$(scripts/servers.sh
# start)"`: skipped without them, failed in CI.
. "$(dirname "$0")/lib.sh"
need_env TARN_TEST_ETCD TARN_TEST_S3_URI
unset TARN_META TARN_WAL TARN_COMPACTED
RET_DEPLOYMENT=etcd-s3 bash "$(dirname "$0")/test_kafka_retention.sh"
