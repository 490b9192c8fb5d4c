#!/usr/bin/env python3
# Events for the roll-up tests (sql/rollup.sql, test/faults/rollup_kill9.sh): JSON lines
# {"user", "ts" (epoch ms), "amount"} from 2026-11-30 10:00 UTC on, one every `step` seconds,
# keys k0..k3 (and one hostile key); every 7th record up to 20 s behind the newest (within a
# 30 s grace), every 211th two hours behind (late for every window that held it), a malformed
# line every 500th. Deterministic: the same arguments give the same lines.
#   events.py FIRST COUNT [STEP_SECONDS]
import json
import sys

BASE = 1796032800000  # 2026-11-30 10:00:00 UTC
first, count = int(sys.argv[1]), int(sys.argv[2])
step = int(sys.argv[3]) if len(sys.argv) > 3 else 7
keys = ["k0", "k1", "k2", "k3", "k\"'; DROP TABLE x; --\u00e9"]
for i in range(first, first + count):
    x = (i * 2654435761) % 4294967296
    if i % 500 == 499:
        print('{"user": "k0", "ts": ')  # malformed: a dead letter of the source
        continue
    ts = BASE + i * step * 1000
    if i % 7 == 3:
        ts -= x % 20000
    if i % 211 == 100:
        ts -= 2 * 3600 * 1000
    key = keys[4] if i % 97 == 5 else keys[x % 4]
    print(json.dumps({"user": key, "ts": ts, "amount": x % 1000 - 100}))
