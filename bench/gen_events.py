#!/usr/bin/env python3
"""Event generator for bench/e2e.sh: page-view JSON lines, one file per Kafka partition.

    gen_events.py OUTDIR --keys K --events-per-key C --partitions P [--minutes M] [--seed S]

Keys user000000 .. user{K-1} (zero-padded to 6 digits) are hashed (CRC-32) to partitions.
Every key gets exactly C events, each at a uniformly random millisecond of the M minutes
starting 2026-11-30T10:00:00Z; within a partition the lines are sorted by event time, so
every partition is in order. One line:

    {"user_id": "user012345", "ts": 1796032812345, "amount": 57, "page": "/catalog/c07/item-04211"}

(about 97 bytes with the newline; amount 1..100, page one of 100,000 catalog paths). Writes OUTDIR/p<N>.jsonl for every partition N and
OUTDIR/manifest.txt: one "partition lines bytes" line per partition, then totals as
"# events=… bytes=… keys=… minutes=…". Deterministic for a given seed.
"""
import argparse
import os
import random
import sys
import zlib

BASE_MS = 1796032800000  # 2026-11-30T10:00:00Z


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--keys", type=int, required=True)
    ap.add_argument("--events-per-key", type=int, required=True)
    ap.add_argument("--partitions", type=int, required=True)
    ap.add_argument("--minutes", type=int, default=60)
    ap.add_argument("--seed", type=int, default=20261130)
    a = ap.parse_args()
    if a.keys < 1 or a.keys > 1000000 or a.events_per_key < 1 or a.partitions < 1 or a.minutes < 1:
        sys.exit("gen_events.py: bad arguments")
    os.makedirs(a.outdir, exist_ok=True)
    span = a.minutes * 60000
    nkeys = a.keys
    by_part = [[] for _ in range(a.partitions)]
    for k in range(nkeys):
        by_part[zlib.crc32(b"user%06d" % k) % a.partitions].append(k)

    rnd = random.Random(a.seed)
    total_lines = total_bytes = 0
    manifest = []
    for p, keys in enumerate(by_part):
        # (time, key) packed in one int: sorting ints is much faster than sorting tuples.
        ev = []
        for k in keys:
            for _ in range(a.events_per_key):
                ev.append(int(rnd.random() * span) * 1048576 + k)
        ev.sort()
        lines = []
        for x in ev:
            item = rnd.randrange(100000)
            lines.append('{"user_id": "user%06d", "ts": %d, "amount": %d, "page": "/catalog/c%02d/item-%05d"}\n'
                         % (x & 1048575, BASE_MS + (x >> 20), rnd.randint(1, 100), item % 50, item))
        data = "".join(lines).encode()
        with open(os.path.join(a.outdir, "p%d.jsonl" % p), "wb") as f:
            f.write(data)
        manifest.append("%d %d %d" % (p, len(lines), len(data)))
        total_lines += len(lines)
        total_bytes += len(data)
    with open(os.path.join(a.outdir, "manifest.txt"), "w") as f:
        f.write("\n".join(manifest) + "\n")
        f.write("# events=%d bytes=%d keys=%d minutes=%d\n" % (total_lines, total_bytes, nkeys, a.minutes))
    print("events=%d bytes=%d keys=%d partitions=%d minutes=%d"
          % (total_lines, total_bytes, nkeys, a.partitions, a.minutes))


if __name__ == "__main__":
    main()
