// libFuzzer target for the Avro decoder (stoatflow/format/avro.hpp): schemas and bodies of any
// bytes must give a verdict without a crash, and the oracles of avro_fuzz_check.hpp must hold.
#include "avro_fuzz_check.hpp"

#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string failed = stoatflow::avro_fuzz::check_one(data, size);
    if (!failed.empty()) {
        std::fprintf(stderr, "fuzz check failed: %s\n", failed.c_str());
        std::abort();
    }
    return 0;
}
