// Replays the Avro fuzz corpus (test/fuzz/avro_corpus) through the oracles of the Avro fuzzer
// (test/fuzz/avro_fuzz_check.hpp) in every ctest run, where libFuzzer is not built.
#include "../fuzz/avro_fuzz_check.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#ifndef STOATFLOW_FUZZ_CORPUS_AVRO
#error "STOATFLOW_FUZZ_CORPUS_AVRO must name test/fuzz/avro_corpus (set by CMakeLists.txt)"
#endif

namespace {

TEST(AvroFuzzCorpus, EveryFileKeepsTheOracles) {
    std::map<std::string, std::string> files;  // sorted: failures read the same every run
    for (const auto& entry : std::filesystem::directory_iterator(STOATFLOW_FUZZ_CORPUS_AVRO)) {
        if (!entry.is_regular_file()) continue;
        std::ifstream in(entry.path(), std::ios::binary);
        files[entry.path().filename().string()] =
            std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    ASSERT_GE(files.size(), 10u);
    for (const auto& [name, bytes] : files)
        EXPECT_EQ(stoatflow::avro_fuzz::check_one(
                      reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()),
                  "")
            << name;
}

}  // namespace
