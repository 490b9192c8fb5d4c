#!/usr/bin/env bash
# Builds the decoders' fuzzers with clang++ (libFuzzer + ASan + UBSan, no CMake needed) and runs
# each for a number of seconds on a scratch copy of its seed corpus: the JSON decoder
# (corpus/, json.dict), then the CSV decoder (csv_corpus/, csv.dict).
#
#   test/fuzz/run.sh [seconds=60] [extra libFuzzer flags...]
# Environment: CXX (default clang++), FUZZ_OUT (build dir and findings, default
# /tmp/stoatflow-fuzz), FUZZ_JOBS (parallel workers, default 1), FUZZ_TARGETS (default
# "json csv").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
seconds=${1:-60}
shift || true
cxx=${CXX:-clang++}
out=${FUZZ_OUT:-/tmp/stoatflow-fuzz}
jobs=${FUZZ_JOBS:-1}
targets=${FUZZ_TARGETS:-json csv}
mkdir -p "$out/corpus" "$out/csv_corpus" "$out/artifacts"

simdjson_flags=$(pkg-config --cflags --libs simdjson 2>/dev/null ||
    echo "-DSIMDJSON_THREADS_ENABLED=1 -lsimdjson")
# shellcheck disable=SC2086
"$cxx" -std=c++17 -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
    -fno-sanitize-recover=undefined -DSIMDJSON_DEVELOPMENT_CHECKS=1 -I"$root/include" \
    "$here/json_decoder_fuzz.cpp" "$root/src/format/json_decoder.cpp" \
    "$root/src/format/iso8601.cpp" "$root/src/format/json_text.cpp" "$root/src/format/dead_reason.cpp" \
    "$root/src/flow/record_judge.cpp" "$root"/src/core/aggregate/*.cpp \
    $simdjson_flags -o "$out/json_decoder_fuzz"
"$cxx" -std=c++17 -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
    -fno-sanitize-recover=undefined -I"$root/include" \
    "$here/csv_decoder_fuzz.cpp" "$root/src/format/csv_decoder.cpp" \
    "$root/src/format/json_text.cpp" "$root/src/format/dead_reason.cpp" \
    -o "$out/csv_decoder_fuzz"

# New inputs go to the scratch corpus; the seeds in the repository stay as they are.
cp -n "$here"/corpus/* "$out/corpus/" 2>/dev/null || true
cp -n "$here"/csv_corpus/* "$out/csv_corpus/" 2>/dev/null || true
parallel=()
if [ "$jobs" -gt 1 ]; then parallel=(-jobs="$jobs" -workers="$jobs"); fi
cd "$out"  # libFuzzer writes its per-job logs (fuzz-N.log) to the working directory
for t in $targets; do
    case $t in
    json) corpus=corpus dict=json.dict max_len=512 ;;
    csv) corpus=csv_corpus dict=csv.dict max_len=4096 ;;
    *) echo "run.sh: unknown fuzz target $t" >&2; exit 2 ;;
    esac
    echo "run.sh: fuzzing the $t decoder for ${seconds}s"
    "$out/${t}_decoder_fuzz" "$out/$corpus" -max_len="$max_len" -max_total_time="$seconds" \
        -dict="$here/$dict" -artifact_prefix="$out/artifacts/" -print_final_stats=1 \
        "${parallel[@]}" "$@"
done
