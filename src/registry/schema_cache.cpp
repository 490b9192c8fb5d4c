// The schema cache's fetch thread (schema_cache.hpp).
#include "stoatflow/registry/schema_cache.hpp"

#include "stoatflow/registry/limits.hpp"

#include <algorithm>

namespace stoatflow::registry {

SchemaCache::SchemaCache(Endpoint endpoint)
    : client_(std::make_unique<Client>(std::move(endpoint))) {
    fetch_ = [this](std::uint32_t id) { return client_->schema_by_id(id); };
}

SchemaCache::SchemaCache(Fetcher fetcher) : fetch_(std::move(fetcher)) {}

SchemaCache::~SchemaCache() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
    }
    if (client_) client_->cancel();  // a request in flight does not hold the destructor up
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void SchemaCache::start_locked() {
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
}

SchemaCache::Answer SchemaCache::lookup(std::uint32_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = known_.find(id);
    if (it != known_.end()) return it->second;
    if (std::find(queue_.begin(), queue_.end(), id) == queue_.end()) {
        if (known_.size() >= kMaxCachedSchemas) known_.erase(known_.begin());
        queue_.push_back(id);
        start_locked();
        wake_.notify_all();
    }
    return Answer{};
}

std::string SchemaCache::unavailable() const {
    std::lock_guard<std::mutex> lock(mu_);
    return unavailable_;
}

bool SchemaCache::wait_idle(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return idle_.wait_for(lock, timeout, [this] { return queue_.empty() && !busy_; });
}

void SchemaCache::run() {
    std::unique_lock<std::mutex> lock(mu_);
    long backoff = 0;
    while (!stop_) {
        if (queue_.empty()) {
            idle_.notify_all();
            wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
            continue;
        }
        const std::uint32_t id = queue_.front();
        busy_ = true;
        lock.unlock();
        Fetched f = fetch_(id);  // no lock held while the registry answers
        lock.lock();
        busy_ = false;
        if (f.outcome == Outcome::Unavailable) {
            unavailable_ = f.detail;
            backoff = backoff == 0 ? kRetryFirstMs : std::min(kRetryMaxMs, backoff * 2);
            wake_.wait_for(lock, std::chrono::milliseconds(backoff), [this] { return stop_; });
            continue;  // the same id again
        }
        backoff = 0;
        unavailable_.clear();
        queue_.pop_front();
        Answer a;
        if (f.outcome == Outcome::Found) {
            a.state = State::Ready;
            a.schema = std::make_shared<const Schema>(std::move(f.schema));
        } else {
            a.state = State::NotFound;
            a.detail = f.detail;
        }
        known_[id] = std::move(a);
    }
    idle_.notify_all();
}

}  // namespace stoatflow::registry
