#!/usr/bin/env bash
# The one test command: core unit tests (CMake/ctest, plus ASan/UBSan and TSan builds in CI or
# with SANITIZE=1), build + install the extension, pg_regress, the preload check, the Kafka round trip.
# SKIP_CORE=1 skips the two CMake steps (for work on the PostgreSQL layer alone; never in CI).
# STOATFLOW_TEST_BROKERS: the Kafka brokers the Kafka end-to-end regress test and the fault
# suite run against, in order: "mock" (default), "mock kafka" (default with CI=true, and in
# .ci/run), or "kafka". The whole pg_regress schedule runs once, against the first of them;
# each further broker runs kafka_e2e alone. On Apache Kafka the fault suite runs the
# scenarios in FAULTS_KAFKA_SCENARIOS: by default "broker_down broker_kill topic_deleted partitions_added retention start_from drop_group progress formats_e2e",
# the ones about the broker (2.5-3.5 min; all eight take 5-8 min there), progress (a
# 5,000,000-record catch-up and backfill: 1-1.5 min more), and formats_e2e (30-45 s; registry_outage
# takes 49-62 s there and runs on the mock); "all" for every one.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"

jobs=${JOBS:-2}
# the Kafka brokers to test against (see the top)
if [ -n "${STOATFLOW_TEST_BROKERS:-}" ]; then
    read -r -a brokers <<<"$STOATFLOW_TEST_BROKERS"
elif [ "${CI:-}" = "true" ]; then
    brokers=(mock kafka)
else
    brokers=(mock)
fi
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

step() {  # step NAME MINUTES COMMAND...: runs one step, bounded; the first failure ends the run
    current=$1
    local limit=$2 t0=$SECONDS rc=0
    shift 2
    echo
    echo "==== $current (at most ${limit} min) ===="
    # timeout signals the step's whole process group (servers, brokers and all).
    timeout --kill-after=30s "${limit}m" "$@" || rc=$?
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        echo "run_all: $current did not finish within ${limit} min" >&2
    fi
    [ "$rc" -eq 0 ] || { current="$current ($((SECONDS - t0))s)"; return "$rc"; }
    results+=("ok    $current ($((SECONDS - t0))s)")
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

tools_build() {  # tools_build DIR: the programs the tests and benchmarks run, nothing else
    cmake -S . -B "$1" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTOATFLOW_WERROR=ON
    cmake --build "$1" -j"$jobs" --target stoatflow-mock-broker stoatflow-raw-consume
}

tsan_build() {  # the unit tests only (the mock broker and tools link uninstrumented librdkafka)
    cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTOATFLOW_WERROR=ON -DSTOATFLOW_TSAN=ON
    cmake --build build-tsan -j"$jobs" --target stoatflow_unit_tests
    TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ctest --test-dir build-tsan --output-on-failure --no-tests=error
}

# (0) every C++ file as the repository's .clang-format lays it out
export -f core_build tools_build tsan_build
export jobs
step "format: clang-format --dry-run --Werror" 2 bash test/format_check.sh
step "house: only the sandbox switches users" 1 bash test/check_sandbox.sh
step "house: every SQLSTATE from sqlstate::" 1 bash test/check_sqlstate.sh
step "house: the pure rooms and their arrows" 1 bash test/check_purity.sh

# (a) the pure rooms and their unit tests. With the sanitizers (CI) the unit tests are built and
# run once, under ASan/UBSan; build/ then holds only the tools the later steps run (the mock
# broker, the raw-consume ceiling), so no step compiles what another step already compiled.
sanitize=0
if [ "${CI:-}" = "true" ] || [ "${SANITIZE:-0}" = "1" ]; then sanitize=1; fi
if [ "${SKIP_CORE:-0}" = "1" ] && [ "${CI:-}" != "true" ]; then
    skip "core: cmake build + ctest" "SKIP_CORE=1"
elif [ ! -f CMakeLists.txt ]; then
    skip "core: cmake build + ctest" "no CMakeLists.txt"
elif [ "$sanitize" = 1 ]; then
    step "core: ASan/UBSan build + ctest" 25 bash -ec 'core_build build-asan -DSTOATFLOW_SANITIZE=ON'
    step "tools: mock broker, raw consume (build/)" 5 bash -ec 'tools_build build'
else
    step "core: cmake build + ctest" 20 bash -ec 'core_build build'
    skip "core: ASan/UBSan build + ctest" "set SANITIZE=1 or CI=true"
fi

# (b2) the unit tests under ThreadSanitizer (the worker's two threads share the record path)
if [ "${SKIP_CORE:-0}" = "1" ] && [ "${CI:-}" != "true" ]; then
    skip "core: TSan build + ctest" "SKIP_CORE=1"
elif [ "$sanitize" = 1 ]; then
    step "core: TSan build + ctest" 20 bash -ec tsan_build
else
    skip "core: TSan build + ctest" "set SANITIZE=1 or CI=true"
fi

# (b3) every record decoder's libFuzzer target, bounded (a long run by hand: test/fuzz/run.sh
# TARGET 3600); the seed corpora are also replayed by the unit tests above
if [ "$sanitize" = 1 ]; then
    step "fuzz: every decoder, 20 s each (libFuzzer + ASan/UBSan)" 8 \
        env FUZZ_OUT="${TMPDIR:-/tmp}/stoatflow-fuzz-ci" bash test/fuzz/run.sh all 20
else
    skip "fuzz: every decoder" "set SANITIZE=1 or CI=true"
fi

# (c) the extension (needs root, or write access to PostgreSQL's lib and share dirs, to install)
step "extension: make" 10 make -j"$jobs"
step "extension: make install" 2 make install

# (d) pg_regress in a temp instance that preloads stoatflow
step "pg_regress (make installcheck, ${brokers[0]} broker)" 25 \
    env STOATFLOW_TEST_BROKER="${brokers[0]}" make installcheck

# (d2) README "Getting started" as written: its blocks in order on demo/cluster.sh's throwaway
# cluster, psql's output compared with the README's
step "README Getting started, as written" 5 bash test/readme_getting_started.sh
step "README Getting started with Avro and a schema registry, as written" 5 bash test/readme_getting_started.sh avro

# (e) CREATE EXTENSION without shared_preload_libraries must fail clearly
step "preload check" 3 bash test/preload_check.sh

# (f) the mock Kafka broker round trip
if [ -f test/kafka/roundtrip.sh ]; then
    step "kafka: mock broker round trip" 3 bash test/kafka/roundtrip.sh
else
    skip "kafka: mock broker round trip" "no test/kafka/roundtrip.sh"
fi

# (f2) the registry rig the Avro/Protobuf scenarios use: the fake registry's switches and
# produce.py's records read back by python3-avro / python3-protobuf (test/registry/README.md)
step "registry: fake registry and producer self-test" 2 \
    bash -c 'source test/registry/registry.sh && "$(registry_python)" test/registry/selftest.py'

# (g) the Kafka end-to-end test and the fault suite against each broker
for b in "${brokers[@]}"; do
    case $b in
    mock) ;;
    kafka)
        step "kafka: Apache Kafka jars (Maven, cached)" 15 \
            bash -c 'source test/kafka/broker/kafka_broker.sh && kafka_broker_fetch'
        step "kafka: Apache Kafka helper self-test" 5 bash test/kafka/broker/selftest.sh
        ;;
    *) echo "run_all: STOATFLOW_TEST_BROKERS: unknown broker '$b' (want mock or kafka)" >&2; exit 2 ;;
    esac
    if [ "$b" != "${brokers[0]}" ]; then
        step "pg_regress kafka_e2e ($b broker)" 10 \
            env STOATFLOW_TEST_BROKER="$b" REGRESS_TESTS=kafka_e2e bash test/pg_regress.sh
    fi
    scenarios=()
    if [ "$b" = kafka ] && [ "${FAULTS_KAFKA_SCENARIOS:-broker_down broker_kill topic_deleted partitions_added retention start_from drop_group progress formats_e2e backfill_handover}" != all ]; then
        read -r -a scenarios <<<"${FAULTS_KAFKA_SCENARIOS:-broker_down broker_kill topic_deleted partitions_added retention start_from drop_group progress formats_e2e backfill_handover}"
    fi
    step "faults ($b broker): ${scenarios[*]:-kill -9, immediate restart, broker outage, SIGTERM, pause, drop, memory limits, sink fuzz, backfill (with kill -9), registry outage, four formats}" 30 \
        env STOATFLOW_TEST_BROKER="$b" bash test/faults/run.sh "${scenarios[@]}"
