#!/usr/bin/env bash
# A secure deployment end to end (issue 17, docs/deployment.md "Secure
# deployment"): etcd over TLS with a client certificate and a signed-in user
# (scripts/servers.d/tls.sh: --client-cert-auth, auth enable, tokens that
# expire 3 s after their last use) and S3 over https with a private CA
# (ca_bundle= on one root, AWS_CA_BUNDLE on the other): init, stream create,
# append across token expiry, read, compact, serve. Then each refusal --
# wrong CA, wrong client certificate, wrong password, no user, a CA bundle
# that does not sign the S3 server -- is one line naming the store and what
# was refused, exit status 3, within seconds. A password in a URI is refused;
# a credential file others may read draws a warning. Last, every log line and
# error of these runs is searched for the secrets: none appears.
# Needs TARN_TEST_ETCD_TLS, TARN_TEST_TLS_DIR, TARN_TEST_S3_TLS_ENDPOINT and
# TARN_TEST_S3_URI (+ AWS_*) from `eval "$(scripts/servers.sh start)"`:
# skipped without them, failed in CI.
. "$(dirname "$0")/lib.sh"
need_env TARN_TEST_ETCD_TLS TARN_TEST_S3_TLS_ENDPOINT TARN_TEST_S3_URI
T=${TARN_TEST_TLS_DIR:?}
unset TARN_HOME TARN_META TARN_WAL TARN_COMPACTED TARN_ETCD_USER TARN_ETCD_PASSWORD AWS_CA_BUNDLE
unique_run
s3_bucket_prefix=$TARN_TEST_S3_URI/secure-$run
export TARN_HOME=$dir/home
export TARN_META="etcd+https://$TARN_TEST_ETCD_TLS?prefix=tarn-test/secure-$run&cacert=$T/ca.pem&cert=$T/client.pem&key=$T/client.key&user=tarn&password_file=$T/etcd-password"
export TARN_WAL="$s3_bucket_prefix/wal?endpoint=$TARN_TEST_S3_TLS_ENDPOINT&ca_bundle=$T/ca.pem"
export TARN_COMPACTED="$s3_bucket_prefix/compacted"
export AWS_ENDPOINT_URL=$TARN_TEST_S3_TLS_ENDPOINT AWS_CA_BUNDLE=$T/ca.pem
n=0
# tarn ARGS...: runs tarn with its stderr kept in log.N for the secrets check
t() { n=$((n + 1)); "$TARN" "$@" 2> "$dir/log.$n"; }

t init --wal-grace-ms 4001 --max-publish-delay-ms 2000 --max-put-ms 1000 --skew-allowance-ms 1000 > /dev/null ||
  fail "init over TLS + auth"
mode=$(stat -c %a "$TARN_HOME/tarn.json")
[ "$mode" = 600 ] || fail "tarn init wrote tarn.json with mode $mode, not 600"
t stream create ns/s --partitions 2 > /dev/null || fail "stream create"
# the etcd token expires 3 s after its last use: the pauses outlive it, and
# the append signs in again without losing its session
n=$((n + 1))
(for i in 1 2 3; do seq "$i"00 "$i"09; sleep 4; done) |
  "$TARN" append ns/s --batch-ms 100 --quiet 2> "$dir/log.$n" || fail "append across token expiry"
seq 1 5 | t append ns/s --partition 1 --batch-ms 60000 --quiet || fail "append partition 1"
t read ns/s > "$dir/before" || fail "read"
[ "$(wc -l < "$dir/before")" = 30 ] || fail "read $(wc -l < "$dir/before") entries, not 30"
t read ns/s --partition 1 > "$dir/before1" || fail "read partition 1"
[ "$(cat "$dir/before1" | tr '\n' ' ')" = "1 2 3 4 5 " ] || fail "partition 1 reads $(cat "$dir/before1")"
sleep 4.5 # the WAL grace, so that compaction may take the records
t compact ns/s > /dev/null || fail "compact"
t read ns/s > "$dir/after" || fail "read after compaction"
cmp -s "$dir/before" "$dir/after" || fail "entries differ after compaction"
t fsck --json --no-read > "$dir/fsck" || fail "fsck"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["compacted_records"] >= 1, r' "$dir/fsck" ||
  fail "nothing compacted: $(cat "$dir/fsck")"
# serve: a node on the secured stores answers /healthz with both stores ok
n=$((n + 1))
serve_start "$dir/log.$n" --listen 127.0.0.1:0 --compact-interval-ms 200 --stats-interval-ms 200
ok=0
for _ in $(seq 50); do
  if curl -sf "http://127.0.0.1:$port/healthz" > "$dir/health" &&
     python3 -c 'import json,sys; h=json.load(open(sys.argv[1])); assert h["status"]=="ok" and h["meta"]=="ok", h' "$dir/health" 2> /dev/null; then
    ok=1; break
  fi
  sleep 0.2
done
[ $ok = 1 ] || fail "serve /healthz: $(cat "$dir/health" 2> /dev/null)"
curl -sf "http://127.0.0.1:$port/metrics" > "$dir/log.metrics" || fail "serve /metrics"
sleep 4 # past a token's life: the node's keepalive and jobs sign in again
curl -sf "http://127.0.0.1:$port/healthz" > "$dir/health" || fail "serve /healthz after the token expired"
grep -q '"meta":"ok"' "$dir/health" || grep -q '"meta": *"ok"' "$dir/health" || fail "meta not ok after token expiry: $(cat "$dir/health")"
kill -TERM "$pid"; wait "$pid" 2> /dev/null || true

