// What owners' code did wrong in a source's aggregations: poisoned records, resting aggregations
// and their last errors (user_code_ledger.cpp). Pure C++:
// the worker keeps one per source across rebuilds of its pipeline.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>

#include "stoatflow/core/no_postgres.hpp"
#include "stoatflow/core/time.hpp"
#include "stoatflow/core/topic_partition.hpp"
#include "stoatflow/format/dead_reason.hpp"

namespace stoatflow::flow {

// An aggregation whose code ran past stoatflow.user_code_timeout rests this long (its records are
// its dead letters user_code_timeout meanwhile), doubling per timeout up to the maximum, so that
// code that loops on every record cannot stall its siblings.
constexpr std::int64_t kUserCodeRestFirstMs = 10000;
constexpr std::int64_t kUserCodeRestMaxMs = 300000;

// What owners' code did wrong in a source's aggregations (README "User code is a guest"), kept by
// the worker across rebuilds of its pipeline (a rebuild starts over from the committed state).
struct UserCodeLedger {
    struct Poison {
        format::DeadReason reason = format::DeadReason::None;
        std::string detail;
    };
    // A record whose fold raised an error or timed out in one aggregation (aggregation id,
    // partition, offset): on the replay after the rebuild it is that aggregation's dead letter.
    std::map<std::tuple<std::int32_t, core::TopicPartition, std::int64_t>, Poison> poisoned;
    // An aggregation whose code timed out rests (is not run; its records are its dead letters
    // user_code_timeout) until `until`, so that its siblings stay fresh.
    struct Stall {
        core::Millis until = 0;
        core::Millis rest = 0;  // the last rest; doubles per timeout
        std::string error;
    };
    std::map<std::int32_t, Stall> stalled;
    std::map<std::int32_t, std::string> last_error;  // per aggregation id, shown in stats
    bool applied = false;  // a poisoned record was passed: worth a commit soon

    const Stall* resting(std::int32_t aggregation_id, core::Millis now) const {
        const auto it = stalled.find(aggregation_id);
        return it != stalled.end() && now < it->second.until ? &it->second : nullptr;
    }
    void timed_out(std::int32_t aggregation_id, core::Millis now, const std::string& error);
    // Committed up to these offsets: poisons before them are history.
    void committed(const std::map<core::TopicPartition, std::int64_t>& next_offsets);
};

}  // namespace stoatflow::flow
