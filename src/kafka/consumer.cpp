// librdkafka consumer for a source's topics with explicit assignment and batch polls.
#include "stoatflow/kafka/consumer.hpp"
#include "stoatflow/kafka/limits.hpp"
#include "stoatflow/kafka/options.hpp"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <memory>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace stoatflow::kafka {

namespace {
[[noreturn]] void fail(const std::string& msg) { throw Error(kKafkaSqlstate, msg); }
}  // namespace

struct ConsumerCallbacks {
    static void on_error(rd_kafka_t*, int err, const char* reason, void* opaque) {
        auto* c = static_cast<Consumer*>(opaque);
        c->note_error(std::string(rd_kafka_err2name(static_cast<rd_kafka_resp_err_t>(err))) + ": " +
                      (reason ? reason : ""));
    }
    // librdkafka would log to stderr; keep only errors, as the last error.
    static void on_log(const rd_kafka_t* rk, int level, const char*, const char* buf) {
        if (level <= 3) {
            auto* c = static_cast<Consumer*>(rd_kafka_opaque(rk));
            if (c) c->note_error(buf ? buf : "");
        }
    }
};

Consumer::Consumer(const std::string& brokers,
                   const std::vector<std::pair<std::string, std::string>>& options,
                   const std::string& group_id) {
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    char err[512];
    auto set = [&](const std::string& k, const std::string& v) {
        if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
            rd_kafka_conf_destroy(conf);
            fail("kafka option \"" + k + "\" rejected: " + err);
        }
    };
    // The rules (defaults, what is forced, what would load code) are options.cpp's.
    for (const auto& [k, v] : consumer_defaults()) set(k, v);
    // Declarations refuse these already; a catalog written otherwise must not load code either.
    for (const auto& [k, v] : options)
        if (classify_option(k) == OptionKind::RunsCode) {
            rd_kafka_conf_destroy(conf);
            throw Error(sqlstate::kInsufficientPrivilege,
                        "kafka option \"" + k + "\" is not allowed");
        }
    for (const auto& [k, v] : options) set(k, v);
    set("bootstrap.servers", brokers);
    set("group.id", group_id);
    for (const auto& m : managed_options())
        if (m.value) set(m.name, m.value);
    rd_kafka_conf_set_error_cb(conf, &ConsumerCallbacks::on_error);
    rd_kafka_conf_set_log_cb(conf, &ConsumerCallbacks::on_log);
    rd_kafka_conf_set_opaque(conf, this);
    rk_ = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (!rk_) {
        rd_kafka_conf_destroy(conf);
        fail(std::string("cannot create Kafka consumer: ") + err);
    }
    rd_kafka_poll_set_consumer(rk_);
    queue_ = rd_kafka_queue_get_consumer(rk_);
}

Consumer::~Consumer() {
    for (rd_kafka_message_t* m : held_) rd_kafka_message_destroy(m);
    if (queue_) rd_kafka_queue_destroy(queue_);
    if (rk_) {
        // No group membership to leave (assign only); close is quick.
        rd_kafka_consumer_close(rk_);
        rd_kafka_destroy(rk_);
    }
}

void Consumer::note_error(const std::string& e) {
    std::lock_guard<std::mutex> lock(mu_);
    error_ = e;
}

std::string Consumer::take_error() {
    std::lock_guard<std::mutex> lock(mu_);
    std::string e;
    e.swap(error_);
    return e;
}

std::vector<std::int32_t> Consumer::partitions(const std::string& topic, int timeout_ms) {
    rd_kafka_topic_t* t = rd_kafka_topic_new(rk_, topic.c_str(), nullptr);
    const rd_kafka_metadata_t* md = nullptr;
    const rd_kafka_resp_err_t e = rd_kafka_metadata(rk_, 0, t, &md, timeout_ms);
    rd_kafka_topic_destroy(t);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
        fail("cannot read metadata of topic \"" + topic + "\": " + rd_kafka_err2str(e));
    std::unique_ptr<const rd_kafka_metadata_t, void (*)(const rd_kafka_metadata_t*)> guard(
        md, rd_kafka_metadata_destroy);
    if (md->topic_cnt != 1) fail("topic \"" + topic + "\" not found");
    const auto& tm = md->topics[0];
    if (tm.err != RD_KAFKA_RESP_ERR_NO_ERROR)
        fail("topic \"" + topic + "\": " + rd_kafka_err2str(tm.err));
    std::vector<std::int32_t> out;
    for (int i = 0; i < tm.partition_cnt; ++i) out.push_back(tm.partitions[i].id);
    return out;
}

