// The Avro reader (avro.hpp, src/format/README-avro.md): a writer schema resolved against the
// columns once, into a tree of steps that follows the writer's bytes (a record step holds one
// step per writer field, a union step one per branch); per record the reader only walks the
// steps. Values nothing reads are skipped by the writer schema's node indexes.
#include "stoatflow/core/error.hpp"
#include "stoatflow/core/event_time.hpp"
#include "stoatflow/format/avro.hpp"
#include "stoatflow/format/json_text.hpp"
#include "stoatflow/format/limits.hpp"

#include <simdjson.h>

#include <charconv>
#include <cmath>
#include <cstring>

namespace stoatflow::format::avro {
namespace {

// How a step writes the value it read into its columns.
enum class Render : std::uint8_t {
    Plain,     // by the writer's type: numbers, booleans, null, strings, enums, JSON for the rest
    Hex,       // bytes, fixed, or a string read into bytes: \x and hex (bytea's input)
    Text,      // bytes read into a string: the bytes as text (UTF-8 checked)
    Decimal,   // the exact decimal text
    TsMillis,  // 'YYYY-MM-DD hh:mm:ss.ffffff+00'
    TsMicros,
    Date,  // 'YYYY-MM-DD'
};

struct Step {
    int wnode = -1;
    Type type = Type::Null;
    Render render = Render::Plain;
    int scale = 0;
    std::size_t size = 0;                // fixed
    std::vector<std::uint16_t> cols;     // columns that take this value whole
    std::vector<std::string> enum_text;  // per writer symbol: what a column gets
    std::vector<bool> enum_known;        // per writer symbol: false: not a reader symbol
    std::vector<Step> kids;              // record: per writer field; union: per branch
    bool wanted = false;                 // this step or one below has a column
};

struct Constant {
    std::uint16_t col;
    RawKind kind;
    std::string text;
};

struct Bad {};

// The steps flattened: a record no column takes whole is its fields' ops in order; a leaf one
// column takes as it is, or one nothing takes, is one op; anything else runs its step tree.
enum class Code : std::uint8_t { Tree, Skip, SkipVarint, SkipLen, Int, Long, String, Ts };
struct Op {
    Code code;
    std::uint16_t col;
    int depth;
    const Step* step;
};

}  // namespace

struct Program::Impl {
    Schema writer;
    Step root;
    std::vector<Op> ops;
    std::vector<Constant> constants;
    std::size_t width = 0;
    std::vector<bool> epoch_ms;  // per column (Program's constructor)
    std::string detail;
    std::string scratch;
    std::size_t items = 0;

    // ---- reading -------------------------------------------------------------------------
    const std::uint8_t* p = nullptr;
    const std::uint8_t* end = nullptr;

    [[noreturn]] void fail(const std::string& what) {
        detail = what;
        throw Bad{};
    }
    [[noreturn]] void invalid_text() {
        detail = "a string is not valid UTF-8 or holds NUL";
        throw DeadReason::InvalidText;
    }

    std::int64_t read_long() {
        if (p != end && *p < 0x80) {  // one byte: lengths, small numbers, indexes
            const std::uint64_t b = *p++;
            return static_cast<std::int64_t>((b >> 1) ^ (~(b & 1) + 1));
        }
        std::uint64_t v = 0;
        for (int shift = 0; shift < 70; shift += 7) {
            if (p == end) fail("the body ends inside a number");
            const std::uint8_t b = *p++;
            if (shift == 63 && (b & 0x7e)) fail("a number longer than 64 bits");
            v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
            if (!(b & 0x80)) return static_cast<std::int64_t>((v >> 1) ^ (~(v & 1) + 1));
        }
        fail("a number longer than 10 bytes");
    }
    std::int32_t read_int() {
        const std::int64_t v = read_long();
        if (v < INT32_MIN || v > INT32_MAX) fail("an int beyond 32 bits");
        return static_cast<std::int32_t>(v);
    }
    std::size_t read_len() {
        const std::int64_t n = read_long();
        if (n < 0) fail("a negative length");
        if (static_cast<std::uint64_t>(n) > static_cast<std::uint64_t>(end - p))
            fail("a length beyond the end of the body");
        return static_cast<std::size_t>(n);
    }
    std::string_view take(std::size_t n) {
        if (n > static_cast<std::size_t>(end - p)) fail("the body ends inside a value");
        std::string_view v(reinterpret_cast<const char*>(p), n);
        p += n;
        return v;
    }
    // One block's item count of an array or map (0: the end); a negative count is followed by
    // the block's size in bytes.
    std::size_t block(std::size_t min_item_bytes) {
        std::int64_t n = read_long();
        if (n < 0) {
            if (n == INT64_MIN) fail("an item count out of range");
            n = -n;
            (void)read_len();
        }
        const auto count = static_cast<std::uint64_t>(n);
        if (count > kAvroMaxItems - items)
            fail("more than " + std::to_string(kAvroMaxItems) + " items");
        if (min_item_bytes > 0 && count > static_cast<std::uint64_t>(end - p) / min_item_bytes)
            fail("an item count beyond the end of the body");
        items += static_cast<std::size_t>(count);
        return static_cast<std::size_t>(count);
    }
    std::size_t branch(const Node& u) {
        const std::int64_t i = read_long();
        if (i < 0 || static_cast<std::uint64_t>(i) >= u.branches.size())
            fail("union index " + std::to_string(i) + " out of range");
        return static_cast<std::size_t>(i);
    }
    std::size_t enum_index(const Node& n) {
        const std::int64_t i = read_long();
        if (i < 0 || static_cast<std::uint64_t>(i) >= n.symbols.size())
            fail("enum index " + std::to_string(i) + " out of range");
        return static_cast<std::size_t>(i);
    }
    std::string_view checked_string(std::string_view s) {
        // Most strings are ASCII: 8 bytes at a time (no high bit, no zero byte), the full check
        // only otherwise.
        constexpr std::uint64_t kOnes = 0x0101010101010101u, kHigh = 0x8080808080808080u;
        std::size_t i = 0;
        std::uint64_t bad = 0;
        for (; i + 8 <= s.size(); i += 8) {
            std::uint64_t x;
            std::memcpy(&x, s.data() + i, 8);
            bad |= (x | ((x - kOnes) & ~x)) & kHigh;
        }
        for (; i < s.size(); ++i) {
            const auto c = static_cast<unsigned char>(s[i]);
            bad |= (c == 0 || c >= 0x80) ? 1 : 0;
        }
        if (!bad) return s;
        if (std::memchr(s.data(), 0, s.size()) || !simdjson::validate_utf8(s.data(), s.size()))
            invalid_text();
        return s;
    }

