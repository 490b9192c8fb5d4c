// A thin librdkafka consumer for a source's topics: explicit partition assignment at stored
// offsets (no group rebalance, no auto-commit), batch polling, watermark queries, and
// the last broker error, so the worker can report it. Partitions are named by
// core::TopicPartition, the topic by its ordinal in the list given to assign(). No PostgreSQL.
#pragma once
#include "stoatflow/core/no_postgres.hpp"

#include "stoatflow/core/error.hpp"
#include "stoatflow/core/time.hpp"
#include "stoatflow/format/raw_row.hpp"
#include "stoatflow/core/topic_partition.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

struct rd_kafka_s;
struct rd_kafka_queue_s;
struct rd_kafka_message_s;

namespace stoatflow::kafka {

// SQLSTATE for broker trouble: connection_failure.
inline constexpr const char* kKafkaSqlstate = sqlstate::kConnectionFailure;

inline constexpr std::int64_t kOffsetBeginning = -2;
inline constexpr std::int64_t kOffsetEnd = -1;

struct Message {
    std::int32_t topic_index;  // ordinal in the topics given to Consumer::assign()
    std::int32_t partition;
    std::int64_t offset;
    const char* payload;
    std::size_t len;
    const char* key;  // nullptr: no key
    std::size_t key_len;
    core::Millis timestamp;                        // kNoTime when the broker gave none
    const format::KafkaHeader* headers = nullptr;  // only when headers are wanted (want_headers)
    std::size_t header_count = 0;
};

struct PartitionStart {
    core::TopicPartition tp;
    std::int64_t offset;  // ≥ 0, or kOffsetBeginning / kOffsetEnd
};

class Consumer {
public:
    // options: librdkafka properties from the source's kafka_options. Throws Error.
    Consumer(const std::string& brokers,
             const std::vector<std::pair<std::string, std::string>>& options,
             const std::string& group_id);
    ~Consumer();
    Consumer(const Consumer&) = delete;
    Consumer& operator=(const Consumer&) = delete;

    // Partition ids of the topic. Throws Error when the topic is unknown or the broker
    // does not answer within timeout_ms.
    std::vector<std::int32_t> partitions(const std::string& topic, int timeout_ms);
    // Low and high watermark offsets of a partition. Throws Error.
    std::pair<std::int64_t, std::int64_t> watermarks(const std::string& topic,
                                                     std::int32_t partition, int timeout_ms);
    // The first offset of the partition whose timestamp is at or after ms (the log end if none).
    // Throws Error (librdkafka's mock cluster cannot look offsets up by time).
    std::int64_t offset_for_time(const std::string& topic, std::int32_t partition, std::int64_t ms,
                                 int timeout_ms);
    // topics: the source's topics in their order (a TopicPartition's topic indexes them);
    // starts: every partition to read, of any of them.
    void assign(const std::vector<std::string>& topics, const std::vector<PartitionStart>& starts);
    // High watermark as last reported by fetch responses (no network call); -1 if unknown.
    std::int64_t cached_high(core::TopicPartition tp);

    // Waits up to timeout_ms for messages and hands out at most max of them. Partition
    // ends call on_eof(partition, end offset). Returns the number of messages handed out.
    // `ready` (when given) is asked about every message of a batch before any is handed out: when
    // it says no for one (its schema is still being fetched: format::RowDecoder::ready), nothing
    // of the batch is handed out; the batch is held, and the next poll asks about it again
    // (waiting up to kHeldBatchWaitMs of timeout_ms first) before it fetches anything new.
    std::size_t poll(std::size_t max, int timeout_ms,
                     const std::function<void(const Message&)>& on_message,
                     const std::function<void(core::TopicPartition, std::int64_t)>& on_eof,
                     const std::function<bool(const Message&)>& ready = nullptr);
    // A batch is held (ready said no): nothing is handed out until it is ready.
    bool holding() const { return !held_.empty(); }

