// The record path's JSON-paths lane (a source without `columns`): each record is decoded by its
// JSON field paths (format::JsonDecoder), judged (RecordJudge) and staged for the engines.
#pragma once
#include "stoatflow/core/no_postgres.hpp"

#include "stoatflow/flow/record_path.hpp"
#include "stoatflow/format/json_decoder.hpp"

namespace stoatflow::flow {

class JsonLane {
public:
    explicit JsonLane(const format::DecoderConfig& config) : decoder_(config) {}

    void process(RecordPath& path, core::TopicPartition tp, std::int64_t offset,
                 const char* payload, std::size_t len, const char* key, std::size_t key_len,
                 core::Millis kafka_ts, core::Millis now);

private:
    format::JsonDecoder decoder_;
};

}  // namespace stoatflow::flow
