// The record path's executor lane (a source with aggregations PostgreSQL's executor runs, or
// whose key or event time is an expression): the consume thread only extracts records into raw
// rows; the main thread converts and evaluates them and hands each one back (RecordPath::exec_*,
// which forward here), in order.
#pragma once
#include "stoatflow/core/no_postgres.hpp"

#include "stoatflow/flow/record_path.hpp"
#include "stoatflow/format/row_decoder.hpp"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace stoatflow::flow {

class ExecLane {
public:
    explicit ExecLane(const RowPlan& plan);

    void extract(RecordPath& path, core::TopicPartition tp, std::int64_t offset,
                 const char* payload, std::size_t len, const char* key, std::size_t key_len,
                 core::Millis kafka_ts, core::Millis now, const format::KafkaHeader* headers,
                 std::size_t header_count);
    std::size_t waiting() const { return batch_.records.size(); }
    format::RowDecoder& decoder() { return *decoder_; }
    const ExecBatch& take_batch();

    // RecordPath's exec_* (record_path.hpp says what each does).
    void dead(RecordPath& path, const ExecRecord& r, DeadReason reason, const std::string& detail);
    void note(RecordPath& path, const ExecRecord& r, DeadReason reason, const std::string& detail);
    void skip(RecordPath& path, const ExecRecord& r);
    std::optional<core::Millis> admit(RecordPath& path, const ExecRecord& r, core::Millis time,
                                      const std::string* key, const core::Value* values,
                                      ExecFold* folds, const std::vector<format::BadValue>* bad);
    bool fast_usable(const RecordPath& path, const std::vector<format::BadValue>& bad) const;
    void bad_values(RecordPath& path, const ExecRecord& r, const std::vector<format::BadValue>& bad,
                    bool whole);
    void fold(RecordPath& path, std::size_t aggregation, const ExecFold& fold, core::Millis time,
              core::Millis watermark);

private:
    const RowPlan& plan_;
    std::unique_ptr<format::RowDecoder> decoder_;  // the source's format
    ExecBatch batch_, taken_;
};

}  // namespace stoatflow::flow
