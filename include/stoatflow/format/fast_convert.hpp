// The fast lane of column conversion: a raw field (raw_row.hpp) into a value of one of the hot
// column types, in pure C++, claimed only where PostgreSQL's own conversion (the type's input
// function, the rules of README "Semantics") is certain to give the identical value. Everything
// else (and every rejection) answers Ask: the PostgreSQL layer converts it with PostgreSQL. The
// corpus test (sql/row_type.sql) holds both lanes side by side.
#pragma once
#include "stoatflow/core/no_postgres.hpp"

#include "stoatflow/format/raw_row.hpp"

#include <cstdint>
#include <string_view>

namespace stoatflow::format {

// The column types the lane knows. Text only when the database encoding is UTF-8 (JSON text
// is UTF-8; elsewhere PostgreSQL must convert it). Types with a typmod are Other.
enum class FastType : std::uint8_t {
    Other,
    Int2,
    Int4,
    Int8,
    Numeric,
    Float4,
    Float8,
    Bool,
    Text,
    Timestamptz,
    Json,  // json and jsonb: never converted here, only checked (fast_valid)
};

struct FastValue {
    enum class Kind : std::uint8_t { Ask, Null, Int, Big, Double, Bool, Text, Micros };
    Kind kind = Kind::Ask;
    std::int64_t i = 0;     // Int; Micros: since 1970-01-01 00:00 UTC
    __int128 big = 0;       // Big (numeric integers beyond int64, at most 38 digits)
    double d = 0;           // Double (float4 values are exactly representable)
    bool b = false;         // Bool
    std::string_view text;  // Text: views the raw field's bytes or a literal
};

FastValue fast_convert(FastType type, const RawValue& raw);

// True when the value certainly converts into the column type (fast_convert claims it, or a
// json/jsonb column gets JSON that jsonb_in takes: no \u0000, no number beyond numeric's
// range). A record is only staged by the fast lane when every declared column passes: a value
// that does not convert makes the record a dead letter even when nothing reads it (README
// "Expressions and PostgreSQL aggregates").
bool fast_valid(FastType type, const RawValue& raw);

// ISO 8601 with an explicit offset, strictly: YYYY-MM-DD('T'|' ')hh:mm:ss[.f{1,6}](Z|±hh[:mm]),
// year 0001-9999, seconds 00-59, offset at most 15:59, as microseconds since the Unix epoch.
// False for anything else (PostgreSQL decides those).
bool parse_iso_timestamptz(std::string_view s, std::int64_t& micros);

// README "Columns", Conversion: the one owner of the rule that a date/time text may not depend on
// the clock of whoever converts it. Returns the word ("now", "today", "tomorrow", "yesterday")
// if `text`, as PostgreSQL's date/time input reads it (words in any case, anywhere: "today
// 10:00", " NOW "), names the current time or day; nullptr otherwise ("epoch", "allballs" and
// the infinities are fixed values).
const char* clock_dependent_time(std::string_view text);

// "infinity" or "-infinity" (any case, spaces around): an infinite time or number, which no
// event time can be.
bool is_infinity_text(std::string_view text);

}  // namespace stoatflow::format