    // The fewest bytes one value of a node takes (0 for null and for records of nulls).
    std::size_t min_bytes(int node, int depth = 0) const {
        const Node& n = writer.node(node);
        switch (n.type) {
        case Type::Null: return 0;
        case Type::Float: return 4;
        case Type::Double: return 8;
        case Type::Fixed: return n.size;
        case Type::Record:
            if (depth > 8) return 0;
            for (const Field& f : n.fields)
                if (min_bytes(f.type, depth + 1) > 0) return 1;
            return 0;
        default: return 1;
        }
    }

    void skip(int node, int depth) {
        if (depth > kMaxDepth) fail("nested deeper than " + std::to_string(kMaxDepth));
        const Node& n = writer.node(node);
        switch (n.type) {
        case Type::Null: return;
        case Type::Boolean: take(1); return;
        case Type::Int:
        case Type::Long:
        case Type::Enum: (void)read_long(); return;
        case Type::Float: take(4); return;
        case Type::Double: take(8); return;
        case Type::Bytes:
        case Type::String: take(read_len()); return;
        case Type::Fixed: take(n.size); return;
        case Type::Record:
            for (const Field& f : n.fields) skip(f.type, depth + 1);
            return;
        case Type::Union: skip(n.branches[branch(n)], depth + 1); return;
        case Type::Array:
        case Type::Map: {
            const std::size_t mb = min_bytes(n.items) + (n.type == Type::Map ? 1 : 0);
            while (std::size_t count = block(mb))
                for (std::size_t i = 0; i < count; ++i) {
                    if (n.type == Type::Map) take(read_len());
                    skip(n.items, depth + 1);
                }
            return;
        }
        }
    }

