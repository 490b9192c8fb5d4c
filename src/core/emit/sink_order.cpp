// Sink rows in primary-key order (see sink_order.hpp).
#include "stoatflow/core/emit/sink_order.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace stoatflow::core {

namespace {
// Bytes [from, from + 8) of s as a big-endian number, zero past its end: two such numbers
// compare as the bytes do (unsigned), which is how std::string compares.
std::uint64_t word_at(const std::string& s, std::size_t from) {
    unsigned char b[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    if (from < s.size()) std::memcpy(b, s.data() + from, std::min<std::size_t>(8, s.size() - from));
    std::uint64_t w = 0;
    for (unsigned char c : b) w = (w << 8) | c;
    return w;
}

struct Item {
    std::uint64_t hi;  // key bytes 0..7
    std::uint64_t lo;  // key bytes 8..15
    const SinkRow* row;
};
}  // namespace

void sort_by_primary_key(std::vector<const SinkRow*>& rows) {
    std::vector<Item> items;
    items.reserve(rows.size());
    for (const SinkRow* r : rows) items.push_back({word_at(r->key, 0), word_at(r->key, 8), r});
    std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
        if (a.hi != b.hi) return a.hi < b.hi;
        if (a.lo != b.lo) return a.lo < b.lo;
        // The first 16 bytes agree (zero-padded): the whole keys decide, then the start.
        const int c = a.row->key.compare(b.row->key);
        return c != 0 ? c < 0 : a.row->start < b.row->start;
    });
    for (std::size_t i = 0; i < items.size(); ++i) rows[i] = items[i].row;
}

}  // namespace stoatflow::core
