#!/usr/bin/env bash
# Installs everything tarn needs to build, test, fuzz and benchmark on Debian 12.
# Idempotent: packages already present are not fetched again.
set -euo pipefail

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

pkgs=(
  build-essential cmake pkg-config clang clang-format-14 libclang-rt-14-dev ccache
  libprotobuf-c-dev protobuf-c-compiler
  zlib1g-dev libjansson-dev libcurl4-openssl-dev libssl-dev libsqlite3-dev
  libzstd-dev libsnappy-dev liblz4-dev libmicrohttpd-dev
  libcmocka-dev libisal-dev
  strace jq  # tests: the durable-directory syscall check, JSON in CLI tests
  python3-kafka python3-snappy python3-lz4  # independent Kafka batch builders for the CLI tests
  kcat librdkafka-dev  # Kafka clients by others against tarn serve --kafka-listen
  python3-confluent-kafka  # idempotent producer in the group and producer tests
  golang-go golang-github-shopify-sarama-dev  # Go sarama (GOPATH mode) in test_kafka_sarama
  dpkg-dev man-db  # the package test: cpack -G DEB (dpkg-shlibdeps), man tarn-append
  openssl curl  # TLS listener tests: certificates made at setup, HTTPS requests
)
if [ "${TARN_WITH_SERVERS:-0}" = 1 ]; then
  # Real servers for the backend tests: etcd, and Ceph radosgw as an S3 that checks signatures.
  pkgs+=(etcd-server etcd-client radosgw ceph-mon ceph-osd ceph-common uuid-runtime curl openssl)
fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ "${TARN_WITH_NPM:-0}" = 1 ]; then
  # Independent Parquet implementations for the cross-implementation tests,
  # and KafkaJS (a pure-JS Kafka client) for the listener's.
  here=$(cd "$(dirname "$0")/.." && pwd)
  if [ -f "$here/tests/interop/package.json" ] && { [ ! -d "$here/tests/interop/node_modules/@duckdb" ] ||
    [ ! -d "$here/tests/interop/node_modules/kafkajs" ] ||
    [ ! -d "$here/tests/interop/node_modules/kafka-ts" ]; }; then
    command -v npm >/dev/null || { DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nodejs npm >/dev/null; }
    (cd "$here/tests/interop" && npm ci --no-audit --no-fund --loglevel=error)
  fi
fi
