#!/usr/bin/env bash
# Runs README "Getting started" as written, top to bottom, and compares what psql prints with
# the output the README shows. The blocks between the marks <!-- getting-started:begin ... -->
# and <!-- getting-started:end --> (with the argument `avro`: "Getting started with Avro and a
# schema registry", between <!-- getting-started-avro:begin ... --> and its end mark) are, in
# order:
#   ```sh    run verbatim in one bash shell (set -euo pipefail), as a reader would paste them;
#   ```sql   run by psql from that shell (psql -X -v ON_ERROR_STOP=1 -f: an error fails the test);
#   ```text  what the sql block just before it prints (compared exactly, trailing blanks aside);
#   ```json  a sample message: each line must be a JSON object.
# The README's own commands start and stop the cluster (demo/cluster.sh: a throwaway
# PostgreSQL and the mock Kafka cluster, in a directory of this test's own); they are stopped
# at exit whatever happens, and every step is bounded.
#
#   PG_CONFIG=...     the PostgreSQL installation with stoatflow installed (default pg_config)
#   MOCK_BROKER=...   the mock cluster's binary (default build/stoatflow-mock-broker)
#   README=...        the file to read (default README.md; for trying a broken copy)
#   README_TEST_TIMEOUT=240   seconds for the whole section
set -euo pipefail
case "${1:-}" in
"") mark=getting-started ;;
avro) mark=getting-started-avro ;;
*) echo "usage: readme_getting_started.sh [avro]" >&2; exit 2 ;;
esac
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

export PG_CONFIG=${PG_CONFIG:-pg_config}
export MOCK_BROKER=${MOCK_BROKER:-$repo/build/stoatflow-mock-broker}
readme=${README:-$repo/README.md}
limit=${README_TEST_TIMEOUT:-240}
pg_bin=$("$PG_CONFIG" --bindir)

for tool in python3 kcat timeout "$pg_bin/psql"; do
    command -v "$tool" >/dev/null || { echo "readme_getting_started: missing $tool" >&2; exit 1; }
done