# refused: STATUS 3, one line on stderr that names the store and the refusal,
# within 10 s (no retry storm, no hang)
refused() { # what grep-pattern tarn-args...
  local what=$1 pat=$2; shift 2
  n=$((n + 1))
  local t0=$SECONDS st=0
  timeout 30 "$TARN" "$@" > /dev/null 2> "$dir/log.$n" || st=$?
  [ "$st" = 3 ] || fail "$what: exit $st, not 3: $(cat "$dir/log.$n")"
  [ $((SECONDS - t0)) -le 10 ] || fail "$what: took $((SECONDS - t0)) s"
  [ "$(wc -l < "$dir/log.$n")" = 1 ] || fail "$what: not one line: $(cat "$dir/log.$n")"
  grep -qE "$pat" "$dir/log.$n" || fail "$what: no /$pat/ in: $(cat "$dir/log.$n")"
}
meta_with() { echo "$TARN_META" | sed "$1"; }
refused "wrong CA" 'etcd .*TLS refused: the server.s certificate is not trusted' \
  read ns/s --meta "$(meta_with "s|cacert=$T/ca.pem|cacert=$T/other-ca.pem|")"
refused "wrong client certificate" 'etcd .*TLS refused: the server rejected the client certificate' \
  read ns/s --meta "$(meta_with "s|client\.|rogue.|g")"
refused "no client certificate" 'etcd .*TLS refused' \
  read ns/s --meta "$(meta_with "s|&cert=[^&]*&key=[^&]*||")"
(umask 077; echo "wrong-$run" > "$dir/bad-password")
refused "wrong password" 'etcd .*authentication failed.*user "tarn"' \
  read ns/s --meta "$(meta_with "s|password_file=[^&]*|password_file=$dir/bad-password|")"
refused "no user" 'etcd .*(user name is empty|auth is on)' \
  read ns/s --meta "$(meta_with "s|&user=tarn&password_file=[^&]*||")"
refused "S3 CA bundle that does not sign the server" 's3 .*TLS refused: the server.s certificate is not trusted' \
  read ns/s --wal "$(echo "$TARN_WAL" | sed "s|ca_bundle=$T/ca.pem|ca_bundle=$T/other-ca.pem|")" \
  --compacted "$TARN_COMPACTED?ca_bundle=$T/other-ca.pem"
n=$((n + 1))
AWS_CA_BUNDLE=$T/other-ca.pem timeout 30 "$TARN" read ns/s --wal "${TARN_WAL%%&ca_bundle=*}" > /dev/null 2> "$dir/log.$n" && fail "AWS_CA_BUNDLE of another CA was not used"
grep -q 's3 .*TLS refused' "$dir/log.$n" || fail "AWS_CA_BUNDLE: $(cat "$dir/log.$n")"

# the password itself is never taken from a URI (it would land in tarn.json and ps)
n=$((n + 1))
st=0
"$TARN" read ns/s --meta "$(meta_with "s|password_file=[^&]*|password=uri-secret-$run|")" > /dev/null 2> "$dir/log.$n" || st=$?
[ "$st" != 0 ] || fail "a password in the URI was accepted"
grep -q 'password_file=FILE or set TARN_ETCD_PASSWORD' "$dir/log.$n" || fail "password= in URI: $(cat "$dir/log.$n")"
# the environment is the other way
n=$((n + 1))
TARN_ETCD_PASSWORD=$(cat "$T/etcd-password") "$TARN" read ns/s --meta "$(meta_with "s|&password_file=[^&]*||")" \
  > "$dir/env-read" 2> "$dir/log.$n" || fail "password from TARN_ETCD_PASSWORD: $(cat "$dir/log.$n")"
cmp -s "$dir/before" "$dir/env-read" || fail "read with TARN_ETCD_PASSWORD differs"
# a credential file others may read: a warning, as ssh gives
cp "$T/etcd-password" "$dir/wide-password"; chmod 644 "$dir/wide-password"
n=$((n + 1))
"$TARN" read ns/s --meta "$(meta_with "s|password_file=[^&]*|password_file=$dir/wide-password|")" > /dev/null 2> "$dir/log.$n" ||
  fail "read with a 0644 password file: $(cat "$dir/log.$n")"
grep -q "warning: etcd password file $dir/wide-password has permissions 0644" "$dir/log.$n" ||
  fail "no permission warning: $(cat "$dir/log.$n")"
chmod 644 "$TARN_HOME/tarn.json"
n=$((n + 1))
env -u TARN_META -u TARN_WAL -u TARN_COMPACTED "$TARN" read ns/s > /dev/null 2> "$dir/log.$n" || true
grep -q "warning: the config file $TARN_HOME/tarn.json has permissions 0644" "$dir/log.$n" ||
  fail "no warning for a 0644 tarn.json: $(cat "$dir/log.$n")"

# no secret in any log line, error or metric of all these runs
for s in "$(cat "$T/etcd-password")" "$AWS_SECRET_ACCESS_KEY" "uri-secret-$run"; do
  if grep -rlF -- "$s" "$dir"/log.* > /dev/null; then
    fail "a secret appears in $(grep -rlF -- "$s" "$dir"/log.* | tr '\n' ' ')"
  fi
done
# the private keys' bytes neither
key_line=$(sed -n 2p "$T/client.key")
! grep -rqF -- "$key_line" "$dir"/log.* || fail "the client key appears in a log"
echo "PASS: $n runs"