done

# (g1) the same crashes with the aggregations PostgreSQL's executor runs: a source
# with columns, group_by, tumbling and session windows whose states are stored serialized
if [[ " ${brokers[*]} " == *" mock "* ]]; then
    step "faults (mock broker, PostgreSQL aggregates): kill -9, immediate restart" 15 \
        env STOATFLOW_TEST_BROKER=mock FAULTS_COLUMNS=expr bash test/faults/run.sh kill9 restart_immediate
fi

# (g2) Kafka Streams and stoatflow give the same final windows: the hand-made
# examples and a few random streams (SEMANTICS_STREAMS=20 by hand: bench/peers/kafka-streams)
if [[ " ${brokers[*]} " == *" kafka "* ]]; then
    step "kafka: Kafka Streams vs stoatflow, final windows" 20 \
        env SEMANTICS_STREAMS="${SEMANTICS_STREAMS:-6}" bash bench/peers/kafka-streams/semantics.sh
fi

# (h) real deployments of the released versions upgraded to this one with a running pipeline
# (private PostgreSQL copy): 0.1 (through 0.2's script) and 0.2 (the v0.2.0 commit)
step "upgrade: 0.1 -> 0.2 -> current with a running pipeline" 20 bash test/upgrade/run.sh
step "upgrade: 0.2 -> current with a running pipeline" 20 env UPGRADE_FROM_COMMIT=53ab57e bash test/upgrade/run.sh

# (i) benchmarks build and run in a smoke size (their numbers mean nothing here; see
# BENCHMARKS.md for real runs). The JSON output is checked: every workload ran, and every
# *_commit_* variant flushed mid-stream (state_rows/iter > 0; the flush interval scales
# with BENCH_SCALE).
bench_smoke() {  # in the build that compiled the unit tests (build-asan with the sanitizers)
    local dir=build
    [ "$sanitize" = 1 ] && dir=build-asan
    cmake --build "$dir" -j"$jobs" --target stoatflow_engine_bench
    BENCH_SCALE=0.005 "./$dir/stoatflow_engine_bench" --benchmark_report_aggregates_only=true \
        --benchmark_out="$dir/engine_bench_smoke.json" --benchmark_out_format=json
    python3 bench/check_engine_smoke.py "$dir/engine_bench_smoke.json"
}
if [ -x build/stoatflow-mock-broker ]; then
    export -f bench_smoke
    export sanitize
    step "bench: engine benchmark smoke" 10 bash -ec bench_smoke
else
    skip "bench: engine benchmark smoke" "no core build"
fi
