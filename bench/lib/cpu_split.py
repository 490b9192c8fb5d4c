#!/usr/bin/env python3
"""Where each core's time goes during a measured run (bench/e2e.sh, issue 22).

  cpu_split.py snap POSTMASTER_PID [BROKER_PID]     > before.json
  cpu_split.py diff before.json POSTMASTER_PID WORKER_PID [BROKER_PID]

`snap` reads user+system ticks of every PostgreSQL process (the postmaster's children, from
/proc/PID/stat; the postmaster's own cutime/cstime holds its reaped children, e.g. autovacuum
workers that came and went) and of the broker. `diff` reads them again and prints, one per
line, `group seconds` for the interval:

  worker_main      the source worker's main thread (fold, snapshot, commit: PostgreSQL)
  worker_consume   its consume threads (named sf:consume; they are started for each commit and
                   joined after it, so most of their time is in the exited threads' share)
  worker_rdkafka   its librdkafka threads (rdk:*), live at the end
  worker_exited    threads of the worker that exited before the end (mostly consume threads)
  worker_total     the whole worker process
  backends         client backends (the benchmark's psql sessions)
  checkpointer, walwriter, bgwriter, autovacuum, other_postgres
  exited_postgres  PostgreSQL processes that exited during the interval
  broker           the broker process and its threads (mock broker or the JVM)

Threads are read from /proc/PID/task/TID/stat; a thread's `comm` names it.
"""
import json
import os
import sys

HZ = os.sysconf("SC_CLK_TCK")


def fields(path):
    """The fields after the command (`pid (comm) state ...` → [state, ...]), or None."""
    try:
        with open(path) as f:
            s = f.read()
    except OSError:
        return None
    return s[s.rindex(")") + 2:].split()


def ticks(path, children=False):
    f = fields(path)
    if f is None:
        return None
    t = int(f[11]) + int(f[12])  # utime, stime
    if children:
        t += int(f[13]) + int(f[14])  # cutime, cstime
    return t


def comm(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def children(ppid):
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        f = fields("/proc/%s/stat" % d)
        if f is not None and int(f[1]) == ppid:
            out.append(int(d))
    return out


def kind(pid):
    c = cmdline(pid)
    for k in ("checkpointer", "walwriter", "background writer", "autovacuum", "stoatflow source"):
        if k in c:
            return {"background writer": "bgwriter", "stoatflow source": "worker"}.get(k, k)
    if "stoatflow" in c:
        return "other_postgres"  # the launcher, backfill workers
    if "logical replication" in c or "stats" in c or "archiver" in c:
        return "other_postgres"
    return "backends"


def snap(postmaster, broker):
    s = {"procs": {}, "broker": 0}
    s["postmaster_children"] = (ticks("/proc/%d/stat" % postmaster, children=True) or 0) - (
        ticks("/proc/%d/stat" % postmaster) or 0)
    for pid in children(postmaster):
        t = ticks("/proc/%d/stat" % pid)
        if t is not None:
            s["procs"][str(pid)] = [kind(pid), t]
    if broker:
        s["broker"] = ticks("/proc/%d/stat" % broker) or 0
    return s


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "snap":
        broker = int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[3] else 0
        json.dump(snap(int(sys.argv[2]), broker), sys.stdout)
        return
    if len(sys.argv) < 5 or sys.argv[1] != "diff":
        sys.exit(__doc__)
    with open(sys.argv[2]) as f:
        before = json.load(f)
    postmaster, worker = int(sys.argv[3]), int(sys.argv[4])
    broker = int(sys.argv[5]) if len(sys.argv) > 5 and sys.argv[5] else 0
    after = snap(postmaster, broker)
    out = {k: 0 for k in ("worker_main", "worker_consume", "worker_rdkafka", "worker_exited",
                          "worker_total", "backends", "checkpointer", "walwriter", "bgwriter",
                          "autovacuum", "other_postgres", "exited_postgres", "broker")}
    for pid, (k, t) in after["procs"].items():
        if int(pid) == worker:
            continue
        out[k if k != "worker" else "other_postgres"] += t - before["procs"].get(pid, [k, 0])[1]
    out["exited_postgres"] = after["postmaster_children"] - before["postmaster_children"]
    if worker:
        total = ticks("/proc/%d/stat" % worker) or 0
        live = 0
        try:
            tids = os.listdir("/proc/%d/task" % worker)
        except OSError:
            tids = []
        for tid in tids:
            t = ticks("/proc/%d/task/%s/stat" % (worker, tid))
            if t is None:
                continue
            live += t
            name = comm("/proc/%d/task/%s/comm" % (worker, tid))
            if int(tid) == worker:
                out["worker_main"] += t
            elif name.startswith("rdk:"):
                out["worker_rdkafka"] += t
            elif name.startswith("sf:consume"):
                out["worker_consume"] += t
            else:
                out["worker_exited"] += t  # another live thread (registry fetch): counted here
        out["worker_exited"] += max(0, total - live)
        out["worker_total"] = total
    if broker:
        out["broker"] = after["broker"] - before["broker"]
    for k, v in out.items():
        print("%s %.2f" % (k, v / HZ))


if __name__ == "__main__":
    main()
