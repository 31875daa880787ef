#!/usr/bin/env bash
# Issue 37 "Failover" with three nodes on etcd + radosgw: tests/cli/kafka_failover.sh.
exec bash "$(dirname "$0")/kafka_failover.sh" 3
