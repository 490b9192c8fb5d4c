// stoatflow-mock-broker: a Kafka cluster for tests, built on librdkafka's mock
// cluster; it speaks the real protocol on 127.0.0.1 until SIGTERM/SIGINT.
//
// Limits of the mock (librdkafka 2.0): each partition keeps only about 5 MiB
// (and at most 100000 batches) of record batches and silently drops the
// oldest, so spread big test data over partitions; the first consumer-group
// join takes about 3 s, so tests may assign partitions explicitly instead.
// SIGUSR1 takes every broker down, SIGUSR2 brings them up (broker fault tests).
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr int kMaxBrokers = 16;
constexpr int kMaxPartitions = 1024;
constexpr int kPollMs = 50;

volatile sig_atomic_t g_stop = 0;
// Last signal wins: USR1 then USR2 in quick succession leaves brokers up.
volatile sig_atomic_t g_want_down = 0;

void on_signal(int sig) {
    if (sig == SIGUSR1 || sig == SIGUSR2)
        g_want_down = (sig == SIGUSR1);
    else
        g_stop = 1;
}

int usage(const char* msg) {
    if (msg) std::fprintf(stderr, "stoatflow-mock-broker: %s\n", msg);
    std::fprintf(stderr, "usage: stoatflow-mock-broker [--brokers N] [--topic NAME:PARTITIONS]... "
                         "[--port-file PATH] [--bootstrap-file PATH]\n");
    return msg ? 2 : 0;
}

bool parse_int(const char* s, int lo, int hi, int* out) {
    char* end = nullptr;
    long v = std::strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < lo || v > hi) return false;
    *out = static_cast<int>(v);
    return true;
}

// Scripts poll for these files, so they must never be seen half written.
bool write_atomically(const std::string& path, const std::string& text) {
    std::string tmp = path + ".tmp";
    std::FILE* f = std::fopen(tmp.c_str(), "w");
    if (!f) return false;
    bool ok = std::fputs(text.c_str(), f) >= 0;
    ok = (std::fclose(f) == 0) && ok;
    return ok && std::rename(tmp.c_str(), path.c_str()) == 0;
}

// "127.0.0.1:1111,127.0.0.1:2222" -> "1111 2222\n" (broker id order)
std::string ports_of(const std::string& bootstraps) {
    std::string ports;
    for (size_t pos = 0; pos < bootstraps.size();) {
        size_t comma = std::min(bootstraps.find(',', pos), bootstraps.size());
        size_t colon = bootstraps.rfind(':', comma - 1);
        ports += (ports.empty() ? "" : " ") + bootstraps.substr(colon + 1, comma - colon - 1);
        pos = comma + 1;
    }
    return ports + "\n";
}

}  // namespace

int main(int argc, char** argv) {
    int brokers = 1;
    std::vector<std::pair<std::string, int>> topics;
    std::string port_file, bootstrap_file;
    for (int i = 1; i < argc; i++) {
        std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") return usage(nullptr);
        if (i + 1 >= argc) return usage(("missing value for " + arg).c_str());
        const char* val = argv[++i];
        const char* colon = std::strrchr(val, ':');
        int parts = 0;
        if (arg == "--brokers") {
            if (!parse_int(val, 1, kMaxBrokers, &brokers)) return usage("--brokers wants 1..16");
        } else if (arg == "--topic") {
            if (!colon || colon == val || !parse_int(colon + 1, 1, kMaxPartitions, &parts))
                return usage("--topic wants NAME:PARTITIONS, PARTITIONS in 1..1024");
            topics.emplace_back(std::string(val, colon), parts);
        } else if (arg == "--port-file") {
            port_file = val;
        } else if (arg == "--bootstrap-file") {
            bootstrap_file = val;
        } else {
            return usage(("unknown argument " + arg).c_str());
        }
    }

    // Handlers before the address is published, so an early SIGTERM still
    // shuts down cleanly. The signals stay blocked while librdkafka starts its
    // threads: the mock's I/O thread does not block them itself, and a signal
    // landing there fails its poll() with EINTR, which ends that thread for good.
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigset_t ours, old;
    sigemptyset(&ours);
    for (int sig : {SIGTERM, SIGINT, SIGUSR1, SIGUSR2}) {
        sigaction(sig, &sa, nullptr);
        sigaddset(&ours, sig);
    }
    pthread_sigmask(SIG_BLOCK, &ours, &old);

    char errstr[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    // This handle only owns the mock and never connects; level 3 hides the
    // warning about its empty bootstrap.servers.
    rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof errstr);
    rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    rd_kafka_mock_cluster_t* mc = rk ? rd_kafka_mock_cluster_new(rk, brokers) : nullptr;
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    if (!mc) {
        std::fprintf(stderr, "stoatflow-mock-broker: cannot start: %s\n",
                     rk ? "mock cluster" : errstr);
        if (rk) rd_kafka_destroy(rk);
        return 1;
    }

    int rc = 0;
    for (const auto& [name, parts] : topics) {
        if (rd_kafka_resp_err_t err = rd_kafka_mock_topic_create(mc, name.c_str(), parts, 1)) {
            std::fprintf(stderr, "stoatflow-mock-broker: topic %s: %s\n", name.c_str(),
                         rd_kafka_err2str(err));
            rc = 1;
        }
    }
    const std::string bootstraps = rd_kafka_mock_cluster_bootstraps(mc);
    for (const auto& [path, text] : {std::make_pair(port_file, ports_of(bootstraps)),
                                     std::make_pair(bootstrap_file, bootstraps + "\n")}) {
        if (rc == 0 && !path.empty() && !write_atomically(path, text)) {
            std::perror(path.c_str());
            rc = 1;
        }
    }
    if (rc == 0) std::printf("%s\n", bootstraps.c_str());
    std::fflush(stdout);

    bool down = false;
    while (rc == 0 && !g_stop) {
        bool want_down = g_want_down != 0;
        if (want_down != down) {
            // One call for all brokers (-1), not one per id: in librdkafka 2.0
            // a mock call made right after another can miss the mock thread's
            // wake-up and stall for its 1 s idle timeout.
            rd_kafka_resp_err_t err = want_down ? rd_kafka_mock_broker_set_down(mc, -1)
                                                : rd_kafka_mock_broker_set_up(mc, -1);
            down = want_down;
            // An acknowledgement line, so tests can wait for the change.
            if (err)
                std::fprintf(stderr, "stoatflow-mock-broker: %s\n", rd_kafka_err2str(err));
            else
                std::printf("brokers %s\n", down ? "down" : "up");
            std::fflush(stdout);
        }
        rd_kafka_poll(rk, kPollMs);
    }

    // Takes about 1 s: the mock thread sees the stop only at its idle poll timeout.
    rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(rk);
    return rc;
}
