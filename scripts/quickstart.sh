#!/usr/bin/env bash
# Installs, builds, and runs tarn's main job on the embedded default.
# Until the log exists, that job is `tarn inspect` on the spec's examples.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
scripts/install-deps.sh
scripts/build.sh release >/dev/null
tarn=build/release/tarn
ex=docs/examples
run() { echo; echo "\$ tarn $*"; "$tarn" "$@"; }
run inspect wal "$ex/wal-v3-31.bin"
run inspect index --hex "$(cat "$ex/raw-entryindex-61.hex")"
run inspect index --hex "$(cat "$ex/parquet-entryindex-123.hex")"
run inspect offsets --hex 000000020000000000008182
run inspect fileindex AAAAAAAAAAIAAAALNy0wLnBhcnF1ZXQAAAAAAAAABgAAAAs3LTMucGFycXVldA==
run inspect key 00000000000000000007-00000000000000000003-00000000000000000008