std::pair<std::int64_t, std::int64_t> Consumer::watermarks(const std::string& topic,
                                                           std::int32_t partition, int timeout_ms) {
    int64_t lo = 0, hi = 0;
    const auto e =
        rd_kafka_query_watermark_offsets(rk_, topic.c_str(), partition, &lo, &hi, timeout_ms);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
        fail("cannot read offsets of " + topic + "[" + std::to_string(partition) +
             "]: " + rd_kafka_err2str(e));
    return {lo, hi};
}

std::int64_t Consumer::offset_for_time(const std::string& topic, std::int32_t partition,
                                       std::int64_t ms, int timeout_ms) {
    rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(list, topic.c_str(), partition)->offset = ms;
    const auto e = rd_kafka_offsets_for_times(rk_, list, timeout_ms);
    const rd_kafka_topic_partition_t& r = list->elems[0];
    const rd_kafka_resp_err_t pe = r.err;
    const std::int64_t offset = r.offset;
    rd_kafka_topic_partition_list_destroy(list);
    const rd_kafka_resp_err_t err = e != RD_KAFKA_RESP_ERR_NO_ERROR ? e : pe;
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
        fail("cannot look up the offset at time " + std::to_string(ms) + " of " + topic + "[" +
             std::to_string(partition) + "]: " + rd_kafka_err2str(err));
    if (offset < 0) return watermarks(topic, partition, timeout_ms).second;  // none at or after
    return offset;
}

std::int32_t Consumer::topic_index(const char* name) {
    if (name == nullptr) return -1;
    const auto n = static_cast<std::int32_t>(topics_.size());
    if (last_topic_ < n && topics_[static_cast<std::size_t>(last_topic_)] == name)
        return last_topic_;
    for (std::int32_t i = 0; i < n; ++i)
        if (topics_[static_cast<std::size_t>(i)] == name) return last_topic_ = i;
    return -1;
}

const std::string& Consumer::topic_name(core::TopicPartition tp) const {
    if (tp.topic < 0 || static_cast<std::size_t>(tp.topic) >= topics_.size())
        throw Error(sqlstate::kInternalError,
                    "topic index " + std::to_string(tp.topic) + " is not assigned");
    return topics_[static_cast<std::size_t>(tp.topic)];
}

void Consumer::assign(const std::vector<std::string>& topics,
                      const std::vector<PartitionStart>& starts) {
    topics_ = topics;
    last_topic_ = 0;
    rd_kafka_topic_partition_list_t* list =
        rd_kafka_topic_partition_list_new(static_cast<int>(starts.size()));
    for (const auto& s : starts)
        rd_kafka_topic_partition_list_add(list, topic_name(s.tp).c_str(), s.tp.partition)->offset =
            s.offset == kOffsetBeginning ? RD_KAFKA_OFFSET_BEGINNING
            : s.offset == kOffsetEnd     ? RD_KAFKA_OFFSET_END
                                         : s.offset;
    const auto e = rd_kafka_assign(rk_, list);
    rd_kafka_topic_partition_list_destroy(list);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
        fail(std::string("cannot assign partitions: ") + rd_kafka_err2str(e));
}

std::int64_t Consumer::cached_high(core::TopicPartition tp) {
    int64_t lo = -1, hi = -1;
    if (rd_kafka_get_watermark_offsets(rk_, topic_name(tp).c_str(), tp.partition, &lo, &hi) !=
        RD_KAFKA_RESP_ERR_NO_ERROR)
        return -1;
    return hi;
}