    // ---- rendering -----------------------------------------------------------------------
    // The shortest text that reads back exactly; one that would look like an integer of more
    // than 15 digits (1e20 as 100000000000000000000) in exponent form instead, so it stays a
    // floating-point number to every JSON reader (simdjson refuses such integers).
    static void append_number(std::string& out, double d, bool is_float) {
        char buf[64];
        auto r = is_float ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(d))
                          : std::to_chars(buf, buf + sizeof buf, d);
        if (r.ptr - buf > 16 && std::memchr(buf, '.', r.ptr - buf) == nullptr &&
            std::memchr(buf, 'e', r.ptr - buf) == nullptr)
            r = is_float ? std::to_chars(buf, buf + sizeof buf, static_cast<float>(d),
                                         std::chars_format::scientific)
                         : std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
        out.append(buf, r.ptr);
    }
    static void append_int(std::string& out, std::int64_t v) {
        char buf[24];
        auto r = std::to_chars(buf, buf + sizeof buf, v);
        out.append(buf, r.ptr);
    }
    static void append_hex(std::string& out, std::string_view bytes) {
        static constexpr char kHex[] = "0123456789abcdef";
        out += "\\x";
        for (const char ch : bytes) {
            const auto c = static_cast<unsigned char>(ch);
            out += kHex[c >> 4];
            out += kHex[c & 15];
        }
    }
    // Days since 1970-01-01 to the proleptic Gregorian y-m-d (H. Hinnant's civil_from_days).
    static void civil(std::int64_t z, std::int64_t& y, unsigned& m, unsigned& d) {
        z += 719468;
        const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
        const auto doe = static_cast<unsigned>(z - era * 146097);
        const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
        y = static_cast<std::int64_t>(yoe) + era * 400;
        const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        const unsigned mp = (5 * doy + 2) / 153;
        d = doy - (153 * mp + 2) / 5 + 1;
        m = mp < 10 ? mp + 3 : mp - 9;
        if (m <= 2) ++y;
    }
    static void append_padded(std::string& out, std::uint64_t v, int width) {
        char buf[24];
        auto r = std::to_chars(buf, buf + sizeof buf, v);
        for (int i = static_cast<int>(r.ptr - buf); i < width; ++i) out += '0';
        out.append(buf, r.ptr);
    }
    // 'YYYY-MM-DD' as PostgreSQL reads it: years before 1 as 'YYYY-MM-DD BC' (year 0 is 1 BC).
    static void append_date(std::string& out, std::int64_t days, bool& bc) {
        std::int64_t y;
        unsigned m, d;
        civil(days, y, m, d);
        bc = y <= 0;
        append_padded(out, static_cast<std::uint64_t>(bc ? 1 - y : y), 4);
        out += '-';
        append_padded(out, m, 2);
        out += '-';
        append_padded(out, d, 2);
    }
    static void append_timestamp(std::string& out, std::int64_t units, std::int64_t per_second) {
        const std::int64_t per_day = 86400 * per_second;
        std::int64_t days = units / per_day, rem = units % per_day;
        if (rem < 0) {
            rem += per_day;
            --days;
        }
        bool bc;
        append_date(out, days, bc);
        const std::int64_t secs = rem / per_second;
        const std::int64_t micros = (rem % per_second) * (1000000 / per_second);
        out += ' ';
        append_padded(out, static_cast<std::uint64_t>(secs / 3600), 2);
        out += ':';
        append_padded(out, static_cast<std::uint64_t>(secs / 60 % 60), 2);
        out += ':';
        append_padded(out, static_cast<std::uint64_t>(secs % 60), 2);
        if (micros) {
            out += '.';
            append_padded(out, static_cast<std::uint64_t>(micros), 6);
        }
        out += "+00";
        if (bc) out += " BC";
    }
    // A two's-complement big-endian unscaled integer and a scale as exact decimal text.
    void append_decimal(std::string& out, std::string_view bytes, int scale) {
        if (bytes.size() > kAvroMaxDecimalBytes)
            fail("a decimal of more than " + std::to_string(kAvroMaxDecimalBytes) + " bytes");
        unsigned char mag[kAvroMaxDecimalBytes];
        const std::size_t n = bytes.size();
        const bool neg = n > 0 && (static_cast<unsigned char>(bytes[0]) & 0x80);
        for (std::size_t i = 0; i < n; ++i) mag[i] = static_cast<unsigned char>(bytes[i]);
        if (neg) {  // negate: invert and add one
            unsigned carry = 1;
            for (std::size_t i = n; i-- > 0;) {
                const unsigned v = static_cast<unsigned char>(~mag[i]) + carry;
                mag[i] = static_cast<unsigned char>(v);
                carry = v >> 8;
            }
        }
        // Repeated division by 10^9, most significant byte first.
        char digits[kAvroMaxDecimalBytes * 3 + 16];
        std::size_t nd = 0;
        std::size_t start = 0;
        while (start < n && mag[start] == 0) ++start;
        while (start < n) {
            std::uint64_t rem = 0;
            for (std::size_t i = start; i < n; ++i) {
                const std::uint64_t cur = (rem << 8) | mag[i];
                mag[i] = static_cast<unsigned char>(cur / 1000000000u);
                rem = cur % 1000000000u;
            }
            while (start < n && mag[start] == 0) ++start;
            for (int k = 0; k < 9 && (start < n || rem); ++k) {
                digits[nd++] = static_cast<char>('0' + rem % 10);
                rem /= 10;
            }
            if (start < n)
                while (nd % 9) digits[nd++] = '0';
        }
        if (nd == 0) digits[nd++] = '0';
        if (neg) out += '-';
        // digits[] is least significant first.
        const std::size_t sc = static_cast<std::size_t>(scale);
        if (nd <= sc) {
            out += "0.";
            out.append(sc - nd, '0');
            for (std::size_t i = nd; i-- > 0;) out += digits[i];
            return;
        }
        for (std::size_t i = nd; i-- > 0;) {
            out += digits[i];
            if (i == sc && sc > 0) out += '.';
        }
    }
    static void append_double_json(std::string& out, double d, bool is_float) {
        if (std::isnan(d)) {
            out += "\"NaN\"";
        } else if (std::isinf(d)) {
            out += d > 0 ? "\"Infinity\"" : "\"-Infinity\"";
        } else {
            append_number(out, d, is_float);
        }
    }
    float read_float() {
        const std::string_view b = take(4);
        std::uint32_t u;
        std::memcpy(&u, b.data(), 4);  // little-endian on the wire and on the machines we run
        float f;
        std::memcpy(&f, &u, 4);
        return f;
    }
    double read_double() {
        const std::string_view b = take(8);
        double d;
        std::memcpy(&d, b.data(), 8);
        return d;
    }

