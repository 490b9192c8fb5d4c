#!/usr/bin/env bash
# Before/after: the end-to-end benchmark (bench/e2e.sh) for two builds of stoatflow, in one run,
# alternating them so that the machine's drift hits both alike.
#
#   bench/ab.sh BEFORE [AFTER]        # git revisions; AFTER defaults to the working tree
#   AB_ROUNDS=3 AB_WORKLOADS="dense sparse" bench/ab.sh 59b5e6a
#
# Each build is installed into a private copy of the PostgreSQL installation (bindir, pkglibdir,
# sharedir, as test/upgrade/run.sh does), so nothing is installed into the system's directories
# and neither build sees the other. Then, AB_ROUNDS times, e2e.sh runs once (BENCH_REPS=1) with
# each build, the order alternating between rounds. Printed per workload: stoatflow's events/s
# for both builds (median over the rounds, min, max), after/before, and each build's ratio to the
# plain-SQL rollup measured in the same e2e run. Other BENCH_* settings pass through to e2e.sh.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
die() { echo "ab: $*" >&2; exit 1; }
log() { echo "[ab $(date +%H:%M:%S)] $*"; }

[ $# -ge 1 ] || die "usage: bench/ab.sh BEFORE-REVISION [AFTER-REVISION]"
before=$1
after=${2:-}
AB_ROUNDS=${AB_ROUNDS:-3}
AB_WORKLOADS=${AB_WORKLOADS:-dense sparse}
[[ $AB_ROUNDS =~ ^[1-9][0-9]*$ ]] || die "AB_ROUNDS must be a positive integer"
SYS_PG_CONFIG=${PG_CONFIG:-$(command -v pg_config)}

work=$(mktemp -d "${BENCH_TMP:-/tmp}/stoatflow-ab.XXXXXX")
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT

# A private PostgreSQL installation with one build of stoatflow in it: prints its bindir.
install_build() {  # install_build NAME REVISION|"" (working tree)
    local name=$1 rev=$2 inst=$work/$1 src
    local bindir pkglibdir sharedir
    bindir=$("$SYS_PG_CONFIG" --bindir) pkglibdir=$("$SYS_PG_CONFIG" --pkglibdir)
    sharedir=$("$SYS_PG_CONFIG" --sharedir)
    for d in "$bindir" "$pkglibdir" "$sharedir"; do
        mkdir -p "$inst$(dirname "$d")"
        [ -d "$inst$d" ] || cp -a "$d" "$inst$(dirname "$d")/"
    done
    rm -f "$inst$pkglibdir/stoatflow.so" "$inst$sharedir"/extension/stoatflow[.-]*
    rm -rf "$inst$pkglibdir/bitcode/stoatflow" "$inst$pkglibdir/bitcode/stoatflow.index.bc"
    if [ -n "$rev" ]; then
        src=$work/src-$name
        mkdir -p "$src"
        git archive "$rev" | tar -x -C "$src"
    else
        src=$repo
    fi
    make -C "$src" -s -j"$(nproc)" PG_CONFIG="$SYS_PG_CONFIG" >"$work/build-$name.log" 2>&1 ||
        { tail -n 30 "$work/build-$name.log" >&2; die "building $name (${rev:-working tree}) failed"; }
    make -C "$src" -s install DESTDIR="$inst" PG_CONFIG="$SYS_PG_CONFIG" >>"$work/build-$name.log" 2>&1 ||
        { tail -n 30 "$work/build-$name.log" >&2; die "installing $name failed"; }
    chmod -R a+rX "$inst"
    [ "$("$inst$bindir/pg_config" --pkglibdir)" = "$inst$pkglibdir" ] ||
        die "the copied PostgreSQL does not relocate"
    echo "$inst$bindir"
}

log "building before (${before}) and after (${after:-working tree}) into private installations"
bin_before=$(install_build before "$before")
bin_after=$(install_build after "$after")
label_before=$(git rev-parse --short "$before")
label_after=${after:+$(git rev-parse --short "$after")}
label_after=${label_after:-"working tree ($(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo '+changes'))"}

for round in $(seq 1 "$AB_ROUNDS"); do
    order="before after"
    [ $((round % 2)) -eq 0 ] && order="after before"
    for side in $order; do
        bin=$bin_before
        [ "$side" = after ] && bin=$bin_after
        log "round $round/$AB_ROUNDS: $side"
        PATH="$bin:$PATH" PG_BIN="$bin" BENCH_REPS=1 BENCH_WORKLOADS="$AB_WORKLOADS" \
            BENCH_RESULTS_TSV="$work/$side-$round.tsv" bash bench/e2e.sh >"$work/e2e-$side-$round.log" 2>&1 ||
            { tail -n 30 "$work/e2e-$side-$round.log" >&2; die "e2e.sh failed ($side, round $round)"; }
    done
done

python3 - "$work" "$AB_ROUNDS" "$label_before" "$label_after" "$AB_WORKLOADS" <<'PY'
import statistics, sys
work, rounds, lb, la, wls = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5].split()
def load(side, r):
    vals = {}
    for line in open(f"{work}/{side}-{r}.tsv"):
        wl, _rep, metric, v = line.rstrip("\n").split("\t")
        vals[(wl, metric)] = float(v)
    for line in open(f"{work}/{side}-{r}.tsv.meta"):
        wl, name, v = line.rstrip("\n").split("\t", 2)
        if name == "events":
            vals[(wl, "events")] = float(v)
    return vals
data = {s: [load(s, r) for r in range(1, rounds + 1)] for s in ("before", "after")}
print(f"before: {lb}\nafter:  {la}\nrounds: {rounds} (bench/e2e.sh with BENCH_REPS=1 per build and round, order alternating)\n")
print(f"{'workload':<10}{'before ev/s':>14}{'after ev/s':>14}{'after/before':>14}{'b/c before':>12}{'b/c after':>12}")
for wl in wls:
    med = {}
    for side in ("before", "after"):
        runs = data[side]
        evs = [v[(wl, "events")] / v[(wl, "b")] for v in runs]
        # a workload without the plain-SQL run (dense_avro) has no b/c
        bc = [(v[(wl, "c_copy")] + v[(wl, "c_rollup")]) / v[(wl, "b")] for v in runs if (wl, "c_copy") in v] or [float("nan")]
        med[side] = (statistics.median(evs), statistics.median(bc), evs)
    print(f"{wl:<10}{med['before'][0]:>14,.0f}{med['after'][0]:>14,.0f}{med['after'][0] / med['before'][0]:>14.3f}"
          f"{med['before'][1]:>12.2f}{med['after'][1]:>12.2f}")
    for side in ("before", "after"):
        print(f"    {side:<6} stoatflow ev/s per round: " + ", ".join(f"{e:,.0f}" for e in med[side][2]))
PY
