#!/usr/bin/env bash
# Starts or stops the servers the tests need, on loopback:
#   eval "$(scripts/servers.sh start)"   # prints `export VAR=...` lines for the tests
#   scripts/servers.sh stop
# Each scripts/servers.d/NAME.sh is called as `NAME.sh start|stop STATE_DIR`; on start it
# prints export lines on stdout and logs to STATE_DIR/NAME/; on stop it kills what it started.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
state=${TARN_SERVERS_DIR:-/tmp/tarn-servers}
cmd=${1:-}
case "$cmd" in
  start)
    mkdir -p "$state"
    for s in "$here"/servers.d/*.sh; do
      [ -e "$s" ] || continue
      name=$(basename "$s" .sh)
      echo "servers: starting $name" >&2
      if ! bash "$s" start "$state"; then
        echo "servers: $name failed to start; logs in $state/$name" >&2
        exit 1
      fi
    done ;;
  stop)
    # In reverse order of start: tls.sh's gateway runs on radosgw.sh's cluster,
    # and left running once that cluster is gone, it outlived the stop.
    for s in $(ls -r "$here"/servers.d/*.sh 2>/dev/null); do
      bash "$s" stop "$state" || true
    done ;;
  *) echo "usage: scripts/servers.sh start|stop" >&2; exit 2 ;;
esac
