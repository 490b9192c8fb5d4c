#!/usr/bin/env python3
"""Summarise bench/e2e.sh measurements: a table per workload on stdout, markdown to a file.

    report.py RESULTS.tsv META.tsv OUT.md

RESULTS.tsv: workload, rep, metric, value (tab separated). Metrics, in seconds unless noted:
  a = raw consume, b = stoatflow, c_copy = kcat | COPY, c_rollup = INSERT … GROUP BY … ON
  CONFLICT; b_cpu = CPU seconds of the stoatflow source worker; b_start = seconds from the
  declaration to the worker's backend_start; cpu_<group> = CPU seconds of one group of processes
  or worker threads during (b) (bench/lib/cpu_split.py).
META.tsv: workload, key, value (events, title, targets "b/a>=0.9,b/c>=2.5" or "b>=300000"
(events/s) or "b/dense>=0.9" (stoatflow's events/s against another workload's, medians; per
repetition too), ...), and
  workload "_run" for run-wide facts.
"""
import statistics
import sys
from collections import defaultdict


def fmt_rate(x):
    return "{:,.0f}".format(x)


def main():
    res_path, meta_path, md_path = sys.argv[1:4]
    vals = defaultdict(lambda: defaultdict(dict))  # wl -> metric -> rep -> value
    order = []
    for line in open(res_path):
        wl, rep, metric, value = line.rstrip("\n").split("\t")
        if wl not in order:
            order.append(wl)
        vals[wl][metric][int(rep)] = float(value)
    meta = defaultdict(dict)
    for line in open(meta_path):
        wl, k, v = line.rstrip("\n").split("\t", 2)
        meta[wl][k] = v

    # stoatflow's events/s per workload and repetition, for the targets "b/<workload>"
    b_rate = {wl: {r: int(meta[wl]["events"]) / s for r, s in vals[wl]["b"].items()} for wl in order}
    out, md = [], []
    run = meta.get("_run", {})
    md.append("# stoatflow end-to-end benchmark, %s\n" % run.get("date", "?"))
    for k in ("machine", "postgres", "stoatflow", "broker", "librdkafka", "settings", "columns", "scale", "reps", "runtime", "warning"):
        if k in run:
            md.append("- %s: %s" % (k, run[k]))
    md.append("")
    all_met = True
    for wl in order:
        m = meta[wl]
        ev = int(m["events"])
        reps = sorted(vals[wl]["a"].keys())
        per = defaultdict(list)  # contender -> list of (seconds) per rep
        for r in reps:
            v = {k: vals[wl][k].get(r) for k in vals[wl]}
            per["a"].append(v["a"])
            per["b"].append(v["b"])
            if v.get("c_copy") is not None:  # a workload without the plain-SQL run (dense_avro) has none
                per["c"].append(v["c_copy"] + v["c_rollup"])
                per["c_copy"].append(v["c_copy"])
                per["c_rollup"].append(v["c_rollup"])
            if v.get("b_cpu") is not None:
                per["b_cpu"].append(v["b_cpu"])
            for k in ("b_start", "b_commits", "b_sink_writes", "b_state_rows", "load", "b_wal", "c_wal",
                      "b_sink_rows", "b_commit_p50", "b_commit_p99", "b_commit_max", "b_logged_commits",
                      "b_state_bytes", "b_state_us_per_row", "b_sink_us_per_row"):
                if v.get(k) is not None:
                    per[k].append(v[k])
            for k in v:  # the CPU split of (b): cpu_<group> seconds (bench/lib/cpu_split.py)
                if k.startswith("cpu_") and v[k] is not None:
                    per[k].append(v[k])
        rate = {k: [ev / s for s in per[k]] for k in ("a", "b", "c", "c_copy", "c_rollup") if per[k]}
        med = {k: statistics.median(rate[k]) for k in rate}
        title = "%s: %s" % (wl, m.get("title", ""))
        head = "%s events, %s keys, %s min of event time, %s partitions, %d rep(s)%s" % (
            "{:,}".format(ev), "{:,}".format(int(m["keys"])), m["minutes"], m["partitions"], len(reps),
            "; " + m["shape"] if "shape" in m else "")
        out.append("")
        out.append("== " + title)
        out.append("   " + head)
        out.append("   %-26s %12s %12s %12s %10s" % ("", "events/s med", "min", "max", "s (med)"))
        names = [("a", "(a) raw consume"), ("b", "(b) stoatflow"), ("c", "(c) plain SQL"),
                 ("c_copy", "    c: kcat | COPY"), ("c_rollup", "    c: rollup INSERT")]
        md.append("## " + title)
        md.append("")
        md.append(head)
        md.append("")
        md.append("| contender | events/s (median) | min | max | seconds (median) | per rep (s) |")
        md.append("|---|---:|---:|---:|---:|---|")
        for k, name in names:
            if k not in rate:
                continue
            out.append("   %-26s %12s %12s %12s %10.2f" % (name, fmt_rate(med[k]), fmt_rate(min(rate[k])),
                                                          fmt_rate(max(rate[k])), statistics.median(per[k])))
            md.append("| %s | %s | %s | %s | %.2f | %s |" % (name.strip().replace("|", "\\|"), fmt_rate(med[k]), fmt_rate(min(rate[k])),
                                                            fmt_rate(max(rate[k])), statistics.median(per[k]),
                                                            " ".join("%.2f" % s for s in per[k])))
        extra = []
        if per["b_cpu"]:
            extra.append("stoatflow worker CPU %.2f s (median; %.0f%% of its wall time)"
                         % (statistics.median(per["b_cpu"]),
                            100 * statistics.median(per["b_cpu"]) / statistics.median(per["b"])))
        split = [(k[4:], statistics.median(per[k])) for k in sorted(per) if k.startswith("cpu_") and per[k]]
        if split:
            # worker_total holds its threads; the other groups are processes of their own
            procs = sum(sec for g, sec in split if not g.startswith("worker_") or g == "worker_total")
            extra.append("CPU seconds during (b), medians (%.1f s in all over %.2f s of wall time, %.2f cores): %s"
                         % (procs, statistics.median(per["b"]), procs / statistics.median(per["b"]),
                            ", ".join("%s %.2f" % (g, sec) for g, sec in split if sec >= 0.005)))
        if per["b_start"]:
            extra.append("worker started %.2f s after the declaration (median)" % statistics.median(per["b_start"]))
        if per["b_commits"]:
            extra.append("stoatflow per run (median): %d commits, %s sink row writes (%.2f per event), "
                         "%s state rows written (%.2f per event)"
                         % (statistics.median(per["b_commits"]), "{:,.0f}".format(statistics.median(per["b_sink_writes"])),
                            statistics.median(per["b_sink_writes"]) / ev,
                            "{:,.0f}".format(statistics.median(per["b_state_rows"])),
                            statistics.median(per["b_state_rows"]) / ev))
        if per["b_sink_rows"]:
            extra.append("sink writes per window: %.2f (%s writes, %s windows in the sink; median)"
                         % (statistics.median(per["b_sink_writes"]) / statistics.median(per["b_sink_rows"]),
                            "{:,.0f}".format(statistics.median(per["b_sink_writes"])),
                            "{:,.0f}".format(statistics.median(per["b_sink_rows"]))))
        if per["b_commit_p50"]:
            commits = statistics.median(per["b_logged_commits"])
            sbytes = statistics.median(per["b_state_bytes"])
            srows = statistics.median(per["b_state_rows"])
            extra.append("commit latency over a run's commits (medians of the reps): p50 %.0f ms, p99 %.0f ms, "
                         "max %.0f ms; state written per commit: %s rows, %.1f MB (%.0f bytes per state row)"
                         % (statistics.median(per["b_commit_p50"]), statistics.median(per["b_commit_p99"]),
                            statistics.median(per["b_commit_max"]), "{:,.0f}".format(srows / max(commits, 1)),
                            sbytes / max(commits, 1) / 1e6, sbytes / max(srows, 1)))
        if per["b_state_us_per_row"]:
            extra.append("writing cost inside the commits (median): state %.2f us per state row, sink %.2f us per "
                         "sink row (deletes included)" % (statistics.median(per["b_state_us_per_row"]),
                                                           statistics.median(per["b_sink_us_per_row"])))
        if per["b_wal"] and per["c_wal"]:
            bw, cw = statistics.median(per["b_wal"]), statistics.median(per["c_wal"])
            extra.append("WAL written (median): stoatflow %.0f MB (%.0f bytes per event), plain SQL %.0f MB (%.0f bytes per event)"
                         % (bw / 1e6, bw / ev, cw / 1e6, cw / ev))
        if per["load"]:
            extra.append("1-min load average at the start of each repetition: %s (it includes this benchmark's "
                         "own preceding work)" % " ".join("%.2f" % x for x in per["load"]))
        for k in ("rows", "check", "registry"):
            if k in m:
                extra.append(m[k])
        ratios = {"b/a": med["b"] / med["a"]}
        if "c" in med:
            ratios["b/c"] = med["b"] / med["c"]
        targets = {}
        for t in filter(None, m.get("targets", "").split(",")):
            name, thr = t.split(">=")
            targets[name] = float(thr)
        for name in targets:  # b/<workload>: against another workload of the run
            other = name[2:]
            if name.startswith("b/") and other in b_rate and b_rate[other]:
                ratios[name] = med["b"] / statistics.median(b_rate[other].values())
                extra.append("%s per repetition (interleaved runs): %s" % (name, " ".join(
                    "%.3f" % (b_rate[wl][r] / b_rate[other][r]) for r in sorted(b_rate[wl]) if r in b_rate[other])))
        rline = []
        if "b" in targets:  # an absolute target: stoatflow's events/s
            ok = med["b"] >= targets["b"]
            all_met &= ok
            rline.append("b = %.0f ev/s (target >= %.0f: %s)" % (med["b"], targets["b"], "MET" if ok else "MISSED"))
        for name in ["b/a", "b/c"] + sorted(n for n in ratios if n not in ("b/a", "b/c")):
            if name not in ratios:
                continue
            s = "%s = %.2f" % (name, ratios[name])
            if name in targets:
                ok = ratios[name] >= targets[name]
                all_met &= ok
                s += " (target >= %g: %s)" % (targets[name], "MET" if ok else "MISSED")
            rline.append(s)
        out.append("   " + "   ".join(rline))
        for e in extra:
            out.append("   " + e)
        md.append("")
        md.append("**" + "; ".join(rline) + "**")
        md.append("")
        for e in extra:
            md.append("- " + e)
        md.append("")
    out.append("")
    out.append("all targets met" if all_met else "some targets MISSED")
    md.append("Targets: " + ("all met" if all_met else "some missed") + ".")
    print("\n".join(out))
    with open(md_path, "w") as f:
        f.write("\n".join(md) + "\n")


if __name__ == "__main__":
    main()