    // Any value of a writer node as JSON text (arrays, maps, records, and values inside them).
    void to_json(int node, std::string& out, int depth) {
        if (depth > kMaxDepth) fail("nested deeper than " + std::to_string(kMaxDepth));
        const Node& n = writer.node(node);
        switch (n.type) {
        case Type::Null: out += "null"; return;
        case Type::Boolean: out += boolean() ? "true" : "false"; return;
        case Type::Int:
        case Type::Long: {
            const std::int64_t v = n.type == Type::Int ? read_int() : read_long();
            if (n.logical == Logical::TimestampMillis || n.logical == Logical::TimestampMicros) {
                out += '"';
                append_timestamp(out, v, n.logical == Logical::TimestampMillis ? 1000 : 1000000);
                out += '"';
            } else if (n.logical == Logical::Date) {
                if (v < INT32_MIN || v > INT32_MAX) fail("a date beyond 32 bits");
                bool bc;
                out += '"';
                append_date(out, v, bc);
                if (bc) out += " BC";
                out += '"';
            } else {
                append_int(out, v);
            }
            return;
        }
        case Type::Float: append_double_json(out, read_float(), true); return;
        case Type::Double: append_double_json(out, read_double(), false); return;
        case Type::Bytes:
        case Type::Fixed: {
            const std::string_view b = take(n.type == Type::Fixed ? n.size : read_len());
            if (n.logical == Logical::Decimal) {
                append_decimal(out, b, n.scale);
            } else {
                out += '"';
                out += '\\';  // the JSON escape of the backslash of \x
                append_hex(out, b);
                out += '"';
            }
            return;
        }
        case Type::String: append_json_string(out, checked_string(take(read_len()))); return;
        case Type::Enum: append_json_string(out, n.symbols[enum_index(n)]); return;
        case Type::Union: to_json(n.branches[branch(n)], out, depth + 1); return;
        case Type::Record: {
            out += '{';
            bool first = true;
            for (const Field& f : n.fields) {
                if (!first) out += ',';
                first = false;
                append_json_string(out, f.name);
                out += ':';
                to_json(f.type, out, depth + 1);
            }
            out += '}';
            return;
        }
        case Type::Array:
        case Type::Map: {
            const bool map = n.type == Type::Map;
            out += map ? '{' : '[';
            bool first = true;
            const std::size_t mb = min_bytes(n.items) + (map ? 1 : 0);
            while (std::size_t count = block(mb))
                for (std::size_t i = 0; i < count; ++i) {
                    if (!first) out += ',';
                    first = false;
                    if (map) {
                        append_json_string(out, checked_string(take(read_len())));
                        out += ':';
                    }
                    to_json(n.items, out, depth + 1);
                }
            out += map ? '}' : ']';
            return;
        }
        }
    }

    bool boolean() {
        const std::uint8_t b = static_cast<std::uint8_t>(take(1)[0]);
        if (b > 1) fail("a boolean that is neither 0 nor 1");
        return b == 1;
    }

    // A timestamp-millis/-micros value into column c: epoch milliseconds for a column that
    // takes them (epoch_ms) when the value is a whole millisecond in range, else ISO-8601 text.
    void timestamp(const Step& st, std::uint16_t c, std::int64_t v, RawRows& rows, std::size_t row,
                   std::size_t first) {
        const bool micros = st.render == Render::TsMicros;
        if (c < epoch_ms.size() && epoch_ms[c] && (!micros || v % 1000 == 0)) {
            const std::int64_t ms = micros ? v / 1000 : v;
            if (core::in_event_time_range(ms)) {
                char buf[24];
                const auto r = std::to_chars(buf, buf + sizeof buf, ms);
                rows.set(row, first + c, RawKind::Number, std::string_view(buf, r.ptr - buf));
                return;
            }
        }
        scratch.clear();
        append_timestamp(scratch, v, micros ? 1000000 : 1000);
        rows.set(row, first + c, RawKind::String, scratch);
    }

    void put(const Step& st, RawRows& rows, std::size_t row, std::size_t first, RawKind kind,
             std::string_view text) {
        for (const std::uint16_t c : st.cols) rows.set(row, first + c, kind, text);
    }

