// stoatflow._process_messages: the synchronous testing entry behind process_records().
// Runs messages through a source's pipeline exactly as the worker would — restore from
// the committed state, decode, window, commit — but in the caller's transaction.
#include "stoatflow/core/error.hpp"

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "stoatflow/pg/catalog/catalog.hpp"
#include "stoatflow/pg/worker/commit_cycle.hpp"
#include "stoatflow/pg/border/spi.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
}

using namespace stoatflow;
using namespace stoatflow::pg;

namespace {
template <class T, class Get>
std::vector<std::optional<T>> array_values(Datum array, Oid elem, int16 len, bool byval, char align,
                                           Get get) {
    Datum* elems;
    bool* nulls;
    int n;
    pg_call([&] {
        deconstruct_array(DatumGetArrayTypeP(array), elem, len, byval, align, &elems, &nulls, &n);
    });
    std::vector<std::optional<T>> out;
    for (int i = 0; i < n; ++i)
        out.push_back(nulls[i] ? std::nullopt : std::optional<T>(get(elems[i])));
    return out;
}
}  // namespace

// _process_messages(source, topics text[], partitions int[], keys text[], timestamps bigint[],
//   payloads text[]) → (records bigint, dead_letters bigint, watermark timestamptz).
// A NULL topic is the source's first.
STOATFLOW_FUNCTION(stoatflow__process_messages) {
    for (int i = 0; i < 6; ++i)
        if (PG_ARGISNULL(i))
            throw Error(sqlstate::kInvalidParameterValue, "arguments must not be NULL");
    const std::string source = text_to_string(PG_GETARG_DATUM(0));
    auto topics = array_values<std::string>(PG_GETARG_DATUM(1), TEXTOID, -1, false, TYPALIGN_INT,
                                            [](Datum d) { return text_to_string(d); });
    auto parts = array_values<std::int32_t>(PG_GETARG_DATUM(2), INT4OID, 4, true, TYPALIGN_INT,
                                            [](Datum d) { return DatumGetInt32(d); });
    auto keys = array_values<std::string>(PG_GETARG_DATUM(3), TEXTOID, -1, false, TYPALIGN_INT,
                                          [](Datum d) { return text_to_string(d); });
    auto stamps = array_values<std::int64_t>(PG_GETARG_DATUM(4), INT8OID, 8, true, TYPALIGN_DOUBLE,
                                             [](Datum d) { return DatumGetInt64(d); });
    auto payloads = array_values<std::string>(PG_GETARG_DATUM(5), TEXTOID, -1, false, TYPALIGN_INT,
                                              [](Datum d) { return text_to_string(d); });
    if (parts.size() != keys.size() || parts.size() != stamps.size() ||
        parts.size() != payloads.size() || parts.size() != topics.size())
        throw Error(sqlstate::kInvalidParameterValue, "message arrays differ in length");

    SpiSession spi;
    SourceDef def = load_source(source);
    std::vector<std::int32_t> topic_of;
    for (const auto& t : topics) {
        const std::int32_t i = t ? topic_index(def, *t) : 0;
        if (i < 0)
            throw Error(sqlstate::kInvalidParameterValue,
                        "\"" + *t + "\" is not a topic of source \"" + source + "\"",
                        "Its topics are: " + def.topic + ".");
        topic_of.push_back(i);
    }
    const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    std::int64_t dead = 0;
    core::Millis w = core::kNoTime;
    // As the worker does when an aggregation's fold fails (AggregationRebuild): everything of
    // this call is rolled back and run again from the committed state, the failing record now
    // that aggregation's dead letter. Each record can fail once per aggregation.
    flow::UserCodeLedger ledger;
    // The records come from the caller, not from a topic: there is no history to backfill
    // (README "Backfill and start_from"), every aggregation of the source takes them from here on.
    spi_exec("DELETE FROM stoatflow.backfill WHERE source_id OPERATOR(pg_catalog.=) $1",
             {arg_int32(def.id)});
    const std::vector<AggregationDef> aggregations = load_aggregations(def.id);
    for (std::size_t attempt = 0;; ++attempt) {
        try {
            in_subtransaction("", [&] {
                CommitCycle pipeline(def, aggregations, &ledger);
                pipeline.restore();
                // Offsets as a broker would give them: after the committed position, one per
                // record (the path's own position moves only as records are evaluated, in
                // executor mode later).
                std::map<core::TopicPartition, std::int64_t> next = pipeline.path().next_offsets();
                for (std::size_t i = 0; i < parts.size(); ++i) {
                    const std::int32_t p = parts[i].value_or(0);
                    if (p < 0)
                        throw Error(sqlstate::kInvalidParameterValue,
                                    "partition must not be negative");
                    const core::TopicPartition tp{topic_of[i], p};
                    const std::int64_t offset = next[tp]++;
                    const std::string payload = payloads[i].value_or("");
                    const std::string* key = keys[i] ? &*keys[i] : nullptr;
                    pipeline.path().process(tp.topic, p, offset, payload.data(), payload.size(),
                                            key ? key->data() : nullptr, key ? key->size() : 0,
                                            stamps[i].value_or(core::kNoTime), now);
                    while (pipeline.path().blocked()) pipeline.resolve_blocked();
                    // Executor mode: evaluated a batch at a time, as the worker does.
                    if (pipeline.path().exec_waiting() >= flow::kStageRecords)
                        pipeline.run_executor();
                }
                pipeline.run_executor();
                dead = pipeline.path().dead_letters_since_commit();
                w = pipeline.path().watermark().current();
                pipeline.commit(now);
            });
            break;
        } catch (const AggregationRebuild&) {
            if (attempt > parts.size() * (aggregations.size() + 1)) throw;
        }
    }
    spi.finish();

    TupleDesc desc;
    if (pg_call([&] { return get_call_result_type(fcinfo, nullptr, &desc); }) != TYPEFUNC_COMPOSITE)
        throw Error(sqlstate::kInternalError, "_process_messages must return a record");
    Datum values[3] = {Int64GetDatum(static_cast<std::int64_t>(parts.size())), Int64GetDatum(dead),
                       w == core::kNoTime ? (Datum)0 : millis_to_timestamptz(w)};
    bool nulls[3] = {false, false, w == core::kNoTime};
    return pg_call([&] {
        desc = BlessTupleDesc(desc);
        return HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
    });
}
