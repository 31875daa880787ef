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
      # A server that fails to come up (a loaded machine) is stopped and started
      # once more from scratch before the run gives up; each script wipes its own
      # state on start and prints its exports only once it is up.
      ok=0
      for attempt in 1 2; do
        if bash "$s" start "$state"; then ok=1; break; fi
        echo "servers: $name failed to start (attempt $attempt); logs in $state/$name" >&2
        bash "$s" stop "$state" >/dev/null 2>&1 || true
      done
      if [ $ok = 0 ]; then
        for f in "$state/$name"/log/*.log "$state/$name"/*.log; do
          [ -f "$f" ] && { echo "--- tail of $f" >&2; tail -n 15 "$f" >&2; }
        done
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
