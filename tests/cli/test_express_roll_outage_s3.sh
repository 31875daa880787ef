#!/usr/bin/env bash
# test_express_roll_outage.sh on etcd + three radosgw buckets, two of them
# made read-only through a fault-injecting proxy (issue 30 item 4).
exec bash "$(dirname "$0")/test_express_roll_outage.sh" etcd
