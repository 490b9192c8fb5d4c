#!/usr/bin/env bash
# Starts a throwaway server WITHOUT shared_preload_libraries and checks that CREATE EXTENSION
# stoatflow fails with SQLSTATE 55000 and a message naming shared_preload_libraries.
set -euo pipefail

PG_CONFIG=${PG_CONFIG:-pg_config}
bindir=$("$PG_CONFIG" --bindir)
port=${PRELOAD_CHECK_PORT:-55432}

run_as=()
tmp_root=${TMPDIR:-/tmp}
if [ "$(id -u)" -eq 0 ]; then
    run_as=(runuser -u postgres --)
    tmp_root=/tmp
fi
work=$(mktemp -d "$tmp_root/stoatflow-preload.XXXXXX")
if [ "$(id -u)" -eq 0 ]; then chown postgres: "$work"; fi
data="$work/data"

cleanup() {
    if [ -f "$data/postmaster.pid" ]; then
        "${run_as[@]}" "$bindir/pg_ctl" -D "$data" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

fail() {
    echo "preload_check: FAIL: $*" >&2
    if [ -f "$work/server.log" ]; then sed 's/^/  server.log: /' "$work/server.log" >&2; fi
    exit 1
}

"${run_as[@]}" "$bindir/initdb" -D "$data" -U postgres -A trust --no-locale -E UTF8 \
    >"$work/initdb.log" 2>&1 || { cat "$work/initdb.log" >&2; fail "initdb failed"; }
# Unix socket in the scratch dir only: no TCP listener, so no clash with any other server.
"${run_as[@]}" "$bindir/pg_ctl" -D "$data" -l "$work/server.log" -w -t 60 \
    -o "-p $port -k $work -c listen_addresses='' -c shared_preload_libraries=''" start \
    >/dev/null || fail "server did not start"

psql=("${run_as[@]}" "$bindir/psql" -X -h "$work" -p "$port" -U postgres -d postgres
      -v VERBOSITY=verbose)

if out=$("${psql[@]}" -c "CREATE EXTENSION stoatflow" 2>&1); then
    fail "CREATE EXTENSION succeeded without shared_preload_libraries"
fi
echo "$out" | sed 's/^/  psql: /'
grep -q "ERROR:  55000: stoatflow must be loaded via shared_preload_libraries" <<<"$out" ||
    fail "unexpected error (want SQLSTATE 55000 and the shared_preload_libraries message)"
grep -q "HINT:  Add stoatflow to shared_preload_libraries in postgresql.conf" <<<"$out" ||
    fail "hint missing"

installed=$("${psql[@]}" -Atc "SELECT count(*) FROM pg_extension WHERE extname = 'stoatflow'")
[ "$installed" = "0" ] || fail "the extension was left installed"

if grep -n "terminated by signal" "$work/server.log" >&2; then
    fail "the server crashed"
fi
echo "preload_check: CREATE EXTENSION without shared_preload_libraries fails as it should"
