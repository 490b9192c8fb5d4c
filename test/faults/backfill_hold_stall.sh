#!/usr/bin/env bash
# Fault scenario: backfill_handover.sh with the backfill worker stopped at the hold (see there).
HANDOVER_STALL=1 exec bash "$(dirname "${BASH_SOURCE[0]}")/backfill_handover.sh"
