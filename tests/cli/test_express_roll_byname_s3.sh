#!/usr/bin/env bash
# tests/cli/test_express_roll_byname.sh on etcd + radosgw (issue 30 items 3 and 5;
# tests/cli/express_roll.sh). Needs TARN_TEST_ETCD, TARN_TEST_S3_URI and AWS_*:
# skipped (exit 77) without them, failed in CI.
. "$(dirname "$0")/lib.sh"
roll_mode=byname
roll_store=s3
. "$(dirname "$0")/express_roll.sh"
