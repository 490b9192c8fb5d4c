#!/usr/bin/env python3
"""Streams and comparison for semantics.sh (Kafka Streams vs stoatflow, final windows).

  semantics.py gen DIR --seed S --streams N
      DIR/streams.txt: one line per stream: NAME SEED RECORDS
      DIR/NAME.kv: KEY|JSON lines, in produce order, ending with the sentinel record
  semantics.py compare DIR KS_OUTPUT PG_DIR
      KS_OUTPUT: the Kafka Streams output topic (KsWindows JSON lines)
      PG_DIR/NAME.KIND.csv: key,window_start_ms,window_end_ms,count,sum of stoatflow's sink
      prints "KIND: N passed, M failed" (sessions: also by-design differences) and exits 1 on
      an unexpected mismatch.

Window specs (ms) are fixed here and passed to both systems by semantics.sh (`specs`).
"""
import collections
import json
import os
import random
import sys

SPECS = {
    "tumbling": {"size": 60000, "grace": 10000},
    "hopping": {"size": 60000, "advance": 20000, "grace": 10000},
    "session": {"gap": 30000, "grace": 10000},
}
SENTINEL_KEY = "~sentinel"
BASE = 1767225600000  # 2026-01-01 00:00:00 UTC, a multiple of every window size
DAY = 86400000

# Hand-made streams: each shows one by-design difference (README, "Compared with Kafka Streams").
# (key, seconds after BASE, amount); session gap 30 s, grace 10 s.
EXAMPLES = {
    # a closed session is never reopened (stoatflow); Kafka Streams merges the late record into it
    # because the merged session [0 s, 50 s] ends after its close time (50 − 30 − 10 = 10 s).
    "example_merge_closed": [("a", 0, 1), ("a", 50, 2), ("a", 25, 4)],
    # a late record extends an open session backwards only to times that were still open when the
    # session began: [65 s] began at W = 100 s, and 58 s + 1 ms + 30 s + 10 s <= 100 s.
    "example_extend_back": [("x", 100, 1), ("b", 65, 2), ("b", 58, 4)],
}


def record_line(key, ts, amount):
    return "%s|%s" % (key, json.dumps({"user_id": key, "ts": ts, "amount": amount}, separators=(",", ":")))


def gen_stream(seed):
    rng = random.Random(seed)
    n = rng.randint(200, 2000)
    keys = ["u%d" % i for i in range(rng.randint(2, 5))]
    clock = BASE + rng.randint(0, 120) * 1000
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.55:
            step = rng.randint(0, 5) * 1000  # whole seconds: windows edges are hit exactly
        elif r < 0.9:
            step = rng.randint(0, 15000)
        else:
            step = rng.randint(20000, 90000)  # gaps that end sessions
        clock += step
        r = rng.random()
        if r < 0.7:
            late = 0
        elif r < 0.85:
            late = rng.choice([rng.randint(0, 15) * 1000, rng.randint(0, 15000)])  # around grace
        else:
            late = rng.randint(10000, 200000)  # beyond grace, often beyond closed windows
        ts = max(BASE, clock - late)
        out.append((rng.choice(keys), ts, rng.randint(-5, 100)))
    return out


def write_stream(d, name, recs):
    top = max(ts for _, ts, _ in recs)
    with open(os.path.join(d, name + ".kv"), "w") as f:
        for k, ts, a in recs:
            f.write(record_line(k, ts, a) + "\n")
        # far in the future: closes every window in both systems (stoatflow: future_limit => NULL)
        f.write(record_line(SENTINEL_KEY, top + DAY, 0) + "\n")
    return len(recs) + 1


def cmd_gen(d, seed, streams):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "streams.txt"), "w") as idx:
        for name, ex in EXAMPLES.items():
            recs = [(k, BASE + s * 1000, a) for k, s, a in ex]
            idx.write("%s %s %d\n" % (name, "-", write_stream(d, name, recs)))
        for i in range(streams):
            s = seed * 1000 + i
            name = "s%d" % s
            idx.write("%s %d %d\n" % (name, s, write_stream(d, name, gen_stream(s))))


def read_stream(d, name):
    recs = []
    with open(os.path.join(d, name + ".kv")) as f:
        for line in f:
            k, js = line.rstrip("\n").split("|", 1)
            v = json.loads(js)
            recs.append((k, v["ts"], v["amount"]))
    return recs


