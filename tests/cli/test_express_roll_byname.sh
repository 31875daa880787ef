#!/usr/bin/env bash
# A writer that rolled and died, recovered by `tarn express fence|settle
# NS/NAME`, which must act on every unsettled epoch of the star, oldest first
# (issue 30 item 5; tests/cli/express_roll.sh).
. "$(dirname "$0")/lib.sh"
roll_mode=byname
. "$(dirname "$0")/express_roll.sh"