    void exec(const Step& st, RawRows& rows, std::size_t row, std::size_t first, int depth) {
        if (!st.wanted) {
            skip(st.wnode, depth);
            return;
        }
        if (depth > kMaxDepth) fail("nested deeper than " + std::to_string(kMaxDepth));
        const Node& n = writer.node(st.wnode);
        switch (st.type) {
        case Type::Null: put(st, rows, row, first, RawKind::Null, {}); return;
        case Type::Boolean: {
            const bool b = boolean();
            put(st, rows, row, first, b ? RawKind::True : RawKind::False, {});
            return;
        }
        case Type::Int:
        case Type::Long: {
            const std::int64_t v = st.type == Type::Int ? read_int() : read_long();
            scratch.clear();
            if (st.render == Render::TsMillis || st.render == Render::TsMicros) {
                for (const std::uint16_t c : st.cols) timestamp(st, c, v, rows, row, first);
            } else if (st.render == Render::Date) {
                if (v < INT32_MIN || v > INT32_MAX) fail("a date beyond 32 bits");
                bool bc;
                append_date(scratch, v, bc);
                if (bc) scratch += " BC";
                put(st, rows, row, first, RawKind::String, scratch);
            } else {
                char buf[24];
                const auto r = std::to_chars(buf, buf + sizeof buf, v);
                put(st, rows, row, first, RawKind::Number, std::string_view(buf, r.ptr - buf));
            }
            return;
        }
        case Type::Float:
        case Type::Double: {
            const double d = st.type == Type::Float ? read_float() : read_double();
            scratch.clear();
            if (std::isnan(d)) {
                put(st, rows, row, first, RawKind::String, "NaN");
            } else if (std::isinf(d)) {
                put(st, rows, row, first, RawKind::String, d > 0 ? "Infinity" : "-Infinity");
            } else {
                append_number(scratch, d, st.type == Type::Float);
                put(st, rows, row, first, RawKind::Number, scratch);
            }
            return;
        }
        case Type::Bytes:
        case Type::String:
        case Type::Fixed: {
            const std::string_view b = take(st.type == Type::Fixed ? st.size : read_len());
            if (st.render == Render::Decimal) {
                scratch.clear();
                append_decimal(scratch, b, st.scale);
                put(st, rows, row, first, RawKind::Number, scratch);
            } else if (st.render == Render::Hex) {
                scratch.clear();
                append_hex(scratch, b);
                put(st, rows, row, first, RawKind::String, scratch);
            } else {
                put(st, rows, row, first, RawKind::String, checked_string(b));
            }
            return;
        }
        case Type::Enum: {
            const std::size_t i = enum_index(n);
            if (!st.enum_known[i])
                fail("enum symbol \"" + n.symbols[i] + "\" is not one of the reader's");
            put(st, rows, row, first, RawKind::String, st.enum_text[i]);
            return;
        }
        case Type::Union: {
            const std::size_t i = branch(n);
            exec(st.kids[i], rows, row, first, depth + 1);
            return;
        }
        case Type::Record:
        case Type::Array:
        case Type::Map: {
            if (!st.cols.empty()) {
                const std::uint8_t* at = p;
                const std::size_t items_at = items;
                scratch.clear();
                to_json(st.wnode, scratch, depth);
                put(st, rows, row, first, st.type == Type::Array ? RawKind::Array : RawKind::Object,
                    scratch);
                if (st.type != Type::Record || st.kids.empty()) return;
                p = at;  // and read the fields below again for the columns they hold
                items = items_at;
            }
            for (const Step& k : st.kids) exec(k, rows, row, first, depth + 1);
            return;
        }
        }
    }

    void run(RawRows& rows, std::size_t row, std::size_t first) {
        for (const Op& op : ops) {
            switch (op.code) {
            case Code::Tree: exec(*op.step, rows, row, first, op.depth); break;
            case Code::Skip: skip(op.step->wnode, op.depth); break;
            case Code::SkipVarint: (void)read_long(); break;
            case Code::SkipLen: take(read_len()); break;
            case Code::Int:
            case Code::Long: {
                const std::int64_t v = op.code == Code::Int ? read_int() : read_long();
                char buf[24];
                const auto r = std::to_chars(buf, buf + sizeof buf, v);
                rows.set(row, first + op.col, RawKind::Number, std::string_view(buf, r.ptr - buf));
                break;
            }
            case Code::String:
                rows.set(row, first + op.col, RawKind::String, checked_string(take(read_len())));
                break;
            case Code::Ts: timestamp(*op.step, op.col, read_long(), rows, row, first); break;
            }
        }
    }

    void flatten(const Step& st, int depth) {
        if (depth > kMaxDepth) unresolvable("nested deeper than " + std::to_string(kMaxDepth));
        if (!st.wanted) {
            Code c = Code::Skip;
            if (st.type == Type::Int || st.type == Type::Long || st.type == Type::Enum)
                c = Code::SkipVarint;
            else if (st.type == Type::String || st.type == Type::Bytes)
                c = Code::SkipLen;
            ops.push_back({c, 0, depth, &st});
        } else if (st.type == Type::Record && st.cols.empty()) {
            for (const Step& k : st.kids) flatten(k, depth + 1);
        } else if (st.cols.size() == 1 && st.render == Render::Plain &&
                   (st.type == Type::Int || st.type == Type::Long || st.type == Type::String)) {
            const Code c = st.type == Type::Int    ? Code::Int
                           : st.type == Type::Long ? Code::Long
                                                   : Code::String;
            ops.push_back({c, st.cols[0], depth, &st});
        } else if (st.cols.size() == 1 && st.type == Type::Long &&
                   (st.render == Render::TsMillis || st.render == Render::TsMicros)) {
            ops.push_back({Code::Ts, st.cols[0], depth, &st});
        } else {
            ops.push_back({Code::Tree, 0, depth, &st});
        }
    }

