// The consume thread of a source worker (background_step.hpp).
#include "stoatflow/pg/worker/background_step.hpp"

#include <chrono>
#include <csignal>

#include <pthread.h>

extern "C" {
#include "postgres.h"

#include "storage/ipc.h"
}

namespace stoatflow::pg {

namespace {

// The step running now, if any: what the exit callback joins.
std::atomic<BackgroundStep*> active_step{nullptr};

void join_active_step(int, Datum) {
    if (BackgroundStep* s = active_step.exchange(nullptr)) s->join();
}
}  // namespace

BackgroundStep::BackgroundStep(std::function<bool()> step) : step_(std::move(step)) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    try {
        thread_ = std::thread([this] { run(); });
    } catch (...) {
        pthread_sigmask(SIG_SETMASK, &old, nullptr);
        throw;
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    active_step.store(this);
}

BackgroundStep::~BackgroundStep() { join(); }

void BackgroundStep::finish() {
    join();
    if (error_) std::rethrow_exception(error_);
}

void BackgroundStep::run() {
    // Named so that a CPU split per thread tells it apart (bench/lib/cpu_split.py, top -H).
    pthread_setname_np(pthread_self(), "sf:consume");
    try {
        // step() returns false when there is nothing it may do now (bounds reached).
        while (!stop_.load(std::memory_order_acquire))
            if (!step_()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    } catch (...) {
        error_ = std::current_exception();
    }
}

void BackgroundStep::join() {
    BackgroundStep* self = this;
    active_step.compare_exchange_strong(self, nullptr);
    stop_.store(true, std::memory_order_release);
    if (thread_.joinable()) thread_.join();
}

void BackgroundStep::join_at_exit() {
    static bool registered = false;
    if (registered) return;
    before_shmem_exit(join_active_step, 0);
    registered = true;
}

}  // namespace stoatflow::pg
