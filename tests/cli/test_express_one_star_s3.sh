#!/usr/bin/env bash
# test_express_one_star.sh on etcd + three radosgw buckets (issue 30 item 2).
exec bash "$(dirname "$0")/test_express_one_star.sh" etcd
