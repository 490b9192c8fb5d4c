// Internal to the JSON decoder (src/kafka/json_decoder*.cpp): what the document walk fills in,
// and the interface of a walk "kernel". The walk is compiled once per simdjson On-Demand
// implementation (json_walk_impl.hpp): the portable one in json_decoder.cpp and an AVX2 one in
// json_decoder_haswell.cpp; JsonDecoder picks one at construction from the CPU it runs on.
#pragma once

// Match the packaged library's build (its pkg-config Cflags), whichever build compiles us.
#ifndef SIMDJSON_THREADS_ENABLED
#define SIMDJSON_THREADS_ENABLED 1
#endif
// Without NDEBUG (the PGXS build) simdjson turns on its development checks, which cost speed
// and abort() on API misuse inside the server. Off unless asked for: the fuzzer turns them on.
#ifndef SIMDJSON_DEVELOPMENT_CHECKS
#define SIMDJSON_DEVELOPMENT_CHECKS 0
#endif
#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stoatflow::kafka::detail {

// What the walk found at one configured path. Absent until the path is seen.
enum class Seen : std::uint8_t { Absent, Null, Bool, String, Number, Object, Array };
// How a number reads as C++: exactly as int64, as a (finite) double, or neither.
enum class NumKind : std::uint8_t { Int, Double, Overflow };

struct Slot {
    Seen seen = Seen::Absent;
    bool boolean = false;
    NumKind num = NumKind::Int;
    std::int64_t i = 0;
    double d = 0;
    // String: the unescaped text (in the parser's string buffer); Number: the token as written.
    std::string_view text;
};

// The configured paths as a trie, so one walk serves all of them. Node 0 is the document root.
struct PathNode {
    std::string name;
    int slot = -1;  // index into slots when a configured path ends here
    std::vector<int> children;
    bool visited = false;  // seen in this document (a later duplicate member replaces it)
};

// One simdjson On-Demand parser and the walk over it, compiled for one instruction set.
// Both kernels must give the same result for every input (tests and the fuzzer compare them).
class WalkKernel {
public:
    virtual ~WalkKernel();  // defined in json_decoder.cpp (baseline code only)
    // "fallback" or "haswell": the simdjson On-Demand implementation compiled in.
    virtual const char* name() const = 0;
    // Room for documents of up to `capacity` bytes.
    virtual simdjson::error_code allocate(std::size_t capacity) = 0;
    // Parses buf[0..len) (allocated bytes readable, the rest zero padding), validates all of
    // it and fills slots[nodes[n].slot] for every configured path met. On success `root` says
    // what the document is (the caller rejects non-objects).
    virtual simdjson::error_code parse(const char* buf, std::size_t len, std::size_t allocated,
                                       std::vector<PathNode>& nodes, std::vector<Slot>& slots,
                                       Seen& root) = 0;
};

// Raw pointers, not unique_ptr: the AVX2 translation unit must not instantiate any inline or
// template code that other translation units instantiate too (see json_decoder_haswell.cpp).
WalkKernel* new_fallback_kernel();
// nullptr when not built for x86-64; only call it when haswell_kernel_supported().
WalkKernel* new_haswell_kernel();

}  // namespace stoatflow::kafka::detail
