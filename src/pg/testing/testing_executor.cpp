// TESTING TOOL ONLY: an aggregation's executor (executor.hpp) over payloads from SQL, so
// pg_regress can hold its results against PostgreSQL's own GROUP BY, through every path of the
// aggregate interface (add, serialize, deserialize, copy, merge, destroy, finalization).
#include "stoatflow/core/column_list.hpp"
#include "stoatflow/core/error.hpp"
#include "stoatflow/core/external_aggregate.hpp"
#include "stoatflow/core/window_spec.hpp"
#include "stoatflow/format/dead_reason.hpp"
#include "stoatflow/format/json_text.hpp"
#include "stoatflow/format/raw_row.hpp"
#include "stoatflow/format/row_extractor.hpp"

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "stoatflow/pg/declare/analyze.hpp"
#include "stoatflow/pg/executor/executor.hpp"
#include "stoatflow/pg/catalog/row_type.hpp"
#include "stoatflow/pg/border/rows.hpp"
#include "stoatflow/pg/border/spi.hpp"

extern "C" {
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/lsyscache.h"
}

using namespace stoatflow;
using namespace stoatflow::pg;

namespace {

// The start of a dead letter's JSON, up to its detail.
std::string dead_json(format::DeadReason reason) {
    std::string d = "{\"dead_letter\": ";
    format::append_json_string(d, format::to_string(reason));
    return d + ", \"detail\": ";
}

std::optional<std::string> opt_arg(FunctionCallInfo fcinfo, int i) {
    if (PG_ARGISNULL(i)) return std::nullopt;
    return text_to_string(PG_GETARG_DATUM(i));
}

// stoatflow.source.columns as create_source stores it: [{"name", "type", "path"}, ...].
std::string columns_json(const std::vector<core::ColumnDecl>& decls) {
    std::string j = "[";
    for (std::size_t i = 0; i < decls.size(); ++i) {
        if (i > 0) j += ", ";
        j += "{\"name\": ";
        format::append_json_string(j, decls[i].name);
        j += ", \"type\": ";
        format::append_json_string(j, decls[i].type);
        j += ", \"path\": [";
        for (std::size_t p = 0; p < decls[i].path.size(); ++p) {
            if (p > 0) j += ", ";
            format::append_json_string(j, decls[i].path[p]);
        }
        j += "]}";
    }
    return j + "]";
}

std::string output(Oid type, Datum v) {
    const char* s = pg_call([&] {
        Oid out;
        bool varlena;
        getTypeOutputInfo(type, &out, &varlena);
        return OidOutputFunctionCall(out, v);
    });
    return s;
}

// Payloads decoded as the worker does (metadata: topic 't', partition 0, offset = index).
struct Decoded {
    std::vector<std::string> dead;       // dead letters of payloads that do not extract
    std::vector<std::size_t> offset_of;  // per row: its payload's index
    std::vector<Datum> values;
    std::vector<bool> nulls;
    std::vector<std::string> bad;  // per row: a bad value's detail
};

Decoded decode(const RowType& type, const std::vector<std::string>& payloads) {
    Decoded d;
    format::JsonRowExtractor extractor(type.paths());
    format::RawRows rows(type.width());
    for (std::size_t i = 0; i < payloads.size(); ++i) {
        const std::size_t r = rows.add_row();
        auto e = extractor.extract(payloads[i].data(), payloads[i].size(), rows, r);
        std::string detail = extractor.detail();
        if (e == format::DecodeError::None) {
            format::RecordMeta meta;
            meta.topic = "t";
            meta.offset = static_cast<std::int64_t>(i);
            if (!format::fill_metadata(rows, r, type.declared(), meta, detail))
                e = format::DecodeError::InvalidText;
        }
        if (e != format::DecodeError::None) {
            rows.drop_last();
            std::string j = "{\"dead_letter\": ";
            format::append_json_string(j, format::to_string(e));
            j += ", \"detail\": ";
            format::append_json_string(j, detail);
            d.dead.push_back(j + ", \"offset\": " + std::to_string(i) + "}");
        } else {
            d.offset_of.push_back(i);
        }
    }
    type.convert(rows, d.values, d.nulls, d.bad);
    return d;
}

// An executor of `aggregates` over `columns`, keyed by the topic: the bytes tools' setup.
struct Setup {
    std::vector<core::ColumnDecl> decls;
    RowType type;
    Analysis an;
    AggregationExecutor ex;
    Setup(const std::string& columns, const std::string& aggregates)
        : decls(core::parse_column_list(columns)), type(decls, CurrentMemoryContext),
          an(analyze(decls, aggregates)), ex(an, type, CurrentMemoryContext) {}
    static Analysis analyze(const std::vector<core::ColumnDecl>& decls, const std::string& aggs) {
        DeclarationTexts t;
        t.columns_json = columns_json(decls);
        t.key = "kafka_topic";
        t.aggregates = aggs;
        return analyze_declaration(t);
    }
};

}  // namespace