std::size_t Consumer::poll(std::size_t max, int timeout_ms,
                           const std::function<void(const Message&)>& on_message,
                           const std::function<void(core::TopicPartition, std::int64_t)>& on_eof,
                           const std::function<bool(const Message&)>& ready) {
    std::vector<rd_kafka_message_t*> batch;
    if (!held_.empty()) {
        batch.swap(held_);
    } else {
        batch.resize(max);
        const ssize_t got = rd_kafka_consume_batch_queue(queue_, timeout_ms, batch.data(), max);
        if (got < 0) {
            note_error(rd_kafka_err2str(rd_kafka_last_error()));
            return 0;
        }
        batch.resize(static_cast<std::size_t>(got));
    }
    const auto n = static_cast<ssize_t>(batch.size());
    if (ready) {
        for (rd_kafka_message_t* m : batch) {
            if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) continue;
            const Message probe{-1,
                                m->partition,
                                m->offset,
                                static_cast<const char*>(m->payload),
                                m->len,
                                static_cast<const char*>(m->key),
                                m->key ? m->key_len : 0,
                                core::kNoTime};
            if (!ready(probe)) {
                held_.swap(batch);
                std::this_thread::sleep_for(
                    std::chrono::milliseconds(std::min(timeout_ms, kHeldBatchWaitMs)));
                return 0;
            }
        }
    }
    std::size_t delivered = 0;
    // Destroy every message even if a callback throws.
    struct Release {
        std::vector<rd_kafka_message_t*>& b;
        ssize_t n;
        ~Release() {
            for (ssize_t i = 0; i < n; ++i) rd_kafka_message_destroy(b[i]);
        }
    } release{batch, n};
    for (ssize_t i = 0; i < n; ++i) {
        rd_kafka_message_t* m = batch[i];
        // Every message of a partition names its topic; one of no assigned topic (none is
        // expected) is an error, not a record of some other topic.
        const std::int32_t topic = m->rkt ? topic_index(rd_kafka_topic_name(m->rkt)) : -1;
        if (topic < 0 && m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
            note_error(std::string(rd_kafka_err2name(m->err)) + ": " + rd_kafka_message_errstr(m));
            continue;
        }
        if (topic < 0) {
            note_error("a message of a topic not assigned to this consumer: " +
                       std::string(m->rkt ? rd_kafka_topic_name(m->rkt) : "(none)"));
            continue;
        }
        const core::TopicPartition tp{topic, m->partition};
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            on_eof(tp, m->offset);
            continue;
        }
        if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
            if (m->err == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET ||
                m->err == RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE) {
                std::lock_guard<std::mutex> lock(mu_);
                out_of_range_.push_back(tp);
                continue;
            }
            note_error(std::string(rd_kafka_err2name(m->err)) + ": " + rd_kafka_message_errstr(m));
            continue;
        }
        rd_kafka_timestamp_type_t tstype;
        const int64_t ts = rd_kafka_message_timestamp(m, &tstype);
        headers_.clear();
        rd_kafka_headers_t* hdrs = nullptr;
        if (want_headers_ && rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR) {
            const char* name = nullptr;
            const void* value = nullptr;
            size_t size = 0;
            for (size_t h = 0; rd_kafka_header_get_all(hdrs, h, &name, &value, &size) ==
                               RD_KAFKA_RESP_ERR_NO_ERROR;
                 ++h)
                headers_.push_back({name, static_cast<const char*>(value), value ? size : 0});
        }
        on_message(Message{topic, m->partition, m->offset, static_cast<const char*>(m->payload),
                           m->len, static_cast<const char*>(m->key), m->key ? m->key_len : 0,
                           ts < 0 ? core::kNoTime : ts, headers_.data(), headers_.size()});
        ++delivered;
    }
    return delivered;
}

std::vector<core::TopicPartition> Consumer::take_out_of_range() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<core::TopicPartition> v;
    v.swap(out_of_range_);
    return v;
}

void Consumer::drop_held(core::TopicPartition tp) {
    std::vector<rd_kafka_message_t*> keep;
    for (rd_kafka_message_t* m : held_) {
        const std::int32_t topic = m->rkt ? topic_index(rd_kafka_topic_name(m->rkt)) : -1;
        if (topic == tp.topic && m->partition == tp.partition)
            rd_kafka_message_destroy(m);
        else
            keep.push_back(m);
    }
    held_.swap(keep);
}

