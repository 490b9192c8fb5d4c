#!/usr/bin/env python3
"""Checks an engine benchmark smoke run (stoatflow_engine_bench --benchmark_out=FILE
--benchmark_out_format=json): that each run/* workload ran with events > 0 and that every
*_commit_* variant actually flushed mid-stream (state_rows/iter > 0 and upserts/iter > 0),
so the smoke size cannot silently skip the commit-time flush path. Exits 1 with the reasons.

    check_engine_smoke.py FILE [--expect-commit-variants N]
"""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--expect-commit-variants", type=int, default=5,
                    help="how many distinct run/*_commit_* benchmarks must be present")
    args = ap.parse_args()
    with open(args.file) as f:
        benchmarks = json.load(f).get("benchmarks", [])

    problems = []
    commit_variants = set()
    runs = set()
    for b in benchmarks:
        name = b.get("run_name", b["name"])
        if b.get("error_occurred"):
            problems.append(f"{b['name']}: error: {b.get('error_message', '?')}")
            continue
        if not name.startswith("run/"):
            continue
        # Per repetition results and the mean/median aggregates carry the counters; the
        # stddev/cv aggregates of a constant counter are 0 by construction.
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") not in ("mean", "median"):
            continue
        runs.add(name)
        if not b.get("events", 0) > 0:
            problems.append(f"{b['name']}: events = {b.get('events')}")
        if "_commit_" in name:
            commit_variants.add(name)
            for counter in ("state_rows/iter", "upserts/iter"):
                if not b.get(counter, 0) > 0:
                    problems.append(f"{b['name']}: {counter} = {b.get(counter)} (the commit-time flush never ran)")

    if not runs:
        problems.append("no run/* benchmark in the output")
    if len(commit_variants) != args.expect_commit_variants:
        problems.append(f"{len(commit_variants)} *_commit_* benchmarks ran, expected {args.expect_commit_variants}: "
                        + ", ".join(sorted(commit_variants)))
    if problems:
        for p in problems:
            print(f"engine smoke: {p}", file=sys.stderr)
        print(f"engine smoke: FAIL ({len(problems)} problems)", file=sys.stderr)
        return 1
    print(f"engine smoke: {len(runs)} workloads ran; all {len(commit_variants)} *_commit_* variants "
          "flushed mid-stream (state_rows/iter > 0)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