    // ---- compiling -----------------------------------------------------------------------
    struct Want {
        std::uint16_t col;
        const std::vector<std::string>* path;
        std::size_t at;  // members of path already taken
    };

    const Schema* reader = nullptr;

    static bool named(Type t) { return t == Type::Record || t == Type::Enum || t == Type::Fixed; }
    static std::string short_name(const std::string& full) {
        const std::size_t dot = full.rfind('.');
        return dot == std::string::npos ? full : full.substr(dot + 1);
    }
    // Avro's resolution rules, shallowly for the types inside arrays and maps.
    static bool matches(const Node& w, const Node& r) {
        if (w.type == r.type) {
            if (!named(w.type)) return true;
            if (short_name(w.name) != short_name(r.name)) return false;
            return w.type != Type::Fixed || w.size == r.size;
        }
        switch (w.type) {
        case Type::Int:
            return r.type == Type::Long || r.type == Type::Float || r.type == Type::Double;
        case Type::Long: return r.type == Type::Float || r.type == Type::Double;
        case Type::Float: return r.type == Type::Double;
        case Type::String: return r.type == Type::Bytes;
        case Type::Bytes: return r.type == Type::String;
        default: return false;
        }
    }
    // The reader node a writer node resolves to (a union's first matching branch), or -1.
    int resolve(int wnode, int rnode) const {
        if (rnode < 0) return -1;
        const Node& w = writer.node(wnode);
        const Node& r = reader->node(rnode);
        if (w.type == Type::Union) return rnode;  // resolved per writer branch
        if (r.type == Type::Union) {
            for (int b : r.branches)  // the branch of the same type (and full name) first
                if (reader->node(b).type == w.type &&
                    (!named(w.type) || reader->node(b).name == w.name) &&
                    matches(w, reader->node(b)))
                    return b;
            for (int b : r.branches)  // then one of the same short name, then a promotion
                if (reader->node(b).type == w.type && matches(w, reader->node(b))) return b;
            for (int b : r.branches)
                if (matches(w, reader->node(b))) return b;
            return -2;
        }
        return matches(w, r) ? rnode : -2;
    }

    [[noreturn]] static void unresolvable(const std::string& what) {
        throw Error(sqlstate::kDatatypeMismatch, "the Avro writer schema cannot be read: " + what,
                    "Avro's schema resolution rules decide which writer schemas a reader "
                    "schema reads (src/format/README-avro.md).");
    }

    static std::string path_text(const Want& w) {
        std::string s;
        for (std::size_t i = 0; i < w.path->size(); ++i) s += (i ? "." : "") + (*w.path)[i];
        return s;
    }

    // A default (JSON text) as a column's raw value, for a reader node.
    void add_default(std::uint16_t col, const std::string& json, int rnode) {
        simdjson::dom::parser parser;
        simdjson::dom::element e;
        if (parser.parse(json).get(e)) unresolvable("a default that is not JSON");
        const Node* r = &reader->node(rnode);
        if (r->type == Type::Union) r = &reader->node(r->branches[0]);  // Avro: the first branch
        Constant c{col, RawKind::Null, {}};
        switch (e.type()) {
        case simdjson::dom::element_type::NULL_VALUE: break;
        case simdjson::dom::element_type::BOOL:
            c.kind = e.get_bool().value_unsafe() ? RawKind::True : RawKind::False;
            break;
        case simdjson::dom::element_type::INT64:
        case simdjson::dom::element_type::UINT64:
        case simdjson::dom::element_type::DOUBLE:
            if ((r->logical == Logical::TimestampMillis ||
                 r->logical == Logical::TimestampMicros) &&
                e.type() == simdjson::dom::element_type::INT64) {
                c.kind = RawKind::String;
                append_timestamp(c.text, e.get_int64().value_unsafe(),
                                 r->logical == Logical::TimestampMillis ? 1000 : 1000000);
            } else if (r->logical == Logical::Date &&
                       e.type() == simdjson::dom::element_type::INT64) {
                bool bc;
                c.kind = RawKind::String;
                append_date(c.text, e.get_int64().value_unsafe(), bc);
                if (bc) c.text += " BC";
            } else {
                c.kind = RawKind::Number;
                c.text = json;
            }
            break;
        case simdjson::dom::element_type::STRING: {
            const std::string_view s = e.get_string().value_unsafe();
            c.kind = RawKind::String;
            if (r->type == Type::Bytes || r->type == Type::Fixed) {
                // Avro writes a bytes default as a string of code points 0-255, one per byte.
                std::string bytes;
                for (std::size_t i = 0; i < s.size();) {
                    const auto b0 = static_cast<unsigned char>(s[i]);
                    if (b0 < 0x80) {
                        bytes += static_cast<char>(b0);
                        i += 1;
                    } else if ((b0 & 0xe0) == 0xc0 && i + 1 < s.size() && b0 <= 0xc3) {
                        bytes += static_cast<char>(((b0 & 0x1f) << 6) | (s[i + 1] & 0x3f));
                        i += 2;
                    } else {
                        unresolvable("a bytes default with a code point above 255");
                    }
                }
                if (r->logical == Logical::Decimal) {
                    c.kind = RawKind::Number;
                    try {
                        append_decimal(c.text, bytes, r->scale);
                    } catch (const Bad&) {
                        unresolvable("a decimal default too long");
                    }
                } else {
                    append_hex(c.text, bytes);
                }
            } else {
                c.text = std::string(s);
            }
            break;
        }
        case simdjson::dom::element_type::ARRAY:
            c.kind = RawKind::Array;
            c.text = json;
            break;
        case simdjson::dom::element_type::OBJECT:
            c.kind = RawKind::Object;
            c.text = json;
            break;
        }
        constants.push_back(std::move(c));
    }

