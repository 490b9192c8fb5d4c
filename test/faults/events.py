#!/usr/bin/env python3
"""Deterministic event streams for the fault tests, and the expected windows computed
independently of stoatflow.

  events.py generate DIR --seed S --events N --keys K --chunks C [--partitions P]
                         [--chunk-minutes M]
      Writes DIR/chunk-CC-pP.jsonl: one JSON object per line,
      {"user_id": "u00017", "ts": <epoch ms>, "amount": <int>}, and DIR/manifest.json.
      Key number i always goes to partition i % P. Chunk c holds event times in
      [BASE + c*M min, BASE + (c+1)*M min); inside a partition every chunk is sorted by
      time, so each key's events reach Kafka in event-time order. Chunks are meant to be
      produced in order, all partitions of one chunk before the next chunk.

  events.py expected DIR OUT.csv [--window-ms 60000 | --session-gap-ms G]
      Reads the JSONL files back (not the generator's memory) and writes one CSV row per
      (key, tumbling window): key, window_start_ms, n, total, max_ts, sorted. Also checks
      the stream's own promises (one partition per key, time order inside a partition)
      and prints the number of events. With --session-gap-ms, one row per session instead
      (a key's events in time order; a new session wherever two are more than G apart):
      key, first_ms, n, total, last_ms. No record is late in these streams, so that is all
      of README "Window kinds"'s session rule they exercise (merging included: a key's events reach the
      consumer in time order, but several partitions interleave).

With M * C well above one hour, windows close (under max_out_of_orderness = 1 hour)
while the stream runs; with M below one hour no record is ever late, whatever the order
in which the consumer interleaves partitions.
"""
import argparse
import csv
import glob
import json
import os
import random
import re
import sys

# 2025-11-30T10:53:20Z: deliberately not aligned to a minute.
BASE_MS = 1764500000000


def generate(args):
    if args.chunk_minutes >= 60:
        sys.exit("events.py: --chunk-minutes must stay below the 1 hour out-of-orderness")
    rng = random.Random(args.seed)
    keys = [f"u{i:05d}" for i in range(args.keys)]
    span = args.chunk_minutes * 60000
    os.makedirs(args.dir, exist_ok=True)
    manifest = {"seed": args.seed, "events": args.events, "keys": args.keys,
                "chunks": args.chunks, "partitions": args.partitions,
                "chunk_minutes": args.chunk_minutes, "base_ms": BASE_MS, "files": []}
    base_count, extra = divmod(args.events, args.chunks)
    for c in range(args.chunks):
        count = base_count + (1 if c < extra else 0)
        start = BASE_MS + c * span
        per_partition = [[] for _ in range(args.partitions)]
        for _ in range(count):
            k = rng.randrange(args.keys)
            ts = start + rng.randrange(span)
            amount = rng.randint(1, 99999)
            per_partition[k % args.partitions].append((ts, keys[k], amount))
        for p, events in enumerate(per_partition):
            events.sort(key=lambda e: e[0])
            path = os.path.join(args.dir, f"chunk-{c:02d}-p{p}.jsonl")
            with open(path, "w", encoding="utf-8") as f:
                for ts, key, amount in events:
                    f.write(json.dumps({"user_id": key, "ts": ts, "amount": amount},
                                       separators=(",", ":")))
                    f.write("\n")
            manifest["files"].append({"chunk": c, "partition": p, "path": os.path.basename(path),
                                      "events": len(events)})
    with open(os.path.join(args.dir, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1)
    print(args.events)


def expected(args):
    pattern = re.compile(r"chunk-(\d+)-p(\d+)\.jsonl$")
    files = []
    for path in glob.glob(os.path.join(args.dir, "chunk-*-p*.jsonl")):
        m = pattern.search(path)
        if m:
            files.append((int(m.group(1)), int(m.group(2)), path))
    if not files:
        sys.exit(f"events.py: no chunk files in {args.dir}")
    files.sort()
    windows = {}        # (key, window_start_ms) -> [n, total, max_ts]
    key_partition = {}  # key -> partition
    last_ts = {}        # partition -> last event time, in production order
    total_events = 0
    by_key = {}         # sessions: key -> [(ts, amount)]
    w = None
    for _chunk, partition, path in files:
        with open(path, encoding="utf-8") as f:
            for line_no, line in enumerate(f, 1):
                e = json.loads(line)
                key, ts, amount = e["user_id"], e["ts"], e["amount"]
                if not (isinstance(ts, int) and isinstance(amount, int) and isinstance(key, str)):
                    sys.exit(f"events.py: {path}:{line_no}: unexpected types")
                if key_partition.setdefault(key, partition) != partition:
                    sys.exit(f"events.py: key {key} appears in two partitions")
                if ts < last_ts.get(partition, ts):
                    sys.exit(f"events.py: {path}:{line_no}: time goes back in partition {partition}")
                last_ts[partition] = ts
                if args.session_gap_ms is not None:
                    by_key.setdefault(key, []).append((ts, amount))
                else:
                    start = ts - ts % args.window_ms
                    w = windows.get((key, start))
                    if w is None:
                        windows[(key, start)] = [1, amount, ts]
                    else:
                        w[0] += 1
                        w[1] += amount
                        w[2] = max(w[2], ts)
                total_events += 1
    for key, events in by_key.items():
        events.sort()
        first = None
        for ts, amount in events:
            if first is None or ts - w[2] > args.session_gap_ms:
                first = ts
                w = windows[(key, first)] = [0, 0, ts]
            w[0] += 1
            w[1] += amount
            w[2] = ts
    with open(args.out, "w", encoding="utf-8", newline="") as f:
        out = csv.writer(f, lineterminator="\n")
        for (key, start), (n, total, max_ts) in sorted(windows.items()):
            out.writerow([key, start, n, total, max_ts])
    print(total_events)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate")
    g.add_argument("dir")
    g.add_argument("--seed", type=int, required=True)
    g.add_argument("--events", type=int, required=True)
    g.add_argument("--keys", type=int, required=True)
    g.add_argument("--chunks", type=int, required=True)
    g.add_argument("--partitions", type=int, default=4)
    g.add_argument("--chunk-minutes", type=int, default=12)
    e = sub.add_parser("expected")
    e.add_argument("dir")
    e.add_argument("out")
    e.add_argument("--window-ms", type=int, default=60000)
    e.add_argument("--session-gap-ms", type=int, default=None)
    args = ap.parse_args()
    if args.cmd == "generate":
        if min(args.events, args.keys, args.chunks, args.partitions, args.chunk_minutes) <= 0:
            sys.exit("events.py: counts must be positive")
        generate(args)
    else:
        expected(args)


if __name__ == "__main__":
    main()
