#!/usr/bin/env bash
# test_express_zombie.sh on etcd + three radosgw buckets (issue 30 item 1).
exec bash "$(dirname "$0")/test_express_zombie.sh" etcd