# ---- Kafka Streams' session rules (KStreamSessionWindowAggregate), to explain differences ----
def ks_session_notes(recs, gap, grace):
    """Replays Kafka Streams' session logic; returns notes on records that stoatflow treats
    differently by design: merges into a closed session, backward extensions to closed times."""
    stream_time = -1
    store = collections.defaultdict(list)  # key -> [first, last, began_w]
    notes = []
    for k, t, _ in recs:
        stream_time = max(stream_time, t)
        close = stream_time - gap - grace  # a session with end < close is closed
        found = [s for s in store[k] if s[1] >= t - gap and s[0] <= t + gap]
        first = min([t] + [s[0] for s in found])
        last = max([t] + [s[1] for s in found])
        if last < close:
            continue  # dropped by both
        closed = [s for s in found if s[1] < close]
        if closed:
            notes.append("merge_closed: record %s@%d merges closed session(s) %s into [%d, %d]" % (
                k, t, [(s[0], s[1]) for s in closed], first, last))
        elif found and t < min(s[0] for s in found) and t + 1 + gap + grace <= max(s[2] for s in found):
            notes.append("extend_back: record %s@%d extends session(s) %s back to a time closed when it began" % (
                k, t, [(s[0], s[1]) for s in found]))
        for s in found:
            store[k].remove(s)
        began = min([stream_time] + [s[2] for s in found]) if found else stream_time
        store[k].append([first, last, began])
    return notes


def cmd_compare(d, ks_path, pg_dir):
    streams = []
    with open(os.path.join(d, "streams.txt")) as f:
        for line in f:
            name, seed, n = line.split()
            streams.append((name, seed, int(n)))
    ks = collections.defaultdict(collections.Counter)
    with open(ks_path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            v = json.loads(line)
            if v["key"] == SENTINEL_KEY:
                continue
            end = v["window_end"] + (1 if v["window"] == "session" else 0)  # inclusive -> [first, last+1)
            ks[(v["topic"], v["window"])][(v["key"], v["window_start"], end, v["count"], v["sum"])] += 1
    unexpected = 0
    for kind in SPECS:
        passed = failed = by_design = 0
        shown = 0
        for name, seed, _ in streams:
            pg = collections.Counter()
            with open(os.path.join(pg_dir, "%s.%s.csv" % (name, kind))) as f:
                for line in f:
                    if not line.strip():
                        continue
                    key, ws, we, c, s = line.strip().split(",")
                    if key == SENTINEL_KEY:
                        continue
                    pg[(key, int(ws), int(we), int(c), int(s))] += 1
            k = ks[("semantics_" + name, kind)]
            if k == pg:
                passed += 1
                continue
            notes = []
            if kind == "session":
                notes = ks_session_notes(read_stream(d, name), SPECS["session"]["gap"], SPECS["session"]["grace"])
            only_ks = sorted(k - pg)
            only_pg = sorted(pg - k)
            if notes:
                by_design += 1
                label = "differs by design"
            else:
                failed += 1
                unexpected += 1
                label = "UNEXPECTED mismatch"
            if shown < 3 or not notes or name.startswith("example"):
                shown += 1
                print("  %s %s (seed %s): %s" % (kind, name, seed, label))
                for note in notes[:3]:
                    print("      %s" % note)
                for w in only_ks[:4]:
                    print("      only Kafka Streams: key=%s [%d, %d) count=%d sum=%d" % w)
                for w in only_pg[:4]:
                    print("      only stoatflow:     key=%s [%d, %d) count=%d sum=%d" % w)
        line = "%s: %d passed, %d failed" % (kind, passed, failed)
        if kind == "session":
            line += ", %d differ by design (explained by the replayed Kafka Streams rules)" % by_design
        print(line)
    return 1 if unexpected else 0


def main():
    a = sys.argv[1:]
    if a and a[0] == "gen":
        d = a[1]
        seed = int(a[a.index("--seed") + 1])
        n = int(a[a.index("--streams") + 1])
        cmd_gen(d, seed, n)
    elif a and a[0] == "compare":
        sys.exit(cmd_compare(a[1], a[2], a[3]))
    elif a and a[0] == "specs":
        for kind, s in SPECS.items():
            print(kind, *s.values())
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