    static bool nullable(const Schema& s, int node) {
        const Node& n = s.node(node);
        if (n.type == Type::Null) return true;
        if (n.type != Type::Union) return false;
        for (int b : n.branches)
            if (s.node(b).type == Type::Null) return true;
        return false;
    }

    // The reader's record node below rnode (itself, or a union's record branch), or -1.
    int reader_record(int rnode) const {
        if (rnode < 0) return -1;
        const Node& r = reader->node(rnode);
        if (r.type == Type::Record) return rnode;
        if (r.type == Type::Union)
            for (int b : r.branches)
                if (reader->node(b).type == Type::Record) return b;
        return -1;
    }

    Step compile(int wnode, int rnode, const std::vector<Want>& wants, int depth) {
        if (depth > kMaxDepth) unresolvable("nested deeper than " + std::to_string(kMaxDepth));
        Step st;
        st.wnode = wnode;
        const Node& w = writer.node(wnode);
        st.type = w.type;
        st.size = w.size;
        if (wants.empty()) return st;
        st.wanted = true;
        if (w.type == Type::Union) {  // every want goes down each branch
            for (int b : w.branches) {
                const int rb = resolve(b, rnode);
                st.kids.push_back(compile(b, rb < 0 && rnode >= 0 ? rnode : rb, wants, depth + 1));
            }
            return st;
        }
        const int r = rnode >= 0 ? resolve(wnode, rnode) : -1;
        std::vector<Want> below;
        for (const Want& want : wants) {
            if (want.at == want.path->size()) {
                if (rnode >= 0 && r == -2 && w.type != Type::Null)
                    unresolvable("column \"" + path_text(want) + "\" cannot be read from a " +
                                 "writer value of another type");
                st.cols.push_back(want.col);
            } else {
                below.push_back(want);
            }
        }
        const Node* rn = r >= 0 ? &reader->node(r) : nullptr;
        const Logical lg = rn ? rn->logical : w.logical;
        if (lg == Logical::Decimal && (w.type == Type::Bytes || w.type == Type::Fixed)) {
            st.render = Render::Decimal;
            st.scale = rn ? rn->scale : w.scale;
            if (rn && rn->scale != w.scale && w.logical == Logical::Decimal)
                unresolvable("a decimal of scale " + std::to_string(w.scale) + " read as scale " +
                             std::to_string(rn->scale));
        } else if (lg == Logical::TimestampMillis && w.type == Type::Long) {
            st.render = Render::TsMillis;
        } else if (lg == Logical::TimestampMicros && w.type == Type::Long) {
            st.render = Render::TsMicros;
        } else if (lg == Logical::Date && w.type == Type::Int) {
            st.render = Render::Date;
        } else if (w.type == Type::Bytes || w.type == Type::Fixed) {
            st.render = rn && rn->type == Type::String ? Render::Text : Render::Hex;
        } else if (w.type == Type::String && rn && rn->type == Type::Bytes) {
            st.render = Render::Hex;
        }
        if (w.type == Type::Enum) {
            for (const std::string& sym : w.symbols) {
                bool known = true;
                std::string text = sym;
                if (rn && rn->type == Type::Enum) {
                    known = false;
                    for (const std::string& rs : rn->symbols) known = known || rs == sym;
                    if (!known && !rn->enum_default.empty()) {
                        known = true;
                        text = rn->enum_default;
                    }
                }
                st.enum_known.push_back(known);
                st.enum_text.push_back(std::move(text));
            }
        }
        if (below.empty()) return st;
        if (w.type != Type::Record) return st;  // a path across a value that is no record: Absent
        // Each want's next member: a writer field (by the reader's name or aliases), or a
        // default from the reader's field.
        const int rrec = reader_record(r >= 0 ? r : -1);
        std::vector<std::vector<Want>> per_field(w.fields.size());
        for (const Want& want : below) {
            const std::string& member = (*want.path)[want.at];
            const Field* rf = nullptr;
            if (rrec >= 0)
                for (const Field& f : reader->node(rrec).fields)
                    if (f.name == member) rf = &f;
            std::size_t found = w.fields.size();
            for (std::size_t i = 0; i < w.fields.size() && found == w.fields.size(); ++i) {
                if (w.fields[i].name == member) found = i;
                if (rf)
                    for (const std::string& a : rf->aliases)
                        if (w.fields[i].name == a) found = i;
            }
            if (found < w.fields.size()) {
                per_field[found].push_back({want.col, want.path, want.at + 1});
            } else if (rf && want.at + 1 == want.path->size()) {
                if (rf->has_default) {
                    add_default(want.col, rf->default_json, rf->type);
                } else if (nullable(*reader, rf->type)) {
                    constants.push_back({want.col, RawKind::Null, {}});
                } else {
                    unresolvable("the writer has no field \"" + member +
                                 "\" and the reader's has no default");
                }
            }
            // else: no such member, the column stays Absent (as a JSON member that is missing)
        }
        for (std::size_t i = 0; i < w.fields.size(); ++i) {
            int rf_type = -1;
            if (rrec >= 0 && !per_field[i].empty()) {
                const std::string& member = (*per_field[i][0].path)[per_field[i][0].at - 1];
                for (const Field& f : reader->node(rrec).fields)
                    if (f.name == member) rf_type = f.type;
            }
            st.kids.push_back(compile(w.fields[i].type, rf_type, per_field[i], depth + 1));
        }
        return st;
    }
};

