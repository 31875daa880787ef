#!/usr/bin/env bash
# Issue 31 item 1, on the object store: no transport retry below the logic
# that resolves a create-only PUT's outcome. libcurl silently sends a request
# again on a fresh connection when a reused keep-alive connection dies before
# any answer; for a PUT with If-None-Match: * that had landed, the resend
# gets 412 and the put was reported "already exists" although the object was
# ours (before the fix: the writer then wrote the same entries again under a
# new name, an orphan WAL object for each; `tarn init` would have taken its
# own root marker for a foreign one had it met the fault). Real `tarn
# append` processes talk to the shared radosgw through the fault-injecting
# proxy (tests/support/faultproxy.py), which loses the answer to a WAL
# object's PUT on a reused connection (closed in order or reset) after
# radosgw stored it. Every record must be acknowledged once (check_acked.py)
# and every WAL object the writer created must be one it indexed: as many
# WAL objects as index records. The sqlite metadata store: the faults are
# the object store's. Needs TARN_TEST_S3_URI (and AWS_* from servers.env).
. "$(dirname "$0")/lib.sh"
need_env TARN_TEST_S3_URI AWS_ENDPOINT_URL
require_tool python3
unset TARN_HOME TARN_META TARN_WAL TARN_COMPACTED
src=${TARN_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
s3up=${AWS_ENDPOINT_URL#http://}
proxy_start "${s3up%/}" --verbose

unique_run
export AWS_ENDPOINT_URL="http://127.0.0.1:$pport"
export TARN_HOME=$dir/home
export TARN_WAL="$TARN_TEST_S3_URI/s3faults-$run/wal"
walpath=/${TARN_WAL#s3://} # the WAL root's path in a path-style request
export TARN_COMPACTED="file://$dir/compacted"
"$TARN" init > /dev/null
"$TARN" stream create ns/s > /dev/null

runs=() n=0
for how in "fin=1" ""; do
  f=$(faults)
  ctl lose method=PUT path="$walpath/" reused=1 $how > /dev/null
  append_slowly "lose${how//[^0-9a-z]/}"
  [ "$(faults)" -gt "$f" ] || fail "lose $how: the proxy's fault never fired"
done
ctl clear > /dev/null

"$TARN" read ns/s --format json > "$dir/read.jsonl"
python3 "$src/tests/cli/check_acked.py" --read "$dir/read.jsonl" "${runs[@]}" > "$dir/check" ||
  fail "$(cat "$dir/check")"
# The WAL objects written (distinct keys PUT under the WAL root, the marker
# aside) against the records acknowledged (one object each): an orphan is an
# object whose PUT was reported failed although it landed.
objects=$(grep -a -o "PUT $walpath/[^ ]*\.wal" "$dir/proxy.err" | sort -u | wc -l)
acked=$(cat "$dir"/out.* | grep -c '"offset"' || true)
[ "$acked" = 8 ] || fail "$acked of 8 records acknowledged: $(cat "$dir"/err.*)"
[ "$objects" = 8 ] || fail "$objects WAL objects written for 8 records (a PUT that landed was retried under a new name): $(grep -a 'PUT' "$dir/proxy.err" | tail -20)"
"$TARN" fsck > "$dir/fsck" 2>&1 || fail "fsck: $(cat "$dir/fsck")"
echo ok
