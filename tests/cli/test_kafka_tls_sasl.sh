#!/usr/bin/env bash
# The listeners of tarn serve over TLS, and SASL on the Kafka one (issue 17;
# docs/kafka.md "Security", docs/serve.md "HTTPS"), with certificates made here
# by openssl (a CA, a server certificate for 127.0.0.1) and kcat 1.7
# (librdkafka 2.0.2) as the client:
#   - tarn kafka user add reads the password from stdin or a file, never the
#     command line; the metadata store holds no password bytes
#   - security.protocol=SSL (ssl.ca.location): produce and consume
#   - SASL_SSL with PLAIN and with SCRAM-SHA-256: produce and consume
#   - a wrong password, an unknown user and a mechanism the user may not use:
#     an authentication error, kcat exits (no hang), one log line naming the
#     user and the mechanism
#   - before authenticating, a request other than ApiVersions/SaslHandshake/
#     SaslAuthenticate closes the connection (no metadata for a client
#     without credentials)
#   - a plaintext client on a TLS port is refused (closed), the node goes on
#   - HTTPS: curl --cacert gets /metrics and /healthz; plain HTTP is refused;
#     the HTTP endpoint binds to 127.0.0.1 unless told otherwise
#   - no secret in any log line or output of these runs
. "$(dirname "$0")/lib.sh"
require_tool kcat openssl curl
export TARN_HOME="$dir/home"
"$TARN" init > /dev/null

# certificates: a CA and a server certificate for 127.0.0.1 and localhost
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$dir/ca.key" -out "$dir/ca.pem" -days 2 \
  -subj /CN=tarn-test-ca 2> /dev/null
openssl req -newkey rsa:2048 -nodes -keyout "$dir/srv.key" -out "$dir/srv.csr" \
  -subj /CN=localhost 2> /dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' > "$dir/ext"
openssl x509 -req -in "$dir/srv.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial \
  -out "$dir/srv.pem" -days 2 -extfile "$dir/ext" 2> /dev/null

pw_alice='Alice-S3cret-7f2a'
pw_bob='Bob-S3cret-c91e'
printf '%s\n' "$pw_alice" | "$TARN" kafka user add alice > "$dir/out" 2>&1 ||
  fail "user add alice: $(cat "$dir/out")"
printf '%s\n' "$pw_bob" > "$dir/bob.pw"
chmod 644 "$dir/bob.pw"
"$TARN" kafka user add bob --mechanism scram-sha-256 --password-file "$dir/bob.pw" > "$dir/out" 2>&1 ||
  fail "user add bob: $(cat "$dir/out")"
grep -q "warning: .*bob.pw is readable" "$dir/out" || fail "no permission warning: $(cat "$dir/out")"
"$TARN" kafka user list > "$dir/users"
grep -qx $'alice\tPLAIN,SCRAM-SHA-256' "$dir/users" || fail "user list: $(cat "$dir/users")"
grep -qx $'bob\tSCRAM-SHA-256' "$dir/users" || fail "user list: $(cat "$dir/users")"
if "$TARN" kafka user add carol --password "$pw_alice" > /dev/null 2>&1; then
  fail "a password was taken from the command line"
fi
if grep -a -q -e "$pw_alice" -e "$pw_bob" "$TARN_HOME/meta.db"; then
  fail "the metadata store holds a password"
fi

start() {
  serve_start "$dir/log" --listen 127.0.0.1:0 --kafka-listen 127.0.0.1:0 --kafka-batch-ms 20 \
    --no-compact --no-reclaim --no-wal-gc --kafka-auto-create-topics \
    --kafka-tls-cert "$dir/srv.pem" --kafka-tls-key "$dir/srv.key" \
    --http-tls-cert "$dir/srv.pem" --http-tls-key "$dir/srv.key" "$@"
  hport=$port
  cat "$dir/log" >> "$dir/all.log"
}
stop() {
  stop_term "$pid"
  cat "$dir/log" >> "$dir/all.log"
}
k() { timeout 30 kcat -b "127.0.0.1:$kport" -X ssl.ca.location="$dir/ca.pem" "$@"; }
kc() { k -C -X fetch.wait.max.ms=50 -e "$@"; }
sasl() { echo -X security.protocol=SASL_SSL -X sasl.mechanism="$1" -X sasl.username="$2" -X sasl.password="$3"; }

# TLS only (no SASL); a key file others may read draws a warning (issue 33)
chmod 644 "$dir/srv.key"
start
grep -q "warning: the Kafka listener's TLS key file $dir/srv.key has permissions 0644" "$dir/log" ||
  fail "no warning for a key file of mode 644: $(cat "$dir/log")"
