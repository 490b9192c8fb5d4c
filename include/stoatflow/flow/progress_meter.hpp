// How fast a worker reads and how far behind it is (README "Progress"): the numbers the
// worker publishes about once a second while it consumes. Fed per step with positions (records
// are counted per batch, never per record), it keeps per partition a rate smoothed over a few
// seconds (an exponentially weighted mean), the lag to the partition's high watermark, and
// from both the estimated time left. Pure C++ with the time passed in
// (test/unit/progress_meter_test.cpp).
#pragma once

#include "stoatflow/core/commit_policy.hpp"
#include "stoatflow/core/no_postgres.hpp"
#include "stoatflow/core/time.hpp"
#include "stoatflow/core/topic_partition.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>

namespace stoatflow::flow {

class ProgressMeter {
public:
    // The published numbers are refreshed this often (README "Progress": at least every 2 s).
    static constexpr core::Millis kIntervalMs = 1000;
    // The smoothing time of the rate: a sample's weight halves in about this × ln 2.
    static constexpr double kSmoothingMs = 3000.0;
    // A worker is catching up while its lag exceeds both the commit policy's catch-up threshold
    // and this many seconds of reading at its current rate.
    static constexpr double kBehindSeconds = 2.0;

    struct Partition {
        std::int64_t position = 0;   // next offset to read
        std::int64_t high = -1;      // the broker's high watermark (-1: not known yet)
        std::optional<double> rate;  // records per second; empty before the first sample
        std::int64_t lag() const {
            return high < 0 ? 0 : std::max<std::int64_t>(high - position, 0);
        }
    };

    // A worker (re)starts: positions are where it reads from, no rate yet (a restart measures
    // afresh: the rate before the restart says nothing about the one after it).
    void start(core::Millis now) {
        parts_.clear();
        sampled_at_ = published_at_ = now;
        shown_lag_ = 0;
        shown_behind_ = false;
    }

    // One partition's position and high watermark after a step. A position that moves back
    // (a seek after a restart) counts no records.
    void observe(core::TopicPartition tp, std::int64_t position, std::int64_t high) {
        auto [it, fresh] = parts_.try_emplace(tp);
        Seen& s = it->second;
        if (fresh) s.base = position;
        s.p.position = position;
        if (high > s.p.high) s.p.high = high;  // -1 (not known) or an older cached value: kept
    }

    // Time to publish? Once a second, the rates updated from the records read since the last
    // sample; and at once when the lag reached 0 or the worker stopped being behind since the
    // last publish (so that "caught up" never shows a second late).
    bool due(core::Millis now) {
        const std::int64_t l = lag();
        const bool early = shown_lag_ > 0 && (l == 0 || (shown_behind_ && !behind(l, rate())));
        if (now - published_at_ >= kIntervalMs) {
            sample(now);
            published_at_ = now;
        } else if (!early) {
            return false;
        }
        shown_lag_ = l;
        shown_behind_ = behind(l, rate());
        return true;
    }
    // The catching-up rule over every partition, as last published.
    bool shown_behind() const { return shown_behind_; }

    // The rates, from the records read since the last sample (per partition). A partition with
    // records to read that has read none since it started has no rate yet (the consumer is still
    // connecting or fetching: a 0 there would hold the smoothed rate down for seconds); its first
    // rate is measured from the sample at which it still had none.
    void sample(core::Millis now) {
        if (now - sampled_at_ <= 0) return;
        for (auto& [tp, s] : parts_) {
            const core::Millis since = s.since >= 0 ? s.since : sampled_at_;
            const core::Millis dt = now - since;
            if (dt <= 0) continue;
            const std::int64_t read = std::max<std::int64_t>(s.p.position - s.base, 0);
            s.base = s.p.position;
            s.since = now;
            if (!s.p.rate && read == 0 && s.p.lag() > 0) continue;
            const double now_rate = static_cast<double>(read) * 1000.0 / static_cast<double>(dt);
            // The first rate is taken as it is; later ones are blended in.
            const double alpha = 1.0 - std::exp(-static_cast<double>(dt) / kSmoothingMs);
            s.p.rate = s.p.rate ? *s.p.rate + alpha * (now_rate - *s.p.rate) : now_rate;
        }
        sampled_at_ = now;
    }

    const Partition* partition(core::TopicPartition tp) const {
        const auto it = parts_.find(tp);
        return it == parts_.end() ? nullptr : &it->second.p;
    }
    template <class F>
    void each(F&& f) const {
        for (const auto& [tp, s] : parts_) f(tp, s.p);
    }

    std::int64_t lag() const {
        std::int64_t n = 0;
        for (const auto& [tp, s] : parts_) n += s.p.lag();
        return n;
    }
    std::optional<double> rate() const {
        std::optional<double> r;
        for (const auto& [tp, s] : parts_)
            if (s.p.rate) r = r.value_or(0.0) + *s.p.rate;
        return r;
    }

    // Estimated time left: lag / rate, in ms. Empty before the first rate, when not behind
    // (lag 0) and when nothing is read at all (rate 0).
    static std::optional<core::Millis> eta(std::int64_t lag, std::optional<double> rate) {
        if (!rate || lag <= 0 || *rate <= 0.0) return std::nullopt;
        const double ms = static_cast<double>(lag) * 1000.0 / *rate;
        constexpr double kMaxMs = 1e15;  // far beyond any interval worth showing
        return static_cast<core::Millis>(std::min(ms, kMaxMs));
    }

    // The status rule: catching up (status 'catching_up' instead of 'running').
    static bool behind(std::int64_t lag, std::optional<double> rate) {
        return lag >= core::CommitPolicy::kCatchupLagRecords &&
               static_cast<double>(lag) > kBehindSeconds * rate.value_or(0.0);
    }

private:
    struct Seen {
        Partition p;
        std::int64_t base = 0;    // position at the last sample
        core::Millis since = -1;  // time of that sample (-1: the meter's start)
    };
    std::map<core::TopicPartition, Seen> parts_;
    core::Millis sampled_at_ = 0, published_at_ = 0;
    std::int64_t shown_lag_ = 0;
    bool shown_behind_ = false;
};

}  // namespace stoatflow::flow
