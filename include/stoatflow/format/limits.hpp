// Named limits of the formats (decoding records), in one place.
#pragma once
#include <cstddef>

#include "stoatflow/core/no_postgres.hpp"

namespace stoatflow::format {

// At most this many payload bytes are quoted in a dead letter's detail message.
constexpr std::size_t kExcerptBytes = 64;
// JSON nesting limit: bounds the decoder's recursion, and stays below the On-Demand parser's own
// max_depth (1024), which it asserts on in debug builds but does not check otherwise.
constexpr int kMaxDepth = 1000;
// Protocol Buffers: how deep messages may nest in a record (and types in a descriptor set), and
// how many message and enum types a descriptor set may declare.
constexpr int kMaxProtoDepth = 100;
constexpr std::size_t kMaxProtoTypes = 10000;
// Avro (avro.hpp): nesting of a schema or of a value (the same kMaxDepth), array and map items
// per record (an array of nulls costs no bytes, so its count alone bounds the work), and the
// bytes of one decimal (128 bytes: 308 digits; more is a dead letter, not a big number).
constexpr std::size_t kAvroMaxItems = 1000000;
constexpr std::size_t kAvroMaxDecimalBytes = 128;
// Writer schemas one Avro decoder keeps compiled (ids seen on a source's topics); beyond it the
// programs are dropped and compiled again as their ids come back.
constexpr std::size_t kAvroMaxPrograms = 10000;

}  // namespace stoatflow::format