void Consumer::restart(core::TopicPartition tp, std::int64_t offset) {
    drop_held(tp);
    // A paused partition is out of the assignment already: it is only put back.
    const bool was_paused = paused_.erase(tp) != 0;
    const std::string& topic = topic_name(tp);
    const std::int32_t partition = tp.partition;
    // A partition stopped by an offset error cannot be seeked (librdkafka: erroneous state);
    // taken out of the assignment and put back at the offset, it fetches again. Only this
    // partition: the others keep what they prefetched.
    auto one = [&](std::int64_t off) {
        rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(list, topic.c_str(), partition)->offset = off;
        return list;
    };
    for (bool add : {false, true}) {
        if (!add && was_paused) continue;
        rd_kafka_topic_partition_list_t* list = one(offset);
        rd_kafka_error_t* e =
            add ? rd_kafka_incremental_assign(rk_, list) : rd_kafka_incremental_unassign(rk_, list);
        rd_kafka_topic_partition_list_destroy(list);
        if (e) {
            const std::string msg = rd_kafka_error_string(e);
            rd_kafka_error_destroy(e);
            fail("cannot restart " + topic + "[" + std::to_string(partition) + "] at offset " +
                 std::to_string(offset) + ": " + msg);
        }
    }
}

void Consumer::park(core::TopicPartition tp) {
    drop_held(tp);
    rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(list, topic_name(tp).c_str(), tp.partition);
    rd_kafka_error_t* e = rd_kafka_incremental_unassign(rk_, list);
    rd_kafka_topic_partition_list_destroy(list);
    if (e) {
        const std::string msg = rd_kafka_error_string(e);
        rd_kafka_error_destroy(e);
        fail("cannot stop reading " + topic_name(tp) + "[" + std::to_string(tp.partition) +
             "]: " + msg);
    }
}

void Consumer::unpark(core::TopicPartition tp, std::int64_t offset) {
    drop_held(tp);
    rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(list, topic_name(tp).c_str(), tp.partition)->offset = offset;
    rd_kafka_error_t* e = rd_kafka_incremental_assign(rk_, list);
    rd_kafka_topic_partition_list_destroy(list);
    if (e) {
        const std::string msg = rd_kafka_error_string(e);
        rd_kafka_error_destroy(e);
        fail("cannot read " + topic_name(tp) + "[" + std::to_string(tp.partition) +
             "] again at offset " + std::to_string(offset) + ": " + msg);
    }
}

bool Consumer::set_paused(const std::map<core::TopicPartition, std::int64_t>& paused) {
    bool changed = false;
    for (auto it = paused_.begin(); it != paused_.end();) {
        if (paused.count(it->first)) {
            ++it;
            continue;
        }
        unpark(it->first, it->second);
        it = paused_.erase(it);
        changed = true;
    }
    for (const auto& [tp, offset] : paused)
        if (!paused_.count(tp)) {
            park(tp);
            paused_[tp] = offset;
            changed = true;
        }
    return changed;
}

void Consumer::commit_offsets(const std::map<core::TopicPartition, std::int64_t>& next) {
    if (next.empty()) return;
    rd_kafka_topic_partition_list_t* list =
        rd_kafka_topic_partition_list_new(static_cast<int>(next.size()));
    for (const auto& [tp, o] : next)
        rd_kafka_topic_partition_list_add(list, topic_name(tp).c_str(), tp.partition)->offset = o;
    rd_kafka_commit(rk_, list, 1 /* async */);
    rd_kafka_topic_partition_list_destroy(list);
}

std::string source_group_id(const std::string& database, const std::string& source) {
    return "stoatflow-" + database + "-" + source;
}

