// What owners' code did wrong in a source's aggregations (user_code_ledger.hpp).
#include "stoatflow/flow/user_code_ledger.hpp"

#include <algorithm>

namespace stoatflow::flow {

namespace {
core::Millis rest_for(core::Millis previous) {
    return previous <= 0 ? kUserCodeRestFirstMs : std::min(previous * 2, kUserCodeRestMaxMs);
}
}  // namespace

void UserCodeLedger::timed_out(std::int32_t aggregation_id, core::Millis now,
                               const std::string& error) {
    Stall& st = stalled[aggregation_id];
    st.rest = rest_for(st.rest);
    st.until = now + st.rest;
    st.error = error;
    last_error[aggregation_id] = error;
}

void UserCodeLedger::committed(const std::map<core::TopicPartition, std::int64_t>& next_offsets) {
    for (auto it = poisoned.begin(); it != poisoned.end();) {
        const auto n = next_offsets.find(std::get<1>(it->first));
        if (n != next_offsets.end() && std::get<2>(it->first) < n->second)
            it = poisoned.erase(it);
        else
            ++it;
    }
}

}  // namespace stoatflow::flow
