#!/usr/bin/env bash
# Installs, from Debian's packages, everything the test suite needs on a fresh Debian 12
# (only what is missing; apt-get update only if something is): PostgreSQL 15 and its server
# headers, the hll and tdigest extensions (the sketches README "Expressions and PostgreSQL aggregates" uses), librdkafka (with its mock
# cluster), libcurl (the schema registry client), kcat, simdjson, the C++ tool chain, GoogleTest, Google Benchmark, clang's sanitizer
# runtime and clang-format, libprotobuf (only for the format benchmark's comparison), Avro C and
# python3-avro (the Avro benchmark and reference bytes, src/format/README-avro.md), python3-protobuf
# and protobuf-compiler (the protobuf records of pg_regress protobuf_e2e), and a JDK 17
# plus Maven for Apache Kafka.
# Used by .ci/run and `make test`; needs root or sudo.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
packages=(postgresql-15 postgresql-server-dev-15 postgresql-15-hll postgresql-15-tdigest librdkafka-dev kcat libsimdjson-dev
    cmake g++ make pkg-config git libgtest-dev libgmock-dev googletest libbenchmark-dev
    clang clang-format libclang-rt-14-dev libipc-run-perl python3 libprotobuf-dev libcurl4-openssl-dev
    libavro-dev python3-avro python3-protobuf protobuf-compiler)
need=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
# Apache Kafka 4.x needs Java 17 or newer; Maven fetches its jars once (test/kafka/broker/).
java_major=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n 1 || true)
[ "${java_major:-0}" -ge 17 ] || need+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null || need+=(maven)
if [ "${#need[@]}" -eq 0 ]; then
    echo "install_deps: everything is installed"
    exit 0
fi
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
echo "install_deps: installing ${need[*]}"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update </dev/null
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}" </dev/null
