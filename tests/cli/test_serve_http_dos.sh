#!/usr/bin/env bash
# Issue 33, denial of service item 3, the HTTP endpoint's equivalent: four
# clients (127.0.0.10-13) each hold --http-max-per-ip (16) connections, 64 in
# all (--http-max-connections 64, its default then), and send one request header byte every 0.5 s,
# never a whole header (tests/support/http_trickle.py). libmicrohttpd's
# timeout counts idle time, so before the fix each byte kept its connection
# open for ever and a /healthz asked from 127.0.0.1 got no answer (it waited
# unaccepted). Now a connection without a whole request header within
# --http-timeout-s (2 here) of its opening or its last response is closed:
#   - /healthz answers within 5 s
#   - every trickler is closed, none before 1.5 s (the deadline, not sooner)
#   - a keep-alive client asking /metrics three times 0.5 s apart is not cut
. "$(dirname "$0")/lib.sh"
require_tool python3
export TARN_HOME="$dir/home"
"$TARN" init > /dev/null

serve_start "$dir/log" --listen 127.0.0.1:0 --no-compact --no-reclaim --no-wal-gc --http-timeout-s 2 \
  --http-max-connections 64
out=$(timeout 30 python3 "$TARN_SRC/tests/support/http_trickle.py" --port "$port" --sources 4 \
  --per 16 --interval 0.5 --ask-after 0.5 --hold 8)
echo "trickle: $out"
grepq '"status": "HTTP/1.1 200 OK"' <<< "$out" || fail "/healthz beside 64 trickling connections: $out"
python3 - "$out" << 'PY' || fail "$out"
import json, sys
o = json.loads(sys.argv[1])
assert o["healthz_s"] is not None and o["healthz_s"] < 5, "healthz took %s s" % o["healthz_s"]
assert o["keepalive"] == [200, 200, 200], "keep-alive client: %s" % o["keepalive"]
c = o["closed"]
assert None not in c, "%d of %d tricklers not closed" % (c.count(None), len(c))
assert min(c) >= 1.5, "a trickler closed after %s s, before the 2 s deadline" % min(c)
PY
grepq '"status":"ok"' < <(curl -s "http://127.0.0.1:$port/healthz") || fail "/healthz after the tricklers"
stop_term "$pid"
echo PASS
