#!/usr/bin/env bash
# The one test command: core unit tests (CMake/ctest, plus an ASan/UBSan build in CI or with
# SANITIZE=1), build + install the extension, pg_regress, the preload check, the Kafka round trip.
# SKIP_CORE=1 skips the two CMake steps (for work on the PostgreSQL layer alone; never in CI).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

jobs=${JOBS:-2}
passed=0
skipped=0
current=""
results=()

finish() {
    local rc=$?
    echo
    echo "================ stoatflow test summary ================"
    for line in "${results[@]}"; do echo "  $line"; done
    if [ "$rc" -ne 0 ]; then
        echo "  FAIL  $current (exit $rc)"
        echo "run_all: $passed passed, 1 failed, $skipped skipped"
    else
        echo "run_all: $passed passed, 0 failed, $skipped skipped"
    fi
    exit "$rc"
}
trap finish EXIT

step() {  # step NAME COMMAND...: runs one step; the first failure ends the run
    current=$1
    shift
    echo
    echo "==== $current ===="
    "$@"
    results+=("ok    $current")
    passed=$((passed + 1))
}

skip() {  # skip NAME REASON
    echo
    echo "==== $1: skipped ($2) ===="
    results+=("skip  $1 ($2)")
    skipped=$((skipped + 1))
}

core_build() {  # core_build DIR CMAKE-ARGS...
    local dir=$1
    shift
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTOATFLOW_WERROR=ON "$@"
    cmake --build "$dir" -j"$jobs"
    ctest --test-dir "$dir" --output-on-failure --no-tests=error
}

# (a) the pure core and its unit tests
if [ "${SKIP_CORE:-0}" = "1" ] && [ "${CI:-}" != "true" ]; then
    skip "core: cmake build + ctest" "SKIP_CORE=1"
elif [ -f CMakeLists.txt ]; then
    step "core: cmake build + ctest" core_build build
else
    skip "core: cmake build + ctest" "no CMakeLists.txt"
fi

# (b) the same under AddressSanitizer + UndefinedBehaviorSanitizer
if [ "${SKIP_CORE:-0}" = "1" ] && [ "${CI:-}" != "true" ]; then
    skip "core: ASan/UBSan build + ctest" "SKIP_CORE=1"
elif [ "${CI:-}" = "true" ] || [ "${SANITIZE:-0}" = "1" ]; then
    if [ -f CMakeLists.txt ]; then
        step "core: ASan/UBSan build + ctest" core_build build-asan -DSTOATFLOW_SANITIZE=ON
    else
        skip "core: ASan/UBSan build + ctest" "no CMakeLists.txt"
    fi
else
    skip "core: ASan/UBSan build + ctest" "set SANITIZE=1 or CI=true"
fi

# (c) the extension (needs root, or write access to PostgreSQL's lib and share dirs, to install)
step "extension: make" make -j"$jobs"
step "extension: make install" make install

# (d) pg_regress in a temp instance that preloads stoatflow
step "pg_regress (make installcheck)" make installcheck

# (e) CREATE EXTENSION without shared_preload_libraries must fail clearly
step "preload check" bash test/preload_check.sh

# (f) the mock Kafka broker round trip
if [ -f test/kafka/roundtrip.sh ]; then
    step "kafka: mock broker round trip" bash test/kafka/roundtrip.sh
else
    skip "kafka: mock broker round trip" "no test/kafka/roundtrip.sh"
fi
step "faults: kill -9, immediate restart, broker outage, SIGTERM" bash test/faults/run.sh
step "upgrade: 0.1 -> 0.2 with a running pipeline" bash test/upgrade/run.sh

# (g) benchmarks build and run in a smoke size (their numbers mean nothing here; see
# BENCHMARKS.md for real runs). The JSON output is checked: every workload ran, and every
# *_commit_* variant flushed mid-stream (state_rows/iter > 0; the flush interval scales
# with BENCH_SCALE).
bench_smoke() {
    cmake --build build -j"$jobs" --target stoatflow_engine_bench stoatflow-raw-consume
    BENCH_SCALE=0.005 ./build/stoatflow_engine_bench --benchmark_report_aggregates_only=true \
        --benchmark_out=build/engine_bench_smoke.json --benchmark_out_format=json
    python3 bench/check_engine_smoke.py build/engine_bench_smoke.json
}
if [ -x build/stoatflow-mock-broker ]; then
    step "bench: engine benchmark smoke" bench_smoke
else
    skip "bench: engine benchmark smoke" "no core build"
fi