void Consumer::delete_group(const std::string& group, int timeout_ms) {
    char err[512];
    rd_kafka_AdminOptions_t* opts = rd_kafka_AdminOptions_new(rk_, RD_KAFKA_ADMIN_OP_DELETEGROUPS);
    if (rd_kafka_AdminOptions_set_request_timeout(opts, timeout_ms, err, sizeof err) !=
        RD_KAFKA_RESP_ERR_NO_ERROR) {
        rd_kafka_AdminOptions_destroy(opts);
        fail(std::string("cannot delete consumer group: ") + err);
    }
    rd_kafka_queue_t* q = rd_kafka_queue_new(rk_);
    rd_kafka_DeleteGroup_t* g = rd_kafka_DeleteGroup_new(group.c_str());
    rd_kafka_DeleteGroups(rk_, &g, 1, opts, q);
    rd_kafka_DeleteGroup_destroy(g);
    rd_kafka_AdminOptions_destroy(opts);
    // The request timeout bounds the answer; the margin covers the queue hand-over.
    rd_kafka_event_t* ev = rd_kafka_queue_poll(q, timeout_ms + 1000);
    std::string why;
    if (!ev) {
        why = "no answer within " + std::to_string(timeout_ms) + " ms";
    } else if (rd_kafka_event_error(ev) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        why = rd_kafka_event_error_string(ev);
    } else if (const rd_kafka_DeleteGroups_result_t* res = rd_kafka_event_DeleteGroups_result(ev)) {
        size_t n = 0;
        const rd_kafka_group_result_t** groups = rd_kafka_DeleteGroups_result_groups(res, &n);
        for (size_t i = 0; i < n; ++i)
            if (const rd_kafka_error_t* e = rd_kafka_group_result_error(groups[i]);
                e && rd_kafka_error_code(e) != RD_KAFKA_RESP_ERR_GROUP_ID_NOT_FOUND)  // none left
                why = std::string(rd_kafka_error_name(e)) + ": " + rd_kafka_error_string(e);
    } else {
        why = "unexpected answer from the broker";
    }
    if (ev) rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    if (!why.empty()) fail(why);
}

std::string delete_consumer_group(const std::string& brokers,
                                  const std::vector<std::pair<std::string, std::string>>& options,
                                  const std::string& group, int timeout_ms) {
    int fds[2];
    if (pipe(fds) != 0) return std::string("cannot create a pipe: ") + std::strerror(errno);
    const pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return std::string("cannot fork: ") + std::strerror(errno);
    }
    if (pid == 0) {
        // The child: librdkafka only, its answer down the pipe, then _exit (no exit handlers of
        // the parent run here). librdkafka's assertion text would land in the server log: the
        // parent reports the signal instead.
        close(fds[0]);
        const int null_fd = open("/dev/null", O_WRONLY);
        if (null_fd >= 0) dup2(null_fd, STDERR_FILENO);
        std::string why;
        try {
            Consumer admin(brokers, options, "stoatflow-admin");
            admin.delete_group(group, timeout_ms);
        } catch (const std::exception& e) {
            why = e.what();
            if (why.empty()) why = "failed";
        }
        std::size_t done = 0;
        while (done < why.size()) {
            const ssize_t n = write(fds[1], why.data() + done, why.size() - done);
            if (n <= 0) break;
            done += static_cast<std::size_t>(n);
        }
        _exit(0);
    }
    close(fds[1]);
    std::string why;
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms + 3000);
    bool timed_out = false;
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                              deadline - std::chrono::steady_clock::now())
                              .count();
        if (left <= 0) {
            timed_out = true;
            break;
        }
        pollfd p{fds[0], POLLIN, 0};
        const int r = poll(&p, 1, static_cast<int>(left));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            timed_out = r == 0;
            break;
        }
        char buf[512];
        const ssize_t n = read(fds[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;  // the child is done
        if (why.size() < 4096) why.append(buf, static_cast<std::size_t>(n));
    }
    close(fds[0]);
    if (timed_out) kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (timed_out) return "no answer within " + std::to_string(timeout_ms) + " ms";
    if (WIFSIGNALED(status))
        return "the Kafka client process ended by signal " + std::to_string(WTERMSIG(status)) +
               " (librdkafka 2.0 aborts when the broker does not support DeleteGroups)";
    return why;
}

std::map<core::TopicPartition, std::int64_t>
high_watermarks(const std::string& brokers,
                const std::vector<std::pair<std::string, std::string>>& options,
                const std::vector<std::string>& topics, int timeout_ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    auto left = [&] {
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            deadline - std::chrono::steady_clock::now())
                            .count();
        return static_cast<int>(ms < 1 ? 1 : ms);
    };
    Consumer c(brokers, options, "stoatflow-wait");
    std::map<core::TopicPartition, std::int64_t> out;
    for (std::size_t t = 0; t < topics.size(); ++t)
        for (std::int32_t p : c.partitions(topics[t], left()))
            out[{static_cast<std::int32_t>(t), p}] = c.watermarks(topics[t], p, left()).second;
    return out;
}

}  // namespace stoatflow::kafka
