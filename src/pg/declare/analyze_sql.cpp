// stoatflow._analyze(): the declaration analysis as rows, for the tests and for the
// declarations that will store its results (internal: not executable by PUBLIC).
#include "stoatflow/core/error.hpp"
#include "stoatflow/core/window_spec.hpp"

#include <optional>
#include <string>

#include "stoatflow/pg/declare/analyze.hpp"
#include "stoatflow/pg/border/spi.hpp"

extern "C" {
#include "access/htup_details.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/tuplestore.h"
}

using namespace stoatflow;
using namespace stoatflow::pg;

namespace {

std::string json_quote(const std::string& s) {
    std::string out = "\"";
    for (const char ch : s) {
        const unsigned char c = static_cast<unsigned char>(ch);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += ch;
        } else if (c < 0x20) {
            static const char hex[] = "0123456789abcdef";
            out += "\\u00";
            out += hex[c >> 4];
            out += hex[c & 15];
        } else {
            out += ch;
        }
    }
    return out + "\"";
}

std::string proc_name(Oid oid) {
    if (!OidIsValid(oid)) return "null";
    const char* name = pg_call([&] { return format_procedure(oid); });
    return json_quote(name);
}

std::string call_detail(const AggregateCall& c) {
    const char* transtype = pg_call([&] { return format_type_be(c.transtype); });
    return "{\"transfn\": " + proc_name(c.transfn) + ", \"finalfn\": " + proc_name(c.finalfn) +
           ", \"combinefn\": " + proc_name(c.combinefn) +
           ", \"serialfn\": " + proc_name(c.serialfn) +
           ", \"deserialfn\": " + proc_name(c.deserialfn) +
           ", \"transtype\": " + json_quote(transtype) +
           ", \"initval\": " + (c.initval ? json_quote(*c.initval) : "null") +
           ", \"finalfn_extra\": " + (c.finalfn_extra ? "true" : "false") +
           ", \"finalfn_modify\": " + json_quote(std::string(1, c.finalfn_modify)) +
           ", \"transfn_strict\": " + (c.transfn_strict ? "true" : "false") + "}";
}

std::optional<std::string> opt_text(FunctionCallInfo fcinfo, int i) {
    if (PG_ARGISNULL(i)) return std::nullopt;
    return text_to_string(PG_GETARG_DATUM(i));
}

// The first seven arguments of _analyze and _stored_texts: (columns, window_kind, key,
// event_time, group_by, filter, aggregates).
DeclarationTexts declaration_texts(FunctionCallInfo fcinfo) {
    if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
        throw Error(sqlstate::kInvalidParameterValue, "columns and window_kind must not be NULL");
    DeclarationTexts t;
    const Datum columns = PG_GETARG_DATUM(0);
    t.columns_json =
        pg_call([&] { return DatumGetCString(DirectFunctionCall1(jsonb_out, columns)); });
    t.window_kind = core::window_kind_from_name(text_to_string(PG_GETARG_DATUM(1)));
    t.key = opt_text(fcinfo, 2);
    t.event_time = opt_text(fcinfo, 3);
    t.group_by = opt_text(fcinfo, 4);
    t.filter = opt_text(fcinfo, 5);
    t.aggregates = opt_text(fcinfo, 6);
    return t;
}

}  // namespace

// _analyze(columns, window_kind, key, event_time, group_by, filter, aggregates) → SETOF
// (role, ordinal, name, type, detail, tree): one row per analyzed expression ('key',
// 'event_time', 'filter', 'group_by', 'aggregate') and per aggregate call ('call', its item's
// ordinal, the aggregate, its state type, what runs it).
STOATFLOW_FUNCTION(stoatflow__analyze) {
    DeclarationTexts t = declaration_texts(fcinfo);
    const Analysis an = analyze_declaration(t);

    pg_call([&] { InitMaterializedSRF(fcinfo, 0); });
    auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    auto put = [&](const char* role, int ordinal, const std::string* name, const std::string& type,
                   const std::string* detail, const std::string* tree) {
        pg_call([&] {
            Datum values[6] = {
                CStringGetTextDatum(role),
                Int32GetDatum(ordinal),
                name ? CStringGetTextDatum(name->c_str()) : (Datum)0,
                CStringGetTextDatum(type.c_str()),
                detail ? DirectFunctionCall1(jsonb_in, CStringGetDatum(detail->c_str())) : (Datum)0,
                tree ? CStringGetTextDatum(tree->c_str()) : (Datum)0};
            bool nulls[6] = {false,          false, name == nullptr, false, detail == nullptr,
                             tree == nullptr};
            tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
        });
    };
    if (an.key) put("key", 1, nullptr, an.key->type_name, nullptr, &an.key->tree);
    if (an.event_time) {
        const std::string unit =
            an.event_time_epoch_ms ? "{\"unit\": \"epoch_ms\"}" : "{\"unit\": \"timestamptz\"}";
        put("event_time", 1, nullptr, an.event_time->type_name, &unit, &an.event_time->tree);
    }
    if (an.filter) put("filter", 1, nullptr, an.filter->type_name, nullptr, &an.filter->tree);
    for (std::size_t i = 0; i < an.group_by.size(); ++i)
        put("group_by", static_cast<int>(i + 1), &an.group_by[i].name, an.group_by[i].type_name,
            nullptr, &an.group_by[i].tree);
    for (std::size_t i = 0; i < an.aggregates.size(); ++i) {
        const AnalyzedExpr& e = an.aggregates[i];
        put("aggregate", static_cast<int>(i + 1), &e.name, e.type_name, nullptr, &e.tree);
        for (const AggregateCall& c : e.calls) {
            const char* transtype = pg_call([&] { return format_type_be(c.transtype); });
            const std::string detail = call_detail(c);
            put("call", static_cast<int>(i + 1), &c.aggregate, transtype, &detail, nullptr);
        }
    }
    return (Datum)0;
}
