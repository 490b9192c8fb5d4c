// stoatflow-raw-consume BROKERS TOPIC [--timeout SECONDS]
//
// The ceiling for the end-to-end benchmark (bench/e2e.sh): a minimal librdkafka consumer
// that reads every message of TOPIC from the beginning and throws it away. Explicit
// assignment of all partitions (no consumer group join), rd_kafka_consume_batch_queue
// batches, enable.partition.eof; stops once every partition has reported EOF and prints
//
//     messages=N bytes=B seconds=S
//
// where S is measured from just before the metadata request to the last EOF (so it is
// comparable with the wall-clock times of the other two contenders). Exit 1 on errors or
// when the timeout (default 600 s) passes first.
#include <librdkafka/rdkafka.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

[[noreturn]] void die(const std::string& msg) {
    std::fprintf(stderr, "stoatflow-raw-consume: %s\n", msg.c_str());
    std::exit(1);
}

void set(rd_kafka_conf_t* conf, const char* k, const char* v) {
    char err[512];
    if (rd_kafka_conf_set(conf, k, v, err, sizeof err) != RD_KAFKA_CONF_OK)
        die(std::string("config ") + k + ": " + err);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3 && argc != 5) {
        std::fprintf(stderr, "usage: stoatflow-raw-consume BROKERS TOPIC [--timeout SECONDS]\n");
        return 2;
    }
    const std::string brokers = argv[1], topic = argv[2];
    double timeout_s = 600;
    if (argc == 5) {
        if (std::strcmp(argv[3], "--timeout") != 0) die("unknown argument " + std::string(argv[3]));
        timeout_s = std::atof(argv[4]);
        if (timeout_s <= 0) die("--timeout wants a positive number of seconds");
    }
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    const auto deadline = t0 + std::chrono::duration<double>(timeout_s);

    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    set(conf, "bootstrap.servers", brokers.c_str());
    set(conf, "group.id", "stoatflow-raw-consume");  // required by the consumer API; never joined
    set(conf, "enable.auto.commit", "false");
    set(conf, "enable.auto.offset.store", "false");
    set(conf, "enable.partition.eof", "true");
    set(conf, "auto.offset.reset", "earliest");
    // Extra librdkafka properties, "k=v;k=v" (to compare consumer settings with the worker's).
    if (const char* extra = std::getenv("RAW_CONSUME_CONF")) {
        std::string rest = extra;
        while (!rest.empty()) {
            const auto semi = rest.find(';');
            const std::string kv = rest.substr(0, semi);
            rest = semi == std::string::npos ? "" : rest.substr(semi + 1);
            const auto eq = kv.find('=');
            if (eq == std::string::npos) die("RAW_CONSUME_CONF wants k=v;k=v, got " + kv);
            set(conf, kv.substr(0, eq).c_str(), kv.substr(eq + 1).c_str());
        }
    }
    char err[512];
    rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (!rk) die(std::string("cannot create consumer: ") + err);
    rd_kafka_poll_set_consumer(rk);

    // Every partition of the topic, from the beginning.
    rd_kafka_topic_t* t = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
    const rd_kafka_metadata_t* md = nullptr;
    rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, t, &md, 10000);
    rd_kafka_topic_destroy(t);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) die(std::string("metadata: ") + rd_kafka_err2str(e));
    if (md->topic_cnt != 1 || md->topics[0].err != RD_KAFKA_RESP_ERR_NO_ERROR ||
        md->topics[0].partition_cnt < 1)
        die("topic " + topic + " not found or without partitions");
    const int nparts = md->topics[0].partition_cnt;
    rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(nparts);
    int max_id = 0;
    for (int i = 0; i < nparts; ++i) {
        const int32_t id = md->topics[0].partitions[i].id;
        rd_kafka_topic_partition_list_add(list, topic.c_str(), id)->offset =
            RD_KAFKA_OFFSET_BEGINNING;
        if (id > max_id) max_id = id;
    }
    rd_kafka_metadata_destroy(md);
    e = rd_kafka_assign(rk, list);
    rd_kafka_topic_partition_list_destroy(list);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) die(std::string("assign: ") + rd_kafka_err2str(e));

    rd_kafka_queue_t* q = rd_kafka_queue_get_consumer(rk);
    std::vector<rd_kafka_message_t*> batch(10000);
    std::vector<char> at_eof(static_cast<size_t>(max_id) + 1, 0);
    int eofs = 0;
    uint64_t messages = 0, bytes = 0;
    // EOF is reported per partition each time the consumer reaches its end; a partition that
    // reported EOF and later delivers more (not in this benchmark: the topic is complete before
    // we start) would simply be counted again at its next EOF.
    while (eofs < nparts) {
        if (Clock::now() > deadline) die("timeout before every partition reached its end");
        const ssize_t n = rd_kafka_consume_batch_queue(q, 100, batch.data(), batch.size());
        if (n < 0) die(std::string("consume: ") + rd_kafka_err2str(rd_kafka_last_error()));
        for (ssize_t i = 0; i < n; ++i) {
            rd_kafka_message_t* m = batch[i];
            if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                if (m->partition >= 0 && m->partition <= max_id && !at_eof[m->partition]) {
                    at_eof[m->partition] = 1;
                    ++eofs;
                }
            } else if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
                const std::string why = rd_kafka_message_errstr(m);
                // Transport hiccups are retried by librdkafka; anything else ends the run.
                if (m->err != RD_KAFKA_RESP_ERR__TRANSPORT) die("message error: " + why);
            } else {
                ++messages;
                bytes += m->len;
            }
            rd_kafka_message_destroy(m);
        }
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    std::printf("messages=%llu bytes=%llu seconds=%.3f\n",
                static_cast<unsigned long long>(messages), static_cast<unsigned long long>(bytes),
                seconds);
    std::fflush(stdout);
    rd_kafka_queue_destroy(q);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return 0;
}
