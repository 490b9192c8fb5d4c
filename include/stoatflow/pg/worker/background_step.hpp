// The consume thread: while the main thread writes a commit, a second thread keeps consuming
// and windowing (the next commit's records). It touches only the consumer and the record path
// (see record_path.hpp); every PostgreSQL call stays on the main thread.
#pragma once

#include <atomic>
#include <exception>
#include <functional>
#include <thread>

namespace stoatflow::pg {

// Runs `step` on a second thread until finish() (or destruction), with every signal blocked
// (PostgreSQL's handlers belong to the main thread). The thread is joined on every way out:
// finish() (which rethrows what the thread threw), the destructor (a C++ exception, including
// a PostgreSQL ERROR carried by pg_call), and process exit (a FATAL: see join_at_exit()).
class BackgroundStep {
public:
    explicit BackgroundStep(std::function<bool()> step);
    ~BackgroundStep();
    BackgroundStep(const BackgroundStep&) = delete;
    BackgroundStep& operator=(const BackgroundStep&) = delete;

    void finish();
    // Stops and joins the thread (what the destructor does); what it threw is dropped.
    void join();

    // Registers, once per process, the exit callback that stops and joins a running step:
    // a FATAL or proc_exit() while a commit is written leaves through it, never with the
    // consume thread still running.
    static void join_at_exit();

private:
    void run();

    std::function<bool()> step_;
    std::atomic<bool> stop_{false};
    std::exception_ptr error_;
    std::thread thread_;
};

}  // namespace stoatflow::pg