chmod 600 "$dir/srv.key"
echo tls-1 | k -X security.protocol=SSL -P -t tls 2> "$dir/err" || fail "SSL produce: $(cat "$dir/err")"
kc -X security.protocol=SSL -t tls -o beginning > "$dir/got" 2> "$dir/err" || fail "SSL consume: $(cat "$dir/err")"
grep -qx tls-1 "$dir/got" || fail "SSL consume got: $(cat "$dir/got")"
# a plaintext client on the TLS port: refused, kcat gives up, the node goes on
if timeout 30 kcat -b "127.0.0.1:$kport" -L -m 1 > "$dir/out" 2>&1; then
  fail "a plaintext client got metadata from a TLS port: $(cat "$dir/out")"
fi
grep -q "Broker transport failure\|Disconnected" "$dir/out" || fail "plaintext client: $(cat "$dir/out")"
k -X security.protocol=SSL -L > "$dir/md" 2>&1 || fail "SSL metadata after a plaintext client: $(cat "$dir/md")"
# HTTPS
curl -sSf --cacert "$dir/ca.pem" "https://127.0.0.1:$hport/healthz" > "$dir/health" ||
  fail "https /healthz"
grep -q '"status":"ok"' "$dir/health" || fail "healthz: $(cat "$dir/health")"
curl -sSf --cacert "$dir/ca.pem" "https://localhost:$hport/metrics" --resolve "localhost:$hport:127.0.0.1" \
  > "$dir/metrics" || fail "https /metrics"
grep -q '^tarn_kafka_connections' "$dir/metrics" || fail "no metrics over https"
grep -q '^tarn_kafka_tls_failed_total' "$dir/metrics" || fail "the plaintext client was not counted"
if curl -s "http://127.0.0.1:$hport/healthz" > /dev/null 2>&1; then
  fail "plain HTTP answered on the HTTPS port"
fi
if curl -s "https://127.0.0.1:$hport/healthz" > /dev/null 2>&1; then
  fail "https without the CA was trusted"
fi
stop

# SASL_SSL, both mechanisms
start --kafka-sasl plain --kafka-sasl scram-sha-256
# shellcheck disable=SC2046
echo plain-1 | k $(sasl PLAIN alice "$pw_alice") -P -t s 2> "$dir/err" || fail "PLAIN produce: $(cat "$dir/err")"
# shellcheck disable=SC2046
echo scram-1 | k $(sasl SCRAM-SHA-256 bob "$pw_bob") -P -t s 2> "$dir/err" || fail "SCRAM produce: $(cat "$dir/err")"
for m in PLAIN SCRAM-SHA-256; do
  # shellcheck disable=SC2046
  kc $(sasl $m alice "$pw_alice") -t s -o beginning > "$dir/got" 2> "$dir/err" || fail "$m consume: $(cat "$dir/err")"
  [ "$(cat "$dir/got")" = $'plain-1\nscram-1' ] || fail "$m consume got: $(cat "$dir/got")"
done
# refusals: each ends kcat with an authentication error, and one log line
n=0
for c in "SCRAM-SHA-256 alice wrong-password-1" "PLAIN alice wrong-password-2" \
         "SCRAM-SHA-256 nobody wrong-password-3" "PLAIN bob $pw_bob"; do
  read -r m u p <<< "$c"
  start_s=$(date +%s)
  set +e
  # shellcheck disable=SC2046
  k $(sasl "$m" "$u" "$p") -L -m 2 > "$dir/out" 2>&1
  rc=$?
  set -e
  [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "$m $u: kcat exit $rc: $(cat "$dir/out")"
  [ $(( $(date +%s) - start_s )) -lt 20 ] || fail "$m $u: kcat took too long"
  grep -q "Authentication failed\|Authentication failure" "$dir/out" || fail "$m $u: $(cat "$dir/out")"
  grep -a -q "kafka authentication refused .*user=$u mechanism=$m" "$dir/log" ||
    fail "$m $u: no log line"
  n=$((n + 1))
done
# without credentials: SASL is required, nothing else is answered
if k -X security.protocol=SSL -L -m 1 > "$dir/out" 2>&1; then
  fail "metadata without authentication: $(cat "$dir/out")"
fi
curl -sSf --cacert "$dir/ca.pem" "https://127.0.0.1:$hport/metrics" > "$dir/metrics"
grep -q 'tarn_kafka_sasl_total{mechanism="PLAIN",result="ok"}' "$dir/metrics" || fail "sasl metrics"
grep -q 'tarn_kafka_requests_total{api="Metadata",result="unauthenticated",version=' "$dir/metrics" ||
  fail "an unauthenticated Metadata was not refused: $(grep requests_total "$dir/metrics")"
stop

# the HTTP endpoint's default address is loopback
"$TARN" serve --help | grep -- "--listen HOST:PORT          HTTP address (default 127.0.0.1:9470" > /dev/null ||
  fail "the HTTP default is not loopback"

# no secret anywhere: logs, outputs
cat "$dir"/err "$dir"/out "$dir"/got "$dir"/metrics "$dir"/users >> "$dir/all.log" 2> /dev/null || true
for s in "$pw_alice" "$pw_bob"; do
  if grep -a -q -- "$s" "$dir/all.log"; then fail "a password is in the logs"; fi
done
echo "ok"