work=$(mktemp -d "/tmp/stoatflow-readme.XXXXXX")
chmod 755 "$work"
# The cluster lives in a directory of this test's own (never a reader's default one).
export STOATFLOW_CLUSTER_DIR=$work/cluster
cleanup() {
    local rc=$?
    set +e
    if [ -d "$STOATFLOW_CLUSTER_DIR" ]; then
        [ -f "$STOATFLOW_CLUSTER_DIR/server.log" ] && cp "$STOATFLOW_CLUSTER_DIR/server.log" "$work/server.log"
        timeout 90 bash "$repo/demo/cluster.sh" stop >/dev/null 2>&1
    fi
    if [ "$rc" -ne 0 ] && [ -f "$work/server.log" ]; then
        echo "---- server log tail ----" >&2
        tail -n 40 "$work/server.log" >&2
    fi
    rm -rf "$work"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# Extract the blocks and write the driver: the sh blocks inline, each sql block a run_sql call.
python3 - "$readme" "$work" "$mark" <<'PY'
import json, os, re, sys

readme, work, mark = sys.argv[1], sys.argv[2], sys.argv[3]
lines = open(readme, encoding="utf-8").read().split("\n")
begin = [i for i, l in enumerate(lines) if l.startswith(f"<!-- {mark}:begin")]
end = [i for i, l in enumerate(lines) if l.startswith(f"<!-- {mark}:end")]
if len(begin) != 1 or len(end) != 1 or end[0] < begin[0]:
    sys.exit(f"{readme}: want one {mark}:begin mark and one end mark after it")
blocks, i = [], begin[0] + 1
while i < end[0]:
    m = re.match(r"^```(\w*)\s*$", lines[i])
    if not m:
        i += 1
        continue
    lang, start, body = m.group(1), i + 1, []
    i += 1
    while i < end[0] and not lines[i].startswith("```"):
        body.append(lines[i])
        i += 1
    if i >= end[0]:
        sys.exit(f"{readme}:{start}: a code block is not closed before the end mark")
    blocks.append((lang, start, body))
    i += 1

os.makedirs(f"{work}/blocks")
driver = ["set -euo pipefail", f"source {work}/lib.sh"]
last_sql, kinds = None, {}
for n, (lang, line, body) in enumerate(blocks, 1):
    kinds[lang] = kinds.get(lang, 0) + 1
    label = f"README line {line}"
    if lang == "sh":
        driver += [f"block_begin {n} sh '{label}'"] + body + [f"block_end {n}"]
        last_sql = None
    elif lang == "sql":
        open(f"{work}/blocks/{n}.sql", "w").write("\n".join(body) + "\n")
        driver += [f"run_sql {n} '{label}'"]
        last_sql = n
    elif lang == "text":
        if last_sql is None:
            sys.exit(f"{readme}:{line}: a text block (expected output) that follows no sql block")
        open(f"{work}/blocks/{last_sql}.expected", "w").write("\n".join(body) + "\n")
        driver += [f"check_output {last_sql} '{label}'"]
        last_sql = None
    elif lang == "json":
        for k, l in enumerate(body):
            try:
                v = json.loads(l)
            except ValueError as e:
                sys.exit(f"{readme}:{line + k}: not JSON: {e}")
            if not isinstance(v, dict):
                sys.exit(f"{readme}:{line + k}: not a JSON object")
    else:
        sys.exit(f"{readme}:{line - 1}: a block of language '{lang}' (want sh, sql, text or json)")
for want in ("sh", "sql", "text"):
    if not kinds.get(want):
        sys.exit(f"{readme}: Getting started has no {want} block")
open(f"{work}/driver.sh", "w").write("\n".join(driver) + "\n")
print("readme_getting_started: " + ", ".join(f"{v} {k}" for k, v in sorted(kinds.items())) + " blocks")
PY

# The section's own temporary files (mktemp) go into this test's directory, so that what it
# leaves when it fails (the Avro section's test registry stops with its directory) goes too.
mkdir "$work/tmp"
cat >"$work/lib.sh" <<LIB
work='$work'
pg_bin='$pg_bin'
export TMPDIR='$work/tmp'
LIB
cat >>"$work/lib.sh" <<'LIB'
save_log() { [ -f "$STOATFLOW_CLUSTER_DIR/server.log" ] && cp "$STOATFLOW_CLUSTER_DIR/server.log" "$work/server.log" || true; }
block_begin() { echo "== block $1 ($2, $3)"; }
block_end() { save_log; }
run_sql() { # run_sql N LABEL: the block's SQL through psql, as the reader's psql session would run it
    echo "== block $1 (sql, $2)"
    local rc=0
    timeout 120 "$pg_bin/psql" -X -v ON_ERROR_STOP=1 -f "$work/blocks/$1.sql" >"$work/blocks/$1.out" 2>"$work/blocks/$1.err" || rc=$?
    save_log
    if [ "$rc" -ne 0 ]; then
        echo "readme_getting_started: the sql block at $2 failed (psql exit $rc):" >&2
        cat "$work/blocks/$1.err" "$work/blocks/$1.out" >&2
        exit 1
    fi
    [ -s "$work/blocks/$1.err" ] && { echo "(psql said on stderr:)"; cat "$work/blocks/$1.err"; }
    return 0
}
check_output() { # check_output N LABEL: what psql printed for block N against the README's text block
    sed -e 's/[[:space:]]*$//' "$work/blocks/$1.out" | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}' >"$work/blocks/$1.got"
    sed -e 's/[[:space:]]*$//' "$work/blocks/$1.expected" | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}' >"$work/blocks/$1.want"
    if ! diff -u "$work/blocks/$1.want" "$work/blocks/$1.got" >"$work/blocks/$1.diff"; then
        echo "readme_getting_started: psql's output differs from the README's block at $2 (- README, + psql):" >&2
        cat "$work/blocks/$1.diff" >&2
        exit 1
    fi
    echo "   output as the README shows it"
}
LIB

rc=0
timeout --kill-after=10s "$limit" bash "$work/driver.sh" || rc=$?
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "readme_getting_started: the section did not finish within ${limit}s" >&2
fi
[ "$rc" -eq 0 ] || exit "$rc"

# The section ends by stopping the cluster: nothing of it may be left.
if [ -e "$STOATFLOW_CLUSTER_DIR" ]; then
    echo "readme_getting_started: the cluster is still there after the section's last block" >&2
    exit 1
fi
if [ -f "$work/server.log" ] && grep -n "terminated by signal\|PANIC" "$work/server.log" >&2; then
    echo "readme_getting_started: the server crashed during the section" >&2
    exit 1
fi
echo "readme_getting_started: README Getting started ran as written"