// _test_executor(columns, window_kind, key, group_by, filter, aggregates, payloads): per key
// (in key order) {"<key column>": text, ..., "<item>": text}; then {"filtered": n} and one
// {"dead_letter": reason, "detail": ..., "offset": i} per record that does not fold.
STOATFLOW_FUNCTION(stoatflow__test_executor) {
    if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(6))
        throw Error(sqlstate::kInvalidParameterValue,
                    "columns, window_kind and payloads must not be NULL");
    const std::vector<core::ColumnDecl> decls =
        core::parse_column_list(text_to_string(PG_GETARG_DATUM(0)));
    DeclarationTexts t;
    t.columns_json = columns_json(decls);
    t.window_kind = core::window_kind_from_name(text_to_string(PG_GETARG_DATUM(1)));
    t.key = opt_arg(fcinfo, 2);
    t.group_by = opt_arg(fcinfo, 3);
    t.filter = opt_arg(fcinfo, 4);
    t.aggregates = opt_arg(fcinfo, 5);
    const std::vector<std::string> payloads = text_array_to_vector(PG_GETARG_DATUM(6));
    const Analysis an = analyze_declaration(t);
    const RowType type(decls, CurrentMemoryContext);
    AggregationExecutor ex(an, type, CurrentMemoryContext);

    Decoded dec = decode(type, payloads);
    std::vector<std::string>& dead = dec.dead;
    const std::vector<std::size_t>& offset_of = dec.offset_of;
    const std::vector<Datum>& values = dec.values;
    const std::vector<bool>& vnulls = dec.nulls;
    const std::vector<std::string>& bad = dec.bad;
    const std::size_t width = type.width();
    std::vector<Datum> row(width);
    std::unique_ptr<bool[]> row_nulls(new bool[width]);
    auto load = [&](std::size_t r) {
        for (std::size_t c = 0; c < width; ++c) {
            row[c] = values[r * width + c];
            row_nulls[c] = vnulls[r * width + c];
        }
    };

    // Pass 1: every record's outcome and key.
    const auto t0 = std::chrono::steady_clock::now();
    std::map<std::string, std::vector<std::size_t>> by_key;
    std::size_t filtered = 0;
    std::string key, detail;
    CallInputs inputs;
    for (std::size_t r = 0; r < offset_of.size(); ++r) {
        std::string d;
        if (!bad[r].empty()) {
            d = dead_json(format::DeadReason::BadValue);
            format::append_json_string(d, bad[r]);
        } else {
            load(r);
            try {
                switch (ex.evaluate(row.data(), row_nulls.get(), key, inputs, detail)) {
                case AggregationExecutor::Outcome::Fold: by_key[key].push_back(r); break;
                case AggregationExecutor::Outcome::Filtered: ++filtered; break;
                case AggregationExecutor::Outcome::NullKey:
                    d = dead_json(format::DeadReason::MissingKey);
                    format::append_json_string(d, detail);
                    break;
                }
            } catch (const PgError& e) {
                d = dead_json(format::DeadReason::ExpressionError);
                format::append_json_string(d, e.what());
            }
        }
        if (!d.empty()) dead.push_back(d + ", \"offset\": " + std::to_string(offset_of[r]) + "}");
    }

    const auto t1 = std::chrono::steady_clock::now();
    // Pass 2: per key, A = first half, B = second half, A2 = bytes of A read back, C = copy of
    // A2 merged with B (or folded with the second half), finalized from C's bytes.
    core::ExternalAggregates& aggs = ex.aggregates();
    auto fold = [&](core::ExternalState& s, const std::vector<std::size_t>& rs, std::size_t from,
                    std::size_t to) {
        for (std::size_t i = from; i < to; ++i) {
            load(rs[i]);
            if (ex.evaluate(row.data(), row_nulls.get(), key, inputs, detail) ==
                AggregationExecutor::Outcome::Fold)
                s.add(&inputs);
        }
    };
    const std::size_t nkeys = ex.key_columns().size(), nitems = ex.item_columns().size();
    std::vector<Datum> out(nkeys + nitems);
    std::unique_ptr<bool[]> out_nulls(new bool[nkeys + nitems]);
    std::vector<std::string> results;
    for (const auto& [k, rs] : by_key) {
        const std::size_t half = rs.size() / 2;
        auto a = core::ExternalState::create(aggs);
        auto b = core::ExternalState::create(aggs);
        fold(a, rs, 0, half);
        fold(b, rs, half, rs.size());
        std::string bytes;
        a.serialize(bytes);
        core::ExternalState a2(&aggs, aggs.deserialize(bytes.data(), bytes.size()));
        core::ExternalState c = a2.copy();
        if (aggs.can_merge())
            c.merge(b);
        else
            fold(c, rs, half, rs.size());
        a.reset();
        a2.reset();
        b.reset();
        bytes.clear();
        c.serialize(bytes);
        c.reset();
        ex.sink_values(k, bytes, out.data(), out_nulls.get());
        std::string j = "{";
        for (std::size_t i = 0; i < nkeys + nitems; ++i) {
            const ExecColumn& col = i < nkeys ? ex.key_columns()[i] : ex.item_columns()[i - nkeys];
            if (i > 0) j += ", ";
            format::append_json_string(j, col.name);
            j += ": ";
            if (out_nulls[i])
                j += "null";
            else
                format::append_json_string(j, output(col.type, out[i]));
        }
        results.push_back(j + "}");
    }
    const auto t2 = std::chrono::steady_clock::now();
    // Timings for a look with client_min_messages = debug1 (pass 2 evaluates every record
    // again and folds it, plus per key: bytes, copy, merge, finalization).
    const double ms1 = std::chrono::duration<double, std::milli>(t1 - t0).count();
    const double ms2 = std::chrono::duration<double, std::milli>(t2 - t1).count();
    const std::size_t nrec = offset_of.size();
    pg_call([&] {
        elog(DEBUG1, "_test_executor: %zu records, evaluate %.3f ms, evaluate and fold %.3f ms",
             nrec, ms1, ms2);
    });
    if (filtered > 0) results.push_back("{\"filtered\": " + std::to_string(filtered) + "}");
    for (std::string& d : dead) results.push_back(std::move(d));
    if (aggs.memory_bytes() != 0)
        throw Error(sqlstate::kInternalError, "memory_bytes is " +
                                                  std::to_string(aggs.memory_bytes()) +
                                                  " with every state destroyed");

    pg_call([&] { InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC); });
    auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    for (const std::string& r : results) {
        const char* s = r.c_str();
        pg_call([&] {
            Datum v = DirectFunctionCall1(jsonb_in, CStringGetDatum(s));
            bool isnull = false;
            tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &v, &isnull);
        });
    }
    return (Datum)0;
}

