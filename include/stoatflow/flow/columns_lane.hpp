// The record path's columns lane (a source with `columns`, no executor): a record is extracted
// into a raw row, its key, event time and aggregated values taken through the fast lane
// (format::fast_convert). A value the fast lane leaves to PostgreSQL blocks the lane until the
// main thread has converted it (RecordPath::resume), so every record still goes through in order.
#pragma once
#include "stoatflow/core/no_postgres.hpp"

#include "stoatflow/flow/record_path.hpp"
#include "stoatflow/format/fast_convert.hpp"
#include "stoatflow/format/raw_row.hpp"
#include "stoatflow/format/row_decoder.hpp"

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace stoatflow::flow {

class ColumnsLane {
public:
    explicit ColumnsLane(const RowPlan& plan);

    void process(RecordPath& path, core::TopicPartition tp, std::int64_t offset,
                 const char* payload, std::size_t len, const char* key, std::size_t key_len,
                 core::Millis kafka_ts, core::Millis now, const format::KafkaHeader* headers,
                 std::size_t header_count);
    bool blocked() const { return blocked_; }
    const format::RawRows& blocked_row() const { return rows_; }
    void resume(RecordPath& path, const SlowRecord& record);

    format::RowDecoder& decoder() { return *decoder_; }

private:
    enum class Verdict { Staged, Dead, Ask };
    void process_row(RecordPath& path, core::TopicPartition tp, std::int64_t offset,
                     const char* payload, std::size_t len, const char* key, std::size_t key_len,
                     core::Millis kafka_ts, core::Millis now, const format::KafkaHeader* headers,
                     std::size_t header_count);
    Verdict fast_record(const RecordPath& path, format::Decoded& d, core::Millis now,
                        DeadReason& reason, std::string& detail);

    const RowPlan& plan_;
    std::unique_ptr<format::RowDecoder> decoder_;  // the source's format
    format::RawRows rows_;                         // the record being read (one row)
    // the declared columns of that record converted once (fast_record): checked, then read
    std::vector<format::FastValue> converted_;
    bool blocked_ = false;
    struct Waiting {
        core::TopicPartition tp;
        std::int64_t offset = 0;
        std::string payload;
        bool has_key = false;
        std::string key;
        core::Millis kafka_ts = core::kNoTime, now = 0;
        std::vector<std::pair<std::string, std::optional<std::string>>> headers;
    };
    Waiting blocked_record_;       // partition, offset, payload and clock of the blocked record
    std::deque<Waiting> waiting_;  // records consumed after it
};

}  // namespace stoatflow::flow
