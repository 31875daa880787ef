#!/usr/bin/env bash
# Issue 33, "listener TLS key files get no permission warning": the HTTP
# endpoint's TLS key (--http-tls-key) is checked as the Kafka listener's is
# (test_kafka_tls_sasl.sh), through the same function:
#   - a key file of mode 0644: "warning: the HTTP endpoint's TLS key file
#     PATH has permissions 0644", and HTTPS serves
#   - mode 0600: no warning
. "$(dirname "$0")/lib.sh"
require_tool openssl curl
export TARN_HOME="$dir/home"
"$TARN" init > /dev/null
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$dir/http.key" -out "$dir/http.pem" -days 2 \
  -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1 2> /dev/null
start() {
  serve_start "$dir/log" --listen 127.0.0.1:0 --no-compact --no-reclaim --no-wal-gc \
    --http-tls-cert "$dir/http.pem" --http-tls-key "$dir/http.key"
  curl -sSf --cacert "$dir/http.pem" "https://127.0.0.1:$port/healthz" > "$dir/health" ||
    fail "https /healthz"
  stop_term "$pid"
}

chmod 644 "$dir/http.key"
start
grepq "warning: the HTTP endpoint's TLS key file $dir/http.key has permissions 0644" "$dir/log" ||
  fail "no warning for a key file of mode 644: $(cat "$dir/log")"
chmod 600 "$dir/http.key"
start
if grepq "warning:" "$dir/log"; then
  fail "a warning for a key file of mode 600: $(cat "$dir/log")"
fi
echo PASS
