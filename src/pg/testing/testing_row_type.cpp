// TESTING TOOLS ONLY: the row type's two conversion lanes and the whole decode of a record
// (extract → convert) from SQL, so pg_regress can hold the C++ fast lane against PostgreSQL's
// input functions on a corpus, and check dead letters without a broker.
#include "stoatflow/core/column_list.hpp"
#include "stoatflow/core/error.hpp"
#include "stoatflow/format/fast_convert.hpp"
#include "stoatflow/format/json_text.hpp"
#include "stoatflow/format/raw_row.hpp"
#include "stoatflow/format/row_extractor.hpp"

#include <string>
#include <vector>

#include "stoatflow/pg/catalog/row_type.hpp"
#include "stoatflow/pg/border/spi.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/lsyscache.h"
}

using namespace stoatflow;
using namespace stoatflow::pg;

namespace {

// A one-column row type of `type` and the raw value of the JSON text `json`.
struct OneValue {
    RowType type;
    format::RawRows rows{1};
    OneValue(const std::string& type_name, const std::string& json)
        : type({core::ColumnDecl{"v", type_name, {"v"}, 1}}, CurrentMemoryContext) {
        format::RawRows all(1);
        format::JsonRowExtractor ex({{"v"}});
        const std::string doc = "{\"v\": " + json + "}";
        const std::size_t r = all.add_row();
        if (ex.extract(doc.data(), doc.size(), all, r) != format::DecodeError::None)
            throw Error(sqlstate::kInvalidParameterValue, "not a JSON value: " + ex.detail());
        rows = std::move(all);
    }
};

text* output_text(const RowColumn& c, Datum v) {
    const Oid typid = c.typid;
    return pg_call([&] {
        Oid out;
        bool varlena;
        getTypeOutputInfo(typid, &out, &varlena);
        return cstring_to_text(OidOutputFunctionCall(out, v));
    });
}

}  // namespace

// _test_fast_convert(type, json): the fast lane's value as the type's output shows it, or NULL
// when the lane asks PostgreSQL.
STOATFLOW_FUNCTION(stoatflow__test_fast_convert) {
    const OneValue one(text_to_string(PG_GETARG_DATUM(0)), text_to_string(PG_GETARG_DATUM(1)));
    const RowColumn& c = one.type.column(0);
    const format::FastValue v = format::fast_convert(c.fast, one.rows.get(0, 0));
    if (v.kind == format::FastValue::Kind::Ask) PG_RETURN_NULL();
    if (v.kind == format::FastValue::Kind::Null) return CStringGetTextDatum("<NULL>");
    return PointerGetDatum(output_text(c, fast_value_datum(c, v)));
}

// _test_convert(type, json): the PostgreSQL lane's value as the type's output shows it
// (NULL as '<NULL>'); a value that does not convert raises PostgreSQL's error.
STOATFLOW_FUNCTION(stoatflow__test_convert) {
    const OneValue one(text_to_string(PG_GETARG_DATUM(0)), text_to_string(PG_GETARG_DATUM(1)));
    const RowType& t = one.type;
    const format::RawValue raw = one.rows.get(0, 0);
    bool isnull = false;
    const Datum v = pg_call([&] { return t.convert_value(0, raw, isnull); });
    if (isnull) return CStringGetTextDatum("<NULL>");
    return PointerGetDatum(output_text(t.column(0), v));
}

// _test_decode(columns, payloads, keys): each payload extracted and converted as a worker
// would (metadata: topic 't', partition 0, offset = its index, the key, no timestamp or
// headers), one jsonb per payload: {"column": value as text, ...} or {"dead_letter": reason,
// "detail": ...}. One batch: a bad value sends it record by record.
STOATFLOW_FUNCTION(stoatflow__test_decode) {
    const std::vector<core::ColumnDecl> decls =
        core::parse_column_list(text_to_string(PG_GETARG_DATUM(0)));
    const std::vector<std::string> payloads = text_array_to_vector(PG_GETARG_DATUM(1));
    std::vector<std::string> keys;
    if (!PG_ARGISNULL(2)) keys = text_array_to_vector(PG_GETARG_DATUM(2));
    const RowType type(decls, CurrentMemoryContext);
    format::JsonRowExtractor ex(type.paths());
    format::RawRows rows(type.width());
    std::vector<std::string> out(payloads.size());
    std::vector<std::size_t> row_of(payloads.size(), SIZE_MAX);
    for (std::size_t i = 0; i < payloads.size(); ++i) {
        const std::size_t r = rows.add_row();
        auto e = ex.extract(payloads[i].data(), payloads[i].size(), rows, r);
        std::string detail = ex.detail();
        if (e == format::DecodeError::None) {
            format::RecordMeta meta;
            meta.topic = "t";
            meta.offset = static_cast<std::int64_t>(i);
            if (i < keys.size() && keys[i] != "<NULL>") {
                meta.key = keys[i].data();
                meta.key_len = keys[i].size();
            }
            if (!format::fill_metadata(rows, r, type.declared(), meta, detail))
                e = format::DecodeError::InvalidText;
        }
        if (e != format::DecodeError::None) {
            rows.drop_last();
            out[i] = "{\"dead_letter\": ";
            format::append_json_string(out[i], format::to_string(e));
            out[i] += ", \"detail\": ";
            format::append_json_string(out[i], detail);
            out[i] += "}";
        } else {
            row_of[i] = r;
        }
    }
    std::vector<Datum> values;
    std::vector<bool> nulls;
    std::vector<std::string> bad;
    type.convert(rows, values, nulls, bad);
    for (std::size_t i = 0; i < payloads.size(); ++i) {
        const std::size_t r = row_of[i];
        if (r == SIZE_MAX) continue;
        if (!bad[r].empty()) {
            out[i] = "{\"dead_letter\": \"bad_value\", \"detail\": ";
            format::append_json_string(out[i], bad[r]);
            out[i] += "}";
            continue;
        }
        out[i] = "{";
        for (std::size_t c = 0; c < type.width(); ++c) {
            if (c > 0) out[i] += ", ";
            format::append_json_string(out[i], type.column(c).name);
            out[i] += ": ";
            const std::size_t k = r * type.width() + c;
            if (nulls[k]) {
                out[i] += "null";
            } else {
                text* t = output_text(type.column(c), values[k]);
                format::append_json_string(out[i], text_to_string(PointerGetDatum(t)));
            }
        }
        out[i] += "}";
    }
    std::vector<Datum> items;
    for (const auto& s : out) {
        const char* cs = s.c_str();
        items.push_back(
            pg_call([&] { return DirectFunctionCall1(jsonb_in, CStringGetDatum(cs)); }));
    }
    return make_array(items, std::vector<bool>(items.size(), false), JSONBOID);
}
