// libFuzzer target for the .proto parser (include/stoatflow/format/protobuf.hpp,
// proto_text_descriptor_set): any bytes as the text of a .proto file (the main one, importing a
// second given file) must give a verdict without a crash: a descriptor set, or ProtoSchemaError.
// Oracles: a set the parser wrote is one ProtoSchema reads (it refuses it only past
// kMaxProtoTypes), every message it names is there, and every message field resolved.
#include "stoatflow/format/protobuf.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::fprintf(stderr, "fuzz check failed at line %d: %s\n", __LINE__, #cond);           \
            std::abort();                                                                          \
        }                                                                                          \
    } while (0)

using namespace stoatflow::format;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::vector<ProtoFile> files{
        {"common.proto", "syntax = \"proto3\"; package common; message Money { int64 cents = 1; }"},
        {"main.proto", std::string(reinterpret_cast<const char*>(data), size)}};
    std::string set;
    try {
        set = proto_text_descriptor_set(files);
    } catch (const ProtoSchemaError& e) {
        FUZZ_CHECK(*e.what() != '\0');
        return 0;
    }
    try {
        auto s = ProtoSchema::parse(set);
        for (const std::string& name : s->message_names()) {
            const ProtoMessage* m = s->message(name);
            FUZZ_CHECK(m != nullptr);
            for (const ProtoField& f : m->fields) {
                if (f.type == ProtoType::Message || f.type == ProtoType::Group)
                    FUZZ_CHECK(f.message != nullptr);
                if (f.type == ProtoType::Enum) FUZZ_CHECK(f.enumeration != nullptr);
            }
        }
    } catch (const ProtoSchemaError& e) {
        FUZZ_CHECK(std::string(e.what()).find("more than") != std::string::npos);
    }
    return 0;
}