// _test_state_bytes(columns, aggregates, payloads): the payloads that fold, folded into one
// state (key: the topic), as serialize writes it (the format in pg_aggregates.hpp).
STOATFLOW_FUNCTION(stoatflow__test_state_bytes) {
    if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
        throw Error(sqlstate::kInvalidParameterValue, "arguments must not be NULL");
    Setup s(text_to_string(PG_GETARG_DATUM(0)), text_to_string(PG_GETARG_DATUM(1)));
    const Decoded dec = decode(s.type, text_array_to_vector(PG_GETARG_DATUM(2)));
    const std::size_t width = s.type.width();
    std::vector<Datum> row(width);
    std::unique_ptr<bool[]> nulls(new bool[width]);
    auto state = core::ExternalState::create(s.ex.aggregates());
    std::string key, detail;
    CallInputs inputs;
    for (std::size_t r = 0; r < dec.offset_of.size(); ++r) {
        if (!dec.bad[r].empty()) continue;
        for (std::size_t c = 0; c < width; ++c) {
            row[c] = dec.values[r * width + c];
            nulls[c] = dec.nulls[r * width + c];
        }
        if (s.ex.evaluate(row.data(), nulls.get(), key, inputs, detail) ==
            AggregationExecutor::Outcome::Fold)
            state.add(&inputs);
    }
    std::string bytes;
    state.serialize(bytes);
    return bytea_datum(bytes);
}

// _test_finalize(columns, aggregates, state): the items finalized from serialized bytes, as
// {"item": text}; bytes that do not read raise XX001 (or the state type's receive error).
STOATFLOW_FUNCTION(stoatflow__test_finalize) {
    if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
        throw Error(sqlstate::kInvalidParameterValue, "arguments must not be NULL");
    Setup s(text_to_string(PG_GETARG_DATUM(0)), text_to_string(PG_GETARG_DATUM(1)));
    bytea* b = PG_GETARG_BYTEA_PP(2);
    const std::string bytes(VARDATA_ANY(b), VARSIZE_ANY_EXHDR(b));
    const std::size_t nitems = s.ex.item_columns().size();
    std::vector<Datum> out(1 + nitems);
    std::unique_ptr<bool[]> nulls(new bool[1 + nitems]);
    s.ex.sink_values("t", bytes, out.data(), nulls.get());
    std::string j = "{";
    for (std::size_t i = 0; i < nitems; ++i) {
        const ExecColumn& col = s.ex.item_columns()[i];
        if (i > 0) j += ", ";
        format::append_json_string(j, col.name);
        j += ": ";
        if (nulls[1 + i])
            j += "null";
        else
            format::append_json_string(j, output(col.type, out[1 + i]));
    }
    j += "}";
    const char* cs = j.c_str();
    return pg_call([&] { return DirectFunctionCall1(jsonb_in, CStringGetDatum(cs)); });
}
