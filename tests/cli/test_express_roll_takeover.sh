#!/usr/bin/env bash
# A writer that rolled and died, settled by tarn serve's takeover job on the
# embedded default (issue 30 item 3; tests/cli/express_roll.sh).
. "$(dirname "$0")/lib.sh"
roll_mode=takeover
. "$(dirname "$0")/express_roll.sh"
