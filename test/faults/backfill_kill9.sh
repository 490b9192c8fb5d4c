#!/usr/bin/env bash
# Fault scenario: backfill.sh with SIGKILLs during the backfill and the hand-over (see there).
BACKFILL_KILLS=1 exec bash "$(dirname "${BASH_SOURCE[0]}")/backfill.sh"
