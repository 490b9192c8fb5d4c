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

# Hand-made streams: the session rules side by side (README, "Draft: differences by design").
# (key, seconds after BASE, amount); session gap 30 s, grace 10 s.
EXAMPLES = {
    # neither merges into a closed session: [0 s] closes at W = 50 s; a@25 joins the open [50 s]:
    # both give [0 s] count 1 and [25 s, 50 s] count 2
    "example_merge_closed": [("a", 0, 1), ("a", 50, 2), ("a", 25, 4)],
    # a late record joins an open session within gap even though its own [58 s] is closed
    # (W = 100 s >= 58 s + 1 ms + 30 s + 10 s): both give [58 s, 65 s] count 2
    "example_extend_back": [("x", 100, 1), ("b", 65, 2), ("b", 58, 4)],
    # a backward extension may pass over a closed session of the key: [100 s] closed at
    # W = 141 s; a@95 extends [110 s, 131 s] to [95 s, 131 s] in both (overlapping sessions)
    "example_extend_over_closed": [("a", 100, 1), ("a", 131, 2), ("x", 141, 0), ("a", 110, 4),
                                   ("x", 160, 0), ("a", 95, 8)],
    # by design: an extension onto a closed session's start. [0 s] closed at W = 41 s; a@25 starts
    # [25 s]; a second a@0 would make it [0 s, 25 s], the start of the closed [0 s]: stoatflow drops
    # it (its sink row is (key, window_start)); Kafka Streams emits [0 s] count 1 and [0 s, 25 s]
    # count 2
    "example_start_collision": [("a", 0, 1), ("x", 41, 0), ("a", 25, 2), ("a", 0, 4)],
    # by design: an extension below what stoatflow may have forgotten when the session began (its
    # floor, W - 1 ms - retention - gap then). x@200 s; a@170 s starts [170 s] (floor 129.999 s);
    # a@141 s extends it to [141 s, 170 s]; a@129 s is within gap but at the floor: stoatflow drops
    # it, [141 s, 170 s] count 2; Kafka Streams gives [129 s, 170 s] count 3
    "example_beyond_memory": [("x", 200, 0), ("a", 170, 1), ("a", 141, 2), ("a", 129, 4)],
    # by design (Kafka Streams' edge): at W = 40 s, [0 s] ends exactly at W - gap - grace: open in
    # both, but Kafka Streams' findSessions no longer returns it, so a@20 starts a session of its
    # own there: Kafka Streams [0 s] and [20 s], stoatflow [0 s, 20 s] count 2
    "example_close_boundary": [("a", 0, 1), ("x", 40, 0), ("a", 20, 2)],
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


# ---- reference models: what each system should output per its documented rules ----
# Both see one partition in offset order; stream time = W = the largest event time so far
# (max_out_of_orderness 0). Results: Counter of (key, start, end_exclusive, count, sum).

def time_windows_model(recs, size, advance, grace):
    """Tumbling/hopping, identical rules in both (README "Window kinds"; KStreamWindowAggregate): a record joins
    each of its windows [s, s+size) with s+size+grace > W (W updated first), else that window
    drops it."""
    w = None
    agg = {}
    for k, t, a in recs:
        w = t if w is None else max(w, t)
        s = max(0, t - size + advance) // advance * advance
        while s <= t:
            if s + size + grace > w:
                c, m = agg.get((k, s), (0, 0))
                agg[(k, s)] = (c + 1, m + a)
            s += advance
    return collections.Counter((k, s, s + size, c, m) for (k, s), (c, m) in agg.items())


def ks_session_model(recs, gap, grace, retention=None):
    """Kafka Streams 4.1 (KStreamSessionWindowAggregate, onWindowClose; KsWindows
    --keep-until-emitted: default retention, nothing expired before it is emitted). A record
    merges with the sessions findSessions(key, t - gap, t + gap) returns, which skips sessions
    ending before store time - retention + 1 (retention = gap + grace by default; store time = the
    largest session end put, here always W); the merged session is dropped if its end < W - gap -
    grace (closed); a session is emitted once, when it closes.
    Returns (results, notes): notes name the records that stoatflow treats differently by design."""
    if retention is None:
        retention = gap + grace
    stream_time = store_time = -1
    store = collections.defaultdict(list)  # key -> [first, last, count, sum, emitted]
    out = collections.Counter()
    notes = []
    for k, t, a in recs:
        stream_time = max(stream_time, t)
        close = stream_time - gap - grace  # end < close: closed
        for kk, ss in store.items():  # sessions that closed: emitted as they are
            for x in ss:
                if x[1] < close and not x[4]:
                    out[(kk, x[0], x[1] + 1, x[2], x[3])] += 1
                    x[4] = True
        visible_from = max(t - gap, store_time - retention + 1)
        near = [x for x in store[k] if x[1] >= t - gap and x[0] <= t + gap]
        found = [x for x in near if x[1] >= visible_from]
        first = min([t] + [x[0] for x in found])
        last = max([t] + [x[1] for x in found])
        if last < close:
            continue
        unseen = [x for x in near if x[1] < visible_from and not x[4]]
        if unseen:
            notes.append("close_boundary: %s@%d: Kafka Streams does not merge it with %s, which ends exactly at "
                         "W - gap - grace (not closed, but no longer returned by findSessions)" % (
                             k, t, [(x[0], x[1]) for x in unseen]))
        closed = [x for x in found if x[4]]
        if closed:
            notes.append("merge_closed: Kafka Streams merges %s@%d with closed session(s) %s into [%d, %d]" % (
                k, t, [(x[0], x[1]) for x in closed], first, last))
        if found and t < min(x[0] for x in found) and t + 1 + gap + grace <= stream_time:
            if any(x[4] and x[0] == t for x in store[k]):
                notes.append("start_collision: Kafka Streams extends %s back to %s@%d, where the closed session "
                             "%s starts (stoatflow drops it)" % ([(x[0], x[1]) for x in found], k, t,
                                                                 [(x[0], x[1]) for x in store[k] if x[4] and x[0] == t]))
            elif t + 1 + retention + gap <= stream_time:
                notes.append("beyond_memory: Kafka Streams extends %s back to %s@%d, more than retention + gap "
                             "behind W = %d (stoatflow drops it if that is at or below the session's floor or "
                             "a forgotten closed session)" % ([(x[0], x[1]) for x in found], k, t, stream_time))
        for x in found:
            store[k].remove(x)
        store[k].append([first, last, 1 + sum(x[2] for x in found), a + sum(x[3] for x in found), False])
        store_time = max(store_time, last)
    for kk, ss in store.items():  # the sentinel closes everything
        for x in ss:
            if not x[4]:
                out[(kk, x[0], x[1] + 1, x[2], x[3])] += 1
    return out, notes


def stoatflow_session_model(recs, gap, grace, retention=None):
    """stoatflow per README "Window kinds" and README "Grace, closing and late records", one partition, no
    restart: a record joins (merges) every open session of its key within gap, even when its own
    [t, t] is closed (extending the session backwards, also over closed sessions of the key). Such
    a backward extension is dropped (late_session) when it would start exactly where a remembered
    closed session of the key starts (the sink row is (key, window_start)), at or below the last
    record of a forgotten one (closed sessions are remembered until W >= last + 1 + retention +
    gap), or at or below the session's floor (W - 1 - retention - gap when it began: what could
    have been forgotten then). A record near no open session starts [t, t] unless that is closed
    (W >= t + 1 + gap + grace)."""
    if retention is None:
        retention = gap + grace
    w = None
    open_ = collections.defaultdict(list)  # key -> [first, last, count, sum, floor]
    closed = collections.defaultdict(list)  # key -> [(first, last)]
    out = collections.Counter()
    for k, t, a in recs:
        w = t if w is None else max(w, t)
        for kk, ss in open_.items():
            for x in list(ss):
                if w >= x[1] + 1 + gap + grace:
                    out[(kk, x[0], x[1] + 1, x[2], x[3])] += 1
                    closed[kk].append((x[0], x[1]))
                    ss.remove(x)
        own_closed = w >= t + 1 + gap + grace
        found = [x for x in open_[k] if x[0] - gap <= t <= x[1] + gap]
        if not found:
            if not own_closed:
                open_[k].append([t, t, 1, a, w - 1 - retention - gap])
            continue
        earliest = min(found, key=lambda x: x[0])
        if t < earliest[0] and own_closed:
            refused = t <= earliest[4]
            for first, last in closed[k]:
                if first >= earliest[0]:
                    continue
                forgotten = w >= last + 1 + retention + gap
                refused = refused or (t <= last if forgotten else t == first)
            if refused:
                continue
        for x in found:
            open_[k].remove(x)
        open_[k].append([min([t] + [x[0] for x in found]), max([t] + [x[1] for x in found]),
                         1 + sum(x[2] for x in found), a + sum(x[3] for x in found), earliest[4]])
    for kk, ss in open_.items():
        for x in ss:
            out[(kk, x[0], x[1] + 1, x[2], x[3])] += 1
    return out


def models(kind, recs):
    """(stoatflow model, Kafka Streams model, notes) for a stream without its sentinel."""
    sp = SPECS[kind]
    if kind == "session":
        ks, notes = ks_session_model(recs, sp["gap"], sp["grace"])
        return stoatflow_session_model(recs, sp["gap"], sp["grace"]), ks, notes
    m = time_windows_model(recs, sp["size"], sp.get("advance", sp["size"]), sp["grace"])
    return m, m, []


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
            recs = [r for r in read_stream(d, name) if r[0] != SENTINEL_KEY]
            sf_model, ks_model, notes = models(kind, recs)
            if k == pg:
                passed += 1
                if pg != sf_model:
                    print("  %s %s (seed %s): both agree, but not with the model (semantics.py is off)" % (kind, name, seed))
                continue
            explained = pg == sf_model and k == ks_model
            if explained:
                by_design += 1
                label = "differs by design (each system matches its documented rules)"
            else:
                failed += 1
                unexpected += 1
                label = "UNEXPECTED mismatch"
                if pg != sf_model:
                    label += "; stoatflow differs from its SPEC model"
                if k != ks_model:
                    label += "; Kafka Streams differs from its model"
            if shown < 3 or not explained or name.startswith("example"):
                shown += 1
                print("  %s %s (seed %s, %d records): %s" % (kind, name, seed, len(recs), label))
                for note in notes[:3]:
                    print("      %s" % note)
                for w in sorted(k - pg)[:4]:
                    print("      only Kafka Streams: key=%s [%d, %d) count=%d sum=%d" % w)
                for w in sorted(pg - k)[:4]:
                    print("      only stoatflow:     key=%s [%d, %d) count=%d sum=%d" % w)
                if pg != sf_model:
                    for w in sorted(sf_model - pg)[:4]:
                        print("      stoatflow model, not stoatflow: key=%s [%d, %d) count=%d sum=%d" % w)
                    for w in sorted(pg - sf_model)[:4]:
                        print("      stoatflow, not its model:       key=%s [%d, %d) count=%d sum=%d" % w)
                if k != ks_model:
                    for w in sorted(ks_model - k)[:4]:
                        print("      Kafka Streams model, not Kafka Streams: key=%s [%d, %d) count=%d sum=%d" % w)
                    for w in sorted(k - ks_model)[:4]:
                        print("      Kafka Streams, not its model:           key=%s [%d, %d) count=%d sum=%d" % w)
        line = "%s: %d passed, %d failed" % (kind, passed, failed)
        if kind == "session":
            line += " (%d more differ by design)" % by_design
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
