#!/usr/bin/env bash
# Builds a record decoder's fuzzer with clang++ (libFuzzer + ASan + UBSan, no CMake needed) and
# runs it for a number of seconds on a scratch copy of its seed corpus.
#
#   test/fuzz/run.sh [target=json] [seconds=60] [extra libFuzzer flags...]
#   test/fuzz/run.sh all 30        # every target in turn, 30 s each (run_all.sh's bounded run)
# Targets (each with its corpus, test/fuzz/<target>_corpus/, json's is corpus/): json
# (json_decoder_fuzz.cpp, json.dict), csv (csv_decoder_fuzz.cpp, csv.dict), avro
# (avro_decoder_fuzz.cpp), protobuf (protobuf_reader_fuzz.cpp), protobuf_text (the .proto parser,
# protobuf_text_fuzz.cpp). A first argument that is a number
# is the seconds of the json target (the form this script had before targets); FUZZ_TARGET names
# the target too. The unit tests replay every corpus in each ctest run.
# Environment: CXX (default clang++), FUZZ_OUT (build dirs and findings, default
# /tmp/stoatflow-fuzz; one subdirectory per target), FUZZ_JOBS (parallel workers, default 1).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
target=${FUZZ_TARGET:-json}
if [ $# -gt 0 ] && ! [[ $1 =~ ^[0-9]+$ ]]; then
    target=$1
    shift
fi
seconds=${1:-60}
shift || true
if [ "$target" = all ]; then
    for t in json csv avro protobuf protobuf_text; do FUZZ_TARGET= "$0" "$t" "$seconds" "$@"; done
    exit 0
fi
cxx=${CXX:-clang++}
out=${FUZZ_OUT:-/tmp/stoatflow-fuzz}/$target
jobs=${FUZZ_JOBS:-1}
mkdir -p "$out/corpus" "$out/artifacts"

simdjson_flags=$(pkg-config --cflags --libs simdjson 2>/dev/null ||
    echo "-DSIMDJSON_THREADS_ENABLED=1 -lsimdjson")
common=("$root/src/format/json_text.cpp" "$root/src/format/dead_reason.cpp")
case "$target" in
json)
    sources=("$here/json_decoder_fuzz.cpp" "$root/src/format/json_decoder.cpp"
        "$root/src/format/iso8601.cpp" "$root/src/flow/record_judge.cpp" "$root"/src/core/aggregate/*.cpp)
    seeds=$here/corpus
    flags=(-max_len=512 -dict="$here/json.dict")
    ;;
csv)
    sources=("$here/csv_decoder_fuzz.cpp" "$root/src/format/csv_decoder.cpp")
    seeds=$here/csv_corpus
    flags=(-max_len=4096 -dict="$here/csv.dict")
    ;;
avro)
    sources=("$here/avro_decoder_fuzz.cpp" "$root/src/format/avro_schema.cpp" "$root/src/format/avro_reader.cpp")
    seeds=$here/avro_corpus
    flags=(-max_len=4096)
    ;;
protobuf)
    sources=("$here/protobuf_reader_fuzz.cpp" "$root"/src/format/protobuf_*.cpp)
    seeds=$here/protobuf_corpus
    flags=(-max_len=4096)
    ;;
protobuf_text)
    sources=("$here/protobuf_text_fuzz.cpp" "$root"/src/format/protobuf_{schema,text}.cpp)
    seeds=$here/protobuf_text_corpus
    flags=(-max_len=4096)
    ;;
*)
    echo "test/fuzz/run.sh: unknown target '$target' (json, csv, avro, protobuf, protobuf_text, all)" >&2
    exit 2
    ;;
esac
echo "fuzz: $target for ${seconds}s"
# shellcheck disable=SC2086
"$cxx" -std=c++17 -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
    -fno-sanitize-recover=undefined -DSIMDJSON_DEVELOPMENT_CHECKS=1 -I"$root/include" \
    "${sources[@]}" "${common[@]}" $simdjson_flags -o "$out/fuzz"

# New inputs go to the scratch corpus; the seeds in the repository stay as they are.
cp -n "$seeds"/* "$out/corpus/" 2>/dev/null || true
if [ "$target" = protobuf_text ]; then # shop.proto, kept once: the unit tests' reference file
    cp -n "$root/test/unit/protobuf_reference/shop.proto" "$out/corpus/"
fi
parallel=()
if [ "$jobs" -gt 1 ]; then parallel=(-jobs="$jobs" -workers="$jobs"); fi
cd "$out"  # libFuzzer writes its per-job logs (fuzz-N.log) to the working directory
"$out/fuzz" "$out/corpus" -max_total_time="$seconds" "${flags[@]}" \
    -artifact_prefix="$out/artifacts/" -print_final_stats=1 "${parallel[@]}" "$@"
