// The JSON-paths lane (json_lane.hpp). Pure C++ (src/README.md).
#include "stoatflow/flow/json_lane.hpp"

#include <string>

namespace stoatflow::flow {

void JsonLane::process(RecordPath& p, core::TopicPartition tp, std::int64_t offset,
                       const char* payload, std::size_t len, const char* key, std::size_t key_len,
                       core::Millis kafka_ts, core::Millis now) {
    ++p.records_since_commit_;
    p.next_offsets_[tp] = offset + 1;
    RecordPath::Staged& st = p.next_staged();
    DeadReason err = decoder_.decode(payload, len, key, key_len, kafka_ts, st.record);
    std::string detail;
    err = p.judge_.after_decode(err, st.record, now, detail);
    if (err != DeadReason::None && detail.empty()) detail = decoder_.detail();
    if (err != DeadReason::None) {
        p.dead(RecordJudge::dead_letter(tp, offset, err, detail, payload, len));
        return;
    }
    st.skipping = false;
    if (!st.record.bad.empty() && !p.judge_values(tp, offset, payload, len, st)) return;
    p.stage(tp, now);
}

}  // namespace stoatflow::flow