    // Hand out each message's headers too (a source with columns: kafka_headers).
    void want_headers(bool on) { want_headers_ = on; }

    // Partitions whose fetch position is no longer in the log (retention deleted the records
    // there, or the log is shorter than the position), since the last call. librdkafka stops
    // fetching them (auto.offset.reset=error: never a silent jump); restart() resumes.
    std::vector<core::TopicPartition> take_out_of_range();
    void restart(core::TopicPartition tp, std::int64_t offset);
    // A backfill reads a partition only up to a bound (README "Backfill and start_from"):
    // park() stops fetching it (what was prefetched is dropped), unpark() fetches it again from
    // offset.
    void park(core::TopicPartition tp);
    void unpark(core::TopicPartition tp, std::int64_t offset);
    // Consumption aligned by event time (README "Aligned consumption"): the partitions in
    // `paused` (each with the next offset the worker wants from it) stop fetching, what they
    // had prefetched is dropped; the others paused before fetch again from the offset they were
    // paused at. Like park/unpark, by explicit positions: nothing is skipped or read twice
    // (librdkafka's own pause/resume can skip records before 2.1). Returns whether anything
    // changed. Throws Error.
    bool set_paused(const std::map<core::TopicPartition, std::int64_t>& paused);
    const std::map<core::TopicPartition, std::int64_t>& paused() const { return paused_; }

    // Offsets for lag tools (asynchronous, best effort: PostgreSQL holds the truth).
    void commit_offsets(const std::map<core::TopicPartition, std::int64_t>& next);

    // The newest broker/transport error since the last call ("" if none).
    std::string take_error();

    // Deletes consumer group `group` (and with it the offsets committed for it) through the
    // admin API, waiting at most timeout_ms. Throws Error with the broker's reason (the group
    // unknown, not allowed, the broker down or too old for DeleteGroups).
    void delete_group(const std::string& group, int timeout_ms);

private:
    void note_error(const std::string& e);
    // The ordinal of a topic of the assignment, -1 if it is none of them.
    std::int32_t topic_index(const char* name);
    const std::string& topic_name(core::TopicPartition tp) const;
    friend struct ConsumerCallbacks;

    rd_kafka_s* rk_ = nullptr;
    rd_kafka_queue_s* queue_ = nullptr;
    std::mutex mu_;
    std::string error_;
    std::vector<core::TopicPartition> out_of_range_;
    std::vector<std::string> topics_;
    std::int32_t last_topic_ = 0;  // the topic of the previous message: most likely the next's
    bool want_headers_ = false;
    std::vector<format::KafkaHeader> headers_;             // the current message's
    std::vector<rd_kafka_message_s*> held_;                // a batch not ready yet (poll's `ready`)
    std::map<core::TopicPartition, std::int64_t> paused_;  // set_paused: → its position
    // Held messages of one partition are dropped: it is read again from a new position.
    void drop_held(core::TopicPartition tp);
};

// The consumer group a source's worker commits its (advisory) offsets under: one per database
// and source, so two databases of one server never share one.
std::string source_group_id(const std::string& database, const std::string& source);

// One-shot: deletes consumer group `group` on the source's brokers, within about timeout_ms.
// Returns "" when the group is gone, else why not. Run in a child process: librdkafka 2.0's admin
// requests can fail an assertion (abort) when the broker lacks DeleteGroups or a request times
// out, and an abort must not take the calling process (a PostgreSQL backend) with it.
std::string delete_consumer_group(const std::string& brokers,
                                  const std::vector<std::pair<std::string, std::string>>& options,
                                  const std::string& group, int timeout_ms);

// One-shot: high watermark per partition of each topic (for wait_caught_up); the topic of a
// TopicPartition is its ordinal in `topics`.
std::map<core::TopicPartition, std::int64_t>
high_watermarks(const std::string& brokers,
                const std::vector<std::pair<std::string, std::string>>& options,
                const std::vector<std::string>& topics, int timeout_ms);

}  // namespace stoatflow::kafka
