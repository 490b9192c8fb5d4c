// The Protocol Buffers wire format, read: varints, fixed-width numbers, length-delimited bytes,
// and skipping a field of any wire type. Every read checks the bounds and says false when the
// bytes end or break the encoding; nothing here allocates. Used by the schema (a descriptor set
// is itself a message) and by the record reader.
#pragma once
#include "stoatflow/core/no_postgres.hpp"

#include "stoatflow/format/limits.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace stoatflow::format::proto_wire {

enum WireType : std::uint32_t {
    kVarint = 0,
    kFixed64 = 1,
    kLen = 2,
    kStartGroup = 3,
    kEndGroup = 4,
    kFixed32 = 5
};

class Reader {
public:
    Reader(const char* p, std::size_t n)
        : p_(reinterpret_cast<const unsigned char*>(p)), end_(p_ + n) {}
    explicit Reader(std::string_view s) : Reader(s.data(), s.size()) {}

    bool done() const { return p_ == end_; }
    std::size_t remaining() const { return static_cast<std::size_t>(end_ - p_); }

    // At most 10 bytes; the tenth may only carry the 64th bit.
    bool varint(std::uint64_t& v) {
        if (p_ != end_ && *p_ < 0x80) {  // the common case: one byte
            v = *p_++;
            return true;
        }
        v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (p_ == end_) return false;
            const unsigned char b = *p_++;
            if (shift == 63 && b > 1) return false;
            v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
            if ((b & 0x80) == 0) return true;
        }
        return false;
    }
    bool fixed32(std::uint32_t& v) {
        if (end_ - p_ < 4) return false;
        v = static_cast<std::uint32_t>(p_[0]) | static_cast<std::uint32_t>(p_[1]) << 8 |
            static_cast<std::uint32_t>(p_[2]) << 16 | static_cast<std::uint32_t>(p_[3]) << 24;
        p_ += 4;
        return true;
    }
    bool fixed64(std::uint64_t& v) {
        std::uint32_t lo = 0, hi = 0;
        if (end_ - p_ < 8) return false;
        fixed32(lo);
        fixed32(hi);
        v = static_cast<std::uint64_t>(hi) << 32 | lo;
        return true;
    }
    bool bytes(std::string_view& out) {
        std::uint64_t n = 0;
        if (!varint(n) || n > static_cast<std::uint64_t>(end_ - p_)) return false;
        out = std::string_view(reinterpret_cast<const char*>(p_), static_cast<std::size_t>(n));
        p_ += n;
        return true;
    }
    // A field's tag: its number (1 .. 2^29-1) and wire type.
    bool tag(std::int32_t& number, std::uint32_t& wire) {
        std::uint64_t t = 0;
        if (!varint(t) || t > 0xffffffffu) return false;
        number = static_cast<std::int32_t>(t >> 3);
        wire = static_cast<std::uint32_t>(t & 7);
        return number != 0;
    }
    // Skips the value of a field of wire type `wire` whose tag was just read (a group up to its
    // end tag, groups nested at most kMaxProtoDepth deep).
    bool skip(std::uint32_t wire, std::int32_t number, int depth = 0) {
        std::uint64_t v64 = 0;
        std::uint32_t v32 = 0;
        std::string_view s;
        switch (wire) {
        case kVarint: return varint(v64);
        case kFixed64: return fixed64(v64);
        case kLen: return bytes(s);
        case kFixed32: return fixed32(v32);
        case kStartGroup: {
            if (depth >= kMaxProtoDepth) return false;
            std::int32_t n = 0;
            std::uint32_t w = 0;
            while (tag(n, w)) {
                if (w == kEndGroup) return n == number;
                if (!skip(w, n, depth + 1)) return false;
            }
            return false;
        }
        default: return false;  // an end tag without its start, or wire types 6 and 7
        }
    }

private:
    const unsigned char* p_;
    const unsigned char* end_;
};

inline std::int64_t zigzag64(std::uint64_t v) {
    return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1);
}
inline std::int32_t zigzag32(std::uint64_t v) {
    const auto u = static_cast<std::uint32_t>(v);
    return static_cast<std::int32_t>(u >> 1) ^ -static_cast<std::int32_t>(u & 1);
}

}  // namespace stoatflow::format::proto_wire