Program::Program(const Schema& writer, const Schema* reader, const ColumnPaths& columns,
                 const std::vector<bool>& epoch_ms)
    : impl_(std::make_unique<Impl>()) {
    if (columns.size() > UINT16_MAX)
        throw Error(sqlstate::kProgramLimitExceeded, "too many columns for an Avro source");
    impl_->writer = writer;
    impl_->reader = reader;
    impl_->width = columns.size();
    impl_->epoch_ms = epoch_ms;
    std::vector<Impl::Want> wants;
    for (std::size_t i = 0; i < columns.size(); ++i)
        wants.push_back({static_cast<std::uint16_t>(i), &columns[i], 0});
    impl_->root = impl_->compile(impl_->writer.root(), reader ? reader->root() : -1, wants, 0);
    impl_->flatten(impl_->root, 0);
    impl_->reader = nullptr;  // not kept: everything the program needs of it is compiled in
}

Program::~Program() = default;
Program::Program(Program&&) noexcept = default;
Program& Program::operator=(Program&&) noexcept = default;

std::size_t Program::columns() const { return impl_->width; }
const std::string& Program::detail() const { return impl_->detail; }

DeadReason Program::read(const std::uint8_t* body, std::size_t len, RawRows& rows, std::size_t row,
                         std::size_t first) {
    Impl& m = *impl_;
    m.detail.clear();
    m.p = body;
    m.end = body + len;
    m.items = 0;
    for (const Constant& c : m.constants) rows.set(row, first + c.col, c.kind, c.text);
    try {
        m.run(rows, row, first);
    } catch (const Bad&) {
        return DeadReason::BadAvro;
    } catch (DeadReason r) {
        return r;
    }
    if (m.p != m.end) {
        m.detail = std::to_string(m.end - m.p) + " bytes left over after the record";
        return DeadReason::BadAvro;
    }
    return DeadReason::None;
}

Program* ProgramCache::find(std::int32_t id) {
    auto it = programs_.find(id);
    return it == programs_.end() ? nullptr : it->second.get();
}

Program& ProgramCache::put(std::int32_t id, Program program) {
    auto& slot = programs_[id];
    slot = std::make_unique<Program>(std::move(program));
    return *slot;
}

DeadReason split_confluent(const std::uint8_t* msg, std::size_t len, Framed& out,
                           std::string& detail) {
    if (len < 5) {
        detail = "a message of " + std::to_string(len) +
                 " bytes is shorter than the Confluent framing's 5";
        return DeadReason::BadAvro;
    }
    if (msg[0] != 0) {
        detail = "magic byte " + std::to_string(msg[0]) + ", not 0";
        return DeadReason::BadAvro;
    }
    out.schema_id = static_cast<std::int32_t>((static_cast<std::uint32_t>(msg[1]) << 24) |
                                              (static_cast<std::uint32_t>(msg[2]) << 16) |
                                              (static_cast<std::uint32_t>(msg[3]) << 8) | msg[4]);
    out.body = msg + 5;
    out.body_len = len - 5;
    return DeadReason::None;
}

}  // namespace stoatflow::format::avro
