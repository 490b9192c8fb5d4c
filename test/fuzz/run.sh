#!/usr/bin/env bash
# Builds a decoder fuzzer with clang++ (libFuzzer + ASan + UBSan, no CMake needed) and runs it
# for a number of seconds on a scratch copy of its seed corpus.
#
#   test/fuzz/run.sh [seconds=60] [extra libFuzzer flags...]
# Environment: FUZZ_TARGET (json, the default: the JSON decoder on corpus/; avro: the Avro
# decoder on corpus-avro/), CXX (default clang++), FUZZ_OUT (build dir and findings, default
# /tmp/stoatflow-fuzz, /tmp/stoatflow-fuzz-avro for avro), FUZZ_JOBS (parallel workers, default 1).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
seconds=${1:-60}
shift || true
cxx=${CXX:-clang++}
target=${FUZZ_TARGET:-json}
jobs=${FUZZ_JOBS:-1}
parallel=()
if [ "$jobs" -gt 1 ]; then parallel=(-jobs="$jobs" -workers="$jobs"); fi
simdjson_flags=$(pkg-config --cflags --libs simdjson 2>/dev/null ||
    echo "-DSIMDJSON_THREADS_ENABLED=1 -lsimdjson")

if [ "$target" = avro ]; then
    out=${FUZZ_OUT:-/tmp/stoatflow-fuzz-avro}
    mkdir -p "$out/corpus" "$out/artifacts"
    # shellcheck disable=SC2086
    "$cxx" -std=c++17 -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
        -fno-sanitize-recover=undefined -I"$root/include" \
        "$here/avro_decoder_fuzz.cpp" "$root/src/format/avro_schema.cpp" \
        "$root/src/format/avro_reader.cpp" "$root/src/format/dead_reason.cpp" \
        "$root/src/format/json_text.cpp" $simdjson_flags -o "$out/avro_decoder_fuzz"
    cp -n "$here"/corpus-avro/* "$out/corpus/" 2>/dev/null || true
    cd "$out"
    exec "$out/avro_decoder_fuzz" "$out/corpus" -max_len=4096 -max_total_time="$seconds" \
        -artifact_prefix="$out/artifacts/" -print_final_stats=1 "${parallel[@]}" "$@"
fi
[ "$target" = json ] || { echo "run.sh: FUZZ_TARGET is json or avro, not $target" >&2; exit 2; }
out=${FUZZ_OUT:-/tmp/stoatflow-fuzz}
mkdir -p "$out/corpus" "$out/artifacts"

# shellcheck disable=SC2086
"$cxx" -std=c++17 -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
    -fno-sanitize-recover=undefined -DSIMDJSON_DEVELOPMENT_CHECKS=1 -I"$root/include" \
    "$here/json_decoder_fuzz.cpp" "$root/src/format/json_decoder.cpp" \
    "$root/src/format/iso8601.cpp" "$root/src/format/json_text.cpp" "$root/src/format/dead_reason.cpp" \
    "$root/src/flow/record_judge.cpp" "$root"/src/core/aggregate/*.cpp \
    $simdjson_flags -o "$out/json_decoder_fuzz"

# New inputs go to the scratch corpus; the seeds in the repository stay as they are.
cp -n "$here"/corpus/* "$out/corpus/" 2>/dev/null || true
cd "$out"  # libFuzzer writes its per-job logs (fuzz-N.log) to the working directory
exec "$out/json_decoder_fuzz" "$out/corpus" -max_len=512 -max_total_time="$seconds" \
    -dict="$here/json.dict" -artifact_prefix="$out/artifacts/" -print_final_stats=1 \
    "${parallel[@]}" "$@"
