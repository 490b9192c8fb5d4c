// Schemas by id for a running source, fetched off the hot path: lookup() never waits on the
// network. An id seen for the first time is queued for a fetch thread and reads as Pending (the
// record waits for it; it is not a dead letter); a 404 reads as NotFound (bad_schema_id); while
// the registry cannot answer, unavailable() says why and the thread retries the same id after
// 1 s, doubling to 30 s (README "Formats", faults).
#pragma once
#include "stoatflow/core/no_postgres.hpp"

#include "stoatflow/registry/client.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

namespace stoatflow::registry {

class SchemaCache {
public:
    // Fetches with a client of `endpoint` (throws BadRegistryUrl). `fetcher` replaces the HTTP
    // client (tests); the thread starts at the first id it has to fetch.
    using Fetcher = std::function<Fetched(std::uint32_t)>;
    explicit SchemaCache(Endpoint endpoint);
    explicit SchemaCache(Fetcher fetcher);
    ~SchemaCache();  // stops the thread (a request in flight is cancelled: about a second)
    SchemaCache(const SchemaCache&) = delete;
    SchemaCache& operator=(const SchemaCache&) = delete;

    enum class State { Ready, Pending, NotFound };
    struct Answer {
        State state = State::Pending;
        std::shared_ptr<const Schema> schema;  // Ready
        std::string detail;                    // NotFound: the registry's 404, for the dead letter
    };
    Answer lookup(std::uint32_t id);

    // Why the registry cannot answer now ("" when its last answer was an answer).
    std::string unavailable() const;
    // Waits until the fetch thread has nothing queued or `timeout` passed; true if idle.
    bool wait_idle(std::chrono::milliseconds timeout);

private:
    void run();
    void start_locked();

    Fetcher fetch_;
    std::unique_ptr<Client> client_;
    mutable std::mutex mu_;
    std::condition_variable wake_, idle_;
    std::unordered_map<std::uint32_t, Answer> known_;
    std::deque<std::uint32_t> queue_;
    std::string unavailable_;
    bool busy_ = false, stop_ = false;
    std::thread thread_;
};

}  // namespace stoatflow::registry
