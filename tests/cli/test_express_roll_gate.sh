#!/usr/bin/env bash
# A writer that rolled and died, settled by another star's open gate on the
# embedded default (issue 30 item 3; tests/cli/express_roll.sh).
. "$(dirname "$0")/lib.sh"
roll_mode=gate
. "$(dirname "$0")/express_roll.sh"
