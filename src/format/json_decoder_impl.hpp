// The JSON decoder's state (JsonDecoder::Impl): the configured paths compiled into the
// walk's trie and their slots, the walk's visitor (inline: the walk calls it per field),
// and the per-record steps that json_decoder_record.cpp defines.
#pragma once
#include "stoatflow/core/no_postgres.hpp"
#include "stoatflow/format/json_decoder.hpp"
#include "json_fields.hpp"
#include "json_walk.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace stoatflow::format {

// The decoder's files read the fields' vocabulary unqualified.
using core::Millis;
using json_fields::append_excerpt;
using json_fields::integer_digits;
using json_fields::integer_token_to_int128;
using json_fields::integer_token_to_int64;
using json_fields::kind_name;
using json_fields::NumKind;
using json_fields::Seen;
using json_fields::seen_of;
using json_fields::Slot;
using json_fields::token_to_double;

struct JsonDecoder::Impl {
    DecoderConfig cfg;
    std::vector<Slot> slots;
    std::vector<int>
        node_slot;  // per trie node: index into slots when a configured path ends there
    int key_slot = -1;
    int time_slot = -1;
    std::vector<int> value_slots;  // -1: count(*), no field

    json_walk::Walk<Impl> walk;
    std::string detail;

    explicit Impl(DecoderConfig c);

    // Adds a path to the trie and returns its slot (shared by equal paths); -1 for "".
    int add_path(const std::string& path);

    // ---- the walk's visitor ----
    static constexpr bool kContainerText = false;
    bool wants(int node) const { return node_slot[node] >= 0; }
    void forget(int node) {
        if (node_slot[node] >= 0) slots[node_slot[node]] = Slot{};
    }
    void value(int node, json_walk::Kind kind, std::string_view text, bool integer) {
        Slot& s = slots[node_slot[node]];
        switch (kind) {
        case json_walk::Kind::Object: s.seen = Seen::Object; return;
        case json_walk::Kind::Array: s.seen = Seen::Array; return;
        case json_walk::Kind::Null: s.seen = Seen::Null; return;
        case json_walk::Kind::True:
        case json_walk::Kind::False:
            s.seen = Seen::Bool;
            s.boolean = kind == json_walk::Kind::True;
            return;
        case json_walk::Kind::String:
            s.seen = Seen::String;
            s.text = text;
            return;
        case json_walk::Kind::Number:
            s.seen = Seen::Number;
            s.text = text;
            s.integer = integer;
            if (integer && integer_token_to_int64(text, s.i)) {
                s.num = NumKind::Int;
            } else if (integer && integer_digits(text) <= core::kMaxExactIntegerDigits) {
                s.num = NumKind::Big;
                s.big = integer_token_to_int128(text);
            } else {
                s.num = token_to_double(text, s.d) ? NumKind::Double : NumKind::Overflow;
            }
            return;
        }
    }

    // ---- one record (json_decoder_record.cpp) ----
    DecodeError field_error(DecodeError e, const std::string& path, const char* what);

    // Parses the payload and fills the slots.
    DecodeError parse(const char* payload, std::size_t len);

    DecodeError check_key_text(std::string_view text);

    DecodeError take_key(const char* key, std::size_t key_len, std::string& out);

    static bool in_event_time_range(Millis t) {
        return t >= core::kMinEventTime && t <= core::kMaxEventTime;
    }

    DecodeError take_time(Millis kafka_ts, Millis& out);

    // After take_time: the time is in the event time range, so t − now cannot overflow for
    // any wall clock inside it either; a clock outside it (a test's) is widened first.
    DecodeError check_future(Millis t, Millis now);

    // Every value; one an aggregate cannot use is listed in `bad` (the record stays good).
    void take_values(std::vector<core::Value>& out, std::vector<BadValue>& bad);
};

}  // namespace stoatflow::format
