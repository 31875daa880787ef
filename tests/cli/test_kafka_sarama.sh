#!/usr/bin/env bash
# Go sarama 1.22 (Debian's golang-github-shopify-sarama-dev, GOPATH mode)
# against a tarn node (issue 37, "Proof with clients written by others";
# kafka_sarama.go says what it checks): sarama's default config (Produce v0
# of magic-0 messages, Fetch v0: message sets down-converted by
# src/kafka/api_fetch.c), then Version 2.0 (magic 2), then its ClusterAdmin,
# each call checked for its effect. The Go program is compiled into the
# test's directory (its build cache too): nothing is cached outside it.
. "$(dirname "$0")/lib.sh"
[ -d /usr/share/gocode/src/github.com/Shopify/sarama ] && command -v go > /dev/null ||
  { echo "golang-go and golang-github-shopify-sarama-dev are needed (scripts/install-deps.sh)" >&2; exit 1; }
mkdir -p "$dir/go/src/sarama_check" "$dir/gocache"
cp "$TARN_SRC/tests/cli/kafka_sarama.go" "$dir/go/src/sarama_check/main.go"
(cd "$dir/go/src/sarama_check" &&
  GOPATH="$dir/go:/usr/share/gocode" GO111MODULE=off GOCACHE="$dir/gocache" GOFLAGS= \
    go build -o "$dir/kafka_sarama" .) || fail "go build of kafka_sarama.go"
export TARN_HOME="$dir/home"
"$TARN" init > /dev/null
"$TARN" topic create legacy --partitions 1 > /dev/null
for t in modern legacy-gzip v1-gzip v1-gzip-b; do
  "$TARN" topic create $t --partitions 1 > /dev/null
done
serve_start "$dir/log" --listen 127.0.0.1:0 --kafka-listen 127.0.0.1:0 --kafka-batch-ms 5 \
  --no-compact --no-reclaim --no-wal-gc
node=$pid
timeout 60 "$dir/kafka_sarama" "127.0.0.1:$kport" || fail "sarama (node log: $(tail -5 "$dir/log"))"
stop_term "$node"
echo ok
