#!/usr/bin/env bash
# Installs, builds, and runs tarn on the embedded default (sqlite: metadata,
# file:// roots) in a fresh directory: a deployment, a stream, appends and
# reads, what is where; then a node (`tarn serve`) on it until Ctrl-C.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
scripts/install-deps.sh
scripts/build.sh release >/dev/null
tarn=$here/build/release/tarn
port=${TARN_QUICKSTART_PORT:-9470}
home=$(mktemp -d "${TMPDIR:-/tmp}/tarn-quickstart.XXXXXX")
export TARN_HOME=$home
run() { echo; echo "\$ tarn $*"; "$tarn" "$@"; }

echo "deployment home: $TARN_HOME"
run init
run stream create demo/events --partitions 2
echo; echo "\$ printf 'hello\nworld\n' | tarn append demo/events"
printf 'hello\nworld\n' | "$tarn" append demo/events
echo; echo "\$ printf 'on partition 1\n' | tarn append demo/events --partition 1"
printf 'on partition 1\n' | "$tarn" append demo/events --partition 1
run read demo/events
run read demo/events --format json
run offsets demo/events
wal=$(cd "$TARN_HOME/wal" && find . -name '*.wal' | sort | head -1 | sed 's|^\./||')
echo; echo "# the WAL objects the appends wrote, under $TARN_HOME/wal:"
(cd "$TARN_HOME/wal" && find . -name '*.wal' | sed 's|^\./|  |')
run inspect wal "$TARN_HOME/wal/$wal"
run fsck

cat <<EOM

# Now a node runs on this deployment: compaction, reclamation, WAL collection,
# and http://127.0.0.1:$port/metrics and /healthz. In another terminal:
#
#   export TARN_HOME=$TARN_HOME
#   printf 'more\n' | $tarn append demo/events
#   $tarn read demo/events --follow
#   curl -s localhost:$port/metrics | grep ^tarn_
#   curl -s localhost:$port/healthz
#
# Ctrl-C stops the node (exit status 0).
EOM
echo "\$ tarn serve --listen 127.0.0.1:$port"
exec "$tarn" serve --listen "127.0.0.1:$port" --compact-max-age-ms 10000
