// A source's row type: `columns` resolved with PostgreSQL's type-name parser, and raw rows
// converted into Datums by the rules of README "Semantics" through the column types' own input
// functions.
#include "stoatflow/core/aggregate.hpp"
#include "stoatflow/core/event_time.hpp"
#include "stoatflow/core/column_list.hpp"
#include "stoatflow/core/error.hpp"
#include "stoatflow/format/fast_convert.hpp"
#include "stoatflow/format/raw_row.hpp"

#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "stoatflow/pg/catalog/row_type.hpp"
#include "stoatflow/pg/border/sandbox.hpp"
#include "stoatflow/pg/border/spi.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "datatype/timestamp.h"
#include "utils/timestamp.h"
#include "mb/pg_wchar.h"
#include "parser/parse_type.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "lib/stringinfo.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
}

namespace stoatflow::pg {
namespace {

format::FastType fast_type_of(Oid typid, int32 typmod) {
    switch (typid) {
    case INT2OID: return format::FastType::Int2;
    case INT4OID: return format::FastType::Int4;
    case INT8OID: return format::FastType::Int8;
    case NUMERICOID: return typmod < 0 ? format::FastType::Numeric : format::FastType::Other;
    case FLOAT4OID: return format::FastType::Float4;
    case FLOAT8OID: return format::FastType::Float8;
    case BOOLOID: return format::FastType::Bool;
    case TEXTOID:
        return GetDatabaseEncoding() == PG_UTF8 ? format::FastType::Text : format::FastType::Other;
    case TIMESTAMPTZOID:
        return typmod < 0 ? format::FastType::Timestamptz : format::FastType::Other;
    case JSONOID:
    case JSONBOID: return format::FastType::Json;
    default: return format::FastType::Other;
    }
}

bool is_json_type(Oid base) { return base == JSONBOID || base == JSONOID; }

// Epoch milliseconds (a JSON number's text, fractions rounded to the microsecond) as
// timestamptz; errors as PostgreSQL's own would.
Datum epoch_ms_to_timestamptz(const char* text) {
    Datum n = DirectFunctionCall3(numeric_in, CStringGetDatum(text), ObjectIdGetDatum(InvalidOid),
                                  Int32GetDatum(-1));
    Datum thousand = DirectFunctionCall1(int8_numeric, Int64GetDatum(1000));
    Datum us = DirectFunctionCall2(numeric_mul, n, thousand);
    us = DirectFunctionCall2(numeric_round, us, Int32GetDatum(0));
    const int64 micros = DatumGetInt64(DirectFunctionCall1(numeric_int8, us));
    if (micros < PG_INT64_MIN + core::kPgEpochMicros ||
        !IS_VALID_TIMESTAMP(core::unix_micros_to_pg_timestamp(micros)))
        ereport(ERROR, (errcode(pg_errcode(sqlstate::kDatetimeValueOutOfRange)),
                        errmsg("epoch milliseconds %s are out of the range of timestamptz", text)));
    return TimestampTzGetDatum(core::unix_micros_to_pg_timestamp(micros));
}

}  // namespace

void resolve_type(const std::string& name, const char* search_path, Oid& typid, int32& typmod) {
    const char* type_name = name.c_str();
    Oid oid = InvalidOid;
    int32 mod = -1;
    pg_call([&] {
        int nest = -1;
        if (search_path != nullptr) {
            nest = NewGUCNestLevel();
            (void)set_config_option("search_path", search_path, PGC_USERSET, PGC_S_SESSION,
                                    GUC_ACTION_SAVE, true, 0, false);
        }
        parseTypeString(type_name, &oid, &mod, false);
        if (nest >= 0) AtEOXact_GUC(true, nest);
    });
    typid = oid;
    typmod = mod;
}

RowType::RowType(const std::vector<core::ColumnDecl>& columns, MemoryContext mcxt) {
    auto add = [&](const std::string& name, const std::string& type,
                   const std::vector<std::string>& path) {
        RowColumn c;
        c.name = name;
        c.type_name = type;
        c.path = path;
        resolve_type(type, nullptr, c.typid, c.typmod);
        const Oid typid = c.typid;
        Oid input_fn = InvalidOid, ioparam = InvalidOid, base = InvalidOid;
        char category = 'X';
        FmgrInfo* flinfo = &c.input;
        pg_call([&] {
            bool preferred;
            base = getBaseType(typid);
            get_type_category_preferred(base, &category, &preferred);
            getTypeInputInfo(typid, &input_fn, &ioparam);
            fmgr_info_cxt(input_fn, flinfo, mcxt);
        });
        c.base = base;
        c.category = category;
        c.typioparam = ioparam;
        c.fast = fast_type_of(c.typid, c.typmod);
        columns_.push_back(std::move(c));
    };
    for (const auto& d : columns) add(d.name, d.type, d.path);
    declared_ = columns_.size();
    for (const auto& m : core::kMetadataColumns) add(m.name, m.sql_type, {});
}

int RowType::index_of(const std::string& name) const {
    for (std::size_t i = 0; i < columns_.size(); ++i)
        if (columns_[i].name == name) return static_cast<int>(i);
    return -1;
}

std::vector<std::vector<std::string>> RowType::paths() const {
    std::vector<std::vector<std::string>> out;
    for (std::size_t i = 0; i < declared_; ++i) out.push_back(columns_[i].path);
    return out;
}

// Called inside pg_call only: PostgreSQL calls and plain values, no C++ object is created.
Datum RowType::convert_value(std::size_t col, const format::RawValue& raw, bool& isnull) const {
    const RowColumn& c = columns_[col];
    FmgrInfo* input = const_cast<FmgrInfo*>(&c.input);
    isnull = false;
    const char* text = nullptr;  // what the input function gets
    switch (raw.kind) {
    case format::RawKind::Absent:
    case format::RawKind::Null:
        isnull = true;  // through the input function all the same: a domain may refuse NULL
        return InputFunctionCall(input, nullptr, c.typioparam, c.typmod);
    case format::RawKind::String: {
        if (std::memchr(raw.text.data(), '\0', raw.text.size()) != nullptr)
            ereport(ERROR, (errcode(pg_errcode(sqlstate::kUntranslatableCharacter)),
                            errmsg("the string holds a NUL character (\\u0000), which no "
                                   "PostgreSQL text can")));
        char* s = pnstrdup(raw.text.data(), raw.text.size());
        text = pg_any_to_server(s, static_cast<int>(raw.text.size()), PG_UTF8);
        if (is_json_type(c.base)) {  // json and jsonb keep the JSON value itself: a string
            StringInfoData quoted;
            initStringInfo(&quoted);
            escape_json(&quoted, text);
            text = quoted.data;
        }
        const Datum v = InputFunctionCall(input, const_cast<char*>(text), c.typioparam, c.typmod);
        // README "Columns", Conversion: what converts, but reads the clock, is refused too (a
        // replay must give the same values).
        if (c.base == TIMESTAMPTZOID || c.base == TIMESTAMPOID || c.base == DATEOID)
            if (const char* word = format::clock_dependent_time(raw.text))
                ereport(ERROR, (errcode(pg_errcode(sqlstate::kInvalidDatetimeFormat)),
                                errmsg("\"%s\" depends on the clock of whoever reads the record; a "
                                       "date or time must be written in it",
                                       word)));
        return v;
    }
    case format::RawKind::Number:
        if (c.base == TIMESTAMPTZOID) {
            char* s = pnstrdup(raw.text.data(), raw.text.size());
            Datum v = epoch_ms_to_timestamptz(s);
            if (c.typid != c.base) domain_check(v, false, c.typid, nullptr, nullptr);
            return v;
        }
        if (c.category == TYPCATEGORY_NUMERIC || c.category == TYPCATEGORY_STRING ||
            is_json_type(c.base))
            text = pnstrdup(raw.text.data(), raw.text.size());
        break;
    case format::RawKind::True:
    case format::RawKind::False:
        if (c.base == BOOLOID || c.category == TYPCATEGORY_STRING || is_json_type(c.base))
            text = raw.kind == format::RawKind::True ? "true" : "false";
        break;
    case format::RawKind::Object:
    case format::RawKind::Array:
        if (c.category == TYPCATEGORY_STRING || is_json_type(c.base))
            text = pnstrdup(raw.text.data(), raw.text.size());
        break;
    }
    if (text == nullptr)
        ereport(ERROR, (errcode(pg_errcode(sqlstate::kDatatypeMismatch)),
                        errmsg("%s does not convert to type %s", format::raw_kind_name(raw.kind),
                               format_type_with_typemod(c.typid, c.typmod))));
    return InputFunctionCall(input, const_cast<char*>(text), c.typioparam, c.typmod);
}

void RowType::convert(const format::RawRows& rows, std::vector<Datum>& values,
                      std::vector<bool>& nulls, std::vector<std::string>& bad,
                      const std::vector<bool>* used) const {
    const std::size_t n = rows.size(), w = columns_.size();
    values.assign(n * w, Datum(0));
    nulls.assign(n * w, true);
    bad.assign(n, std::string());
    if (n == 0) return;
    std::size_t at = 0;  // the column being converted, for the message
    auto convert_rows = [&](std::size_t from, std::size_t to) {
        pg_call([&] {
            for (std::size_t r = from; r < to; ++r) {
                restart_user_call_clock();  // one call of the owner's input functions per row
                for (at = 0; at < w; ++at) {
                    const format::RawValue raw = rows.get(r, at);
                    const RowColumn& c = columns_[at];
                    if (used != nullptr && !(*used)[at] &&
                        (at >= declared_ || format::fast_valid(c.fast, raw)))
                        continue;  // stays NULL: nobody reads it, and it converts
                    const format::FastValue fv = format::fast_convert(c.fast, raw);
                    if (fv.kind == format::FastValue::Kind::Null) continue;
                    bool isnull = false;
                    values[r * w + at] = fv.kind == format::FastValue::Kind::Ask
                                             ? convert_value(at, raw, isnull)
                                             : fast_value_datum(c, fv);
                    nulls[r * w + at] = isnull;
                }
            }
        });
    };
    if (try_in_subtransaction([&] { convert_rows(0, n); }).empty()) return;
    // One value failed: find the rows it was in, each in its own subtransaction.
    for (std::size_t r = 0; r < n; ++r) {
        const std::string failure = try_in_subtransaction([&] { convert_rows(r, r + 1); });
        if (failure.empty()) continue;
        const RowColumn& c = columns_[at];
        bad[r] = "column \"" + c.name + "\" (" + c.type_name + "): " + failure;
        for (std::size_t k = 0; k < w; ++k) nulls[r * w + k] = true;
    }
}

Datum fast_value_datum(const RowColumn& col, const format::FastValue& v) {
    using Kind = format::FastValue::Kind;
    switch (v.kind) {
    case Kind::Int: {
        if (col.fast == format::FastType::Int2) return Int16GetDatum(static_cast<int16>(v.i));
        if (col.fast == format::FastType::Int4) return Int32GetDatum(static_cast<int32>(v.i));
        if (col.fast == format::FastType::Int8) return Int64GetDatum(v.i);
        if (col.fast == format::FastType::Timestamptz) break;
        const std::int64_t i = v.i;
        return pg_call([&] { return NumericGetDatum(int64_to_numeric(i)); });
    }
    case Kind::Big: {
        const std::string s = core::int128_to_string(v.big);
        const char* cs = s.c_str();
        return pg_call([&] {
            return DirectFunctionCall3(numeric_in, CStringGetDatum(cs),
                                       ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
        });
    }
    case Kind::Double:
        return col.fast == format::FastType::Float4 ? Float4GetDatum(static_cast<float>(v.d))
                                                    : Float8GetDatum(v.d);
    case Kind::Bool: return BoolGetDatum(v.b);
    case Kind::Text: {
        const char* p = v.text.data();
        const int len = static_cast<int>(v.text.size());
        return pg_call([&] { return PointerGetDatum(cstring_to_text_with_len(p, len)); });
    }
    case Kind::Micros: return TimestampTzGetDatum(core::unix_micros_to_pg_timestamp(v.i));
    case Kind::Ask:
    case Kind::Null: break;
    }
    throw Error(sqlstate::kInternalError, "fast_value_datum: no value to convert");
}

}  // namespace stoatflow::pg
