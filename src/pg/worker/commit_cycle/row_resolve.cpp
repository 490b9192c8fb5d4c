// A source with columns in the worker: its row type, and the records the fast lane leaves to
// PostgreSQL, converted on the main thread as the source's owner and handed back to the path.
#include "stoatflow/core/error.hpp"
#include "stoatflow/core/event_time.hpp"

#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "stoatflow/pg/worker/commit_cycle.hpp"
#include "stoatflow/pg/border/spi.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "datatype/timestamp.h"
#include "utils/timestamp.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
}

namespace stoatflow::pg {
namespace {

std::string output_text(const RowColumn& c, Datum v) {
    const Oid typid = c.typid;
    const char* s = pg_call([&] {
        Oid out;
        bool varlena;
        getTypeOutputInfo(typid, &out, &varlena);
        return OidOutputFunctionCall(out, v);
    });
    return s;
}

// An aggregated column's value for the engine: integers exact (numeric up to 38 digits),
// everything else as double (as 0.1 sums JSON numbers); NaN and infinities cannot be summed,
// nor a numeric integer of more than 38 digits be summed exactly (README "Columns",
// Conversion: value_out_of_range, as 0.1's integer fields).
bool engine_value(const RowColumn& c, Datum v, core::Value& out, std::string& why) {
    switch (c.base) {
    case INT2OID: out = core::Value::of_int(DatumGetInt16(v)); return true;
    case INT4OID: out = core::Value::of_int(DatumGetInt32(v)); return true;
    case INT8OID: out = core::Value::of_int(DatumGetInt64(v)); return true;
    case FLOAT4OID:
    case FLOAT8OID: {
        const double d = c.base == FLOAT4OID ? DatumGetFloat4(v) : DatumGetFloat8(v);
        if (std::isnan(d) || std::isinf(d)) break;
        out = core::Value::of_double(d);
        return true;
    }
    case NUMERICOID: {
        const std::string t = output_text(c, v);
        if (t == "NaN" || t == "Infinity" || t == "-Infinity") break;
        const bool integer = t.find('.') == std::string::npos;
        const std::size_t digits = t.size() - (t[0] == '-' ? 1 : 0);
        if (integer && digits <= static_cast<std::size_t>(core::kMaxExactIntegerDigits)) {
            __int128 x = 0;
            for (std::size_t i = t[0] == '-' ? 1 : 0; i < t.size(); ++i) x = x * 10 + (t[i] - '0');
            out = core::Value::of_big(t[0] == '-' ? -x : x);
            return true;
        }
        if (integer) {
            why = "column \"" + c.name + "\" (" + c.type_name +
                  ") = " + (t.size() > 64 ? t.substr(0, 64) + "..." : t) + ", an integer of " +
                  std::to_string(digits) + " digits; at most " +
                  std::to_string(core::kMaxExactIntegerDigits) + " are summed exactly";
            return false;
        }
        const double d = std::strtod(t.c_str(), nullptr);
        if (std::isinf(d)) break;
        out = core::Value::of_double(d);
        return true;
    }
    default: why = "column \"" + c.name + "\" (" + c.type_name + ") is not a number"; return false;
    }
    why = "column \"" + c.name + "\" (" + c.type_name + ") = " + output_text(c, v) +
          ": NaN and infinities are not aggregated";
    return false;
}

}  // namespace

CommitCycle::Row::~Row() {
    if (cxt != nullptr) MemoryContextDelete(cxt);
}

std::unique_ptr<CommitCycle::Row> CommitCycle::make_row(const SourceDef& source) {
    if (!source.has_columns) return nullptr;
    auto row = std::make_unique<Row>();
    row->cxt = pg_call([] {
        return AllocSetContextCreate(TopMemoryContext, "stoatflow row type", ALLOCSET_SMALL_SIZES);
    });
    row->rt.emplace(source.columns, row->cxt);
    return row;
}

CommitCycle::~CommitCycle() = default;

// A converted row's key (when asked: fast-path aggregations key by it), event time and the
// values fast-path aggregates read; a reason (bad_value) when it cannot be a record. A value
// that converted but cannot be aggregated (value_out_of_range) is listed in rec.bad: a dead
// letter of the aggregations reading it only (README "Columns", Conversion).
void CommitCycle::decode_row(const Datum* values, const bool* nulls, bool want_key,
                             flow::SlowRecord& rec) const {
    const RowType& rt = row_->type();
    // (an expression instead of a column: the caller evaluates it)
    const int k = rt.index_of(key_column_), t = rt.index_of(time_column_);
    if (want_key && k >= 0 && !nulls[k]) rec.key = output_text(rt.column(k), values[k]);
    if (t >= 0 && !nulls[t]) {
        const RowColumn& c = rt.column(t);
        const Datum v = values[t];
        if (c.base == TIMESTAMPTZOID) {
            const TimestampTz ts = DatumGetTimestampTz(v);
            if (TIMESTAMP_NOT_FINITE(ts)) {  // README "Columns", Conversion
                rec.reason = flow::DeadReason::BadValue;
                rec.detail = flow::RecordJudge::not_finite("column \"" + c.name + "\" is " +
                                                           output_text(c, v));
                return;
            }
            rec.time = core::pg_timestamp_to_ms(ts);
        } else {
            rec.time = c.base == INT4OID ? DatumGetInt32(v) : DatumGetInt64(v);
        }
    }
    rec.values.assign(rt.width(), core::Value::missing());
    for (int c : value_columns_) {
        if (nulls[c]) continue;
        std::string why;
        if (!engine_value(rt.column(c), values[c], rec.values[c], why)) {
            rec.values[c] = core::Value::missing();
            rec.bad.push_back(
                {static_cast<std::size_t>(c), format::DecodeError::ValueOutOfRange, why});
        }
    }
}

void CommitCycle::resolve_blocked() {
    if (!row_ || !path_.blocked()) return;
    const RowType& rt = row_->type();
    flow::SlowRecord rec;
    const std::string failure = try_in_subtransaction([&] {
        run_as_owner(source_.owner, [&] {
            std::vector<Datum> values;
            std::vector<bool> nulls;
            std::vector<std::string> bad;
            rt.convert(path_.blocked_row(), values, nulls, bad);
            if (!bad[0].empty()) {
                rec.reason = flow::DeadReason::BadValue;
                rec.detail = bad[0];
                return;
            }
            std::unique_ptr<bool[]> isnull(new bool[rt.width()]);
            for (std::size_t c = 0; c < rt.width(); ++c) isnull[c] = nulls[c];
            decode_row(values.data(), isnull.get(), true, rec);
        });
    });
    if (!failure.empty()) {
        rec = flow::SlowRecord{};
        rec.reason = flow::DeadReason::BadValue;
        rec.detail = failure;
    }
    path_.resume(rec);
}

}  // namespace stoatflow::pg
