// Brute-force reference for the differential test (differential_test.cpp).
//
// Written from SPEC sections 3-5 only: it shares no code with src/core and uses no
// engine type, so a bug in the engine cannot hide in the reference. It favours
// obviousness over speed: windows are enumerated by scanning, sliding windows are
// re-derived from scratch from the set of accepted records at every snapshot, and
// sessions are simulated record by record.
//
// Record values are integers or halves (x.5), so every sum is held exactly as twice
// its value in an int64.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace stoatflow_test {

using RefMillis = std::int64_t;

enum class RefKind { Tumbling, Hopping, Sliding, Session };

inline const char* ref_kind_name(RefKind k) {
    switch (k) {
    case RefKind::Tumbling: return "tumbling";
    case RefKind::Hopping: return "hopping";
    case RefKind::Sliding: return "sliding";
    case RefKind::Session: return "session";
    }
    return "?";
}

struct RefSpec {
    RefKind kind = RefKind::Tumbling;
    RefMillis size = 1;     // tumbling/hopping size, sliding D, session gap
    RefMillis advance = 1;  // hopping advance (tumbling: == size; unused otherwise)
    RefMillis grace = 0;
};

// The value of field v in one record: absent, or twice its numeric value (exact for
// integers and halves). as_double: hand it to the engine as a double (else an int).
struct RefValue {
    bool present = false;
    bool as_double = false;
    std::int64_t twice = 0;
};

// The aggregates of one window: count(*), count(v), sum(v), min(v), max(v), avg(v),
// and the latest record time (event_time).
struct RefAgg {
    std::int64_t n = 0;
    std::int64_t cv = 0;
    std::int64_t twice_sum = 0;
    std::int64_t twice_min = 0;
    std::int64_t twice_max = 0;
    RefMillis max_t = std::numeric_limits<RefMillis>::min();

    void add(RefMillis t, const RefValue& v) {
        ++n;
        max_t = std::max(max_t, t);
        if (!v.present) return;
        if (cv == 0) {
            twice_min = twice_max = v.twice;
        } else {
            twice_min = std::min(twice_min, v.twice);
            twice_max = std::max(twice_max, v.twice);
        }
        ++cv;
        twice_sum += v.twice;
    }
    // NULL when no value was seen.
    std::optional<long double> sum() const {
        if (cv == 0) return std::nullopt;
        return static_cast<long double>(twice_sum) / 2;
    }
    std::optional<long double> min() const {
        if (cv == 0) return std::nullopt;
        return static_cast<long double>(twice_min) / 2;
    }
    std::optional<long double> max() const {
        if (cv == 0) return std::nullopt;
        return static_cast<long double>(twice_max) / 2;
    }
    std::optional<long double> avg() const {
        if (cv == 0) return std::nullopt;
        return static_cast<long double>(twice_sum) / 2 / static_cast<long double>(cv);
    }
};

// One expected sink row.
struct RefRow {
    std::string key;
    RefMillis start = 0;
    RefMillis end = 0;  // exclusive, as reported
    RefMillis event_time = 0;
    bool closed = false;  // at the watermark the snapshot was taken at
    RefAgg agg;
};

using RefRowKey = std::pair<std::string, RefMillis>;  // (key, window_start)
using RefRows = std::vector<RefRow>;

// Things the generator should provoke now and then (checked by the random tests so a
// generator that stopped producing interesting streams is noticed).
struct RefCoverage {
    std::int64_t contributions = 0;  // (record, window) pairs folded / records accepted
    std::int64_t late_drops = 0;
    std::int64_t session_merges = 0;   // records that joined two or more open sessions
    std::int64_t session_extends = 0;  // records that joined exactly one open session
    std::int64_t backward_drops = 0;   // session: late record refused to extend over closed history
    std::int64_t late_extends = 0;     // session: late record extended an open session backwards
    std::int64_t closed_in_reach = 0;  // session: accepted although a closed session covers t
};

class RefModel {
public:
    explicit RefModel(RefSpec spec) : spec_(spec) {
        if (spec_.kind == RefKind::Tumbling) spec_.advance = spec_.size;
    }

    const RefSpec& spec() const { return spec_; }
    std::int64_t late_window() const { return late_window_; }
    std::int64_t late_session() const { return late_session_; }
    const RefCoverage& coverage() const { return cov_; }

    // One record at event time t, arriving when the watermark (already including
    // this record) is w.
    void add(const std::string& key, RefMillis t, const RefValue& v, RefMillis w) {
        switch (spec_.kind) {
        case RefKind::Tumbling:
        case RefKind::Hopping: add_grid(key, t, v, w); break;
        case RefKind::Sliding: add_sliding(key, t, v, w); break;
        case RefKind::Session: add_session(key, t, v, w); break;
        }
    }

    // The worker restarted with committed watermark w. Nothing to do: what a restarted
    // worker remembers of closed sessions comes from its state tables, which keep them as
    // long as an uninterrupted worker remembers them.
    void restart(RefMillis) {}

    // Every window that exists now, marked closed or not at watermark w; sorted by
    // (key, window_start).
    RefRows snapshot(RefMillis w) const {
        RefRows rows;
        snapshot(w, rows);
        return rows;
    }
    // The same into a caller's buffer (cleared first), to spare allocations.
    void snapshot(RefMillis w, RefRows& rows) const {
        rows.clear();
        switch (spec_.kind) {
        case RefKind::Tumbling:
        case RefKind::Hopping:
            for (const auto& [k, agg] : grid_) {
                RefRow r;
                r.key = k.first;
                r.start = k.second;
                r.end = k.second + spec_.size;
                r.event_time = agg.max_t;
                r.closed = w >= r.end + spec_.grace;
                r.agg = agg;
                rows.push_back(std::move(r));
            }
            break;
        case RefKind::Sliding:
            if (sliding_stale_) {  // re-derive only after the accepted set changed
                sliding_rows_.clear();
                sliding_derive(sliding_rows_);
                sliding_stale_ = false;
            }
            for (const RefRow& cached : sliding_rows_) {
                rows.push_back(cached);
                rows.back().closed = w >= cached.end + spec_.grace;
            }
            break;
        case RefKind::Session:
            for (const auto& [key, list] : sessions_)
                for (const Session& s : list) {
                    RefRow r;
                    r.key = key;
                    r.start = s.first;
                    r.end = s.last + 1;
                    r.event_time = s.last;
                    r.closed = !session_open(s, w);
                    for (const auto& [t, v] : s.records) r.agg.add(t, v);
                    rows.push_back(std::move(r));
                }
            break;
        }
        // grid_, accepted_ and sessions_ iterate keys in order; sessions are kept sorted.
    }

private:
    // ---- tumbling / hopping -------------------------------------------------------
    static RefMillis floor_div(RefMillis a, RefMillis b) {
        RefMillis q = a / b;
        if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
        return q;
    }

    void add_grid(const std::string& key, RefMillis t, const RefValue& v, RefMillis w) {
        // Scan a generous range of grid points and keep those with t - size < s <= t.
        const RefMillis a = spec_.advance;
        for (RefMillis k = floor_div(t - spec_.size, a) - 1; k <= floor_div(t, a) + 1; ++k) {
            const RefMillis s = k * a;
            if (!(t - spec_.size < s && s <= t)) continue;
            const RefMillis close = s + spec_.size + spec_.grace;
            if (w < close) {
                grid_[RefRowKey{key, s}].add(t, v);
                ++cov_.contributions;
            } else {
                ++late_window_;
                ++cov_.late_drops;
            }
        }
    }

    // ---- sliding ------------------------------------------------------------------
    void add_sliding(const std::string& key, RefMillis t, const RefValue& v, RefMillis w) {
        // The record's own left window [t - D, t] ends (exclusively) at t + 1.
        if (w < t + 1 + spec_.grace) {
            accepted_[key].emplace_back(t, v);
            sliding_stale_ = true;
            ++cov_.contributions;
        } else {
            ++late_window_;
            ++cov_.late_drops;
        }
    }

    // Every sliding window of the accepted records (closed flags left unset).
    void sliding_derive(RefRows& rows) const {
        const RefMillis d = spec_.size;
        for (const auto& [key, recs] : accepted_) {
            std::vector<RefMillis> starts;
            for (const auto& rec : recs) {
                const RefMillis t = rec.first;
                starts.push_back(t - d);  // left window [t - D, t]
                bool right = false;       // right window [t + 1, t + 1 + D] iff non-empty
                for (const auto& other : recs)
                    if (other.first > t && other.first <= t + 1 + d) right = true;
                if (right) starts.push_back(t + 1);
            }
            std::sort(starts.begin(), starts.end());  // one window per distinct start
            starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
            for (RefMillis s : starts) {
                RefRow r;
                r.key = key;
                r.start = s;
                r.end = s + d + 1;
                for (const auto& rec : recs)
                    if (rec.first >= s && rec.first <= s + d) r.agg.add(rec.first, rec.second);
                r.event_time = r.agg.max_t;
                rows.push_back(std::move(r));
            }
        }
    }

    // ---- session ------------------------------------------------------------------
    struct Session {
        RefMillis first = 0;
        RefMillis last = 0;
        // Late records may not extend it back to here or before: what could have been
        // forgotten of the key's closed sessions when it began.
        RefMillis floor = std::numeric_limits<RefMillis>::min();
        std::vector<std::pair<RefMillis, RefValue>> records;
    };

    // Keeps a key's sessions sorted by first record time.
    static void insert_sorted(std::vector<Session>& list, Session s) {
        auto pos = std::lower_bound(list.begin(), list.end(), s.first,
                                    [](const Session& a, RefMillis f) { return a.first < f; });
        list.insert(pos, std::move(s));
    }

    bool session_open(const Session& s, RefMillis w) const {
        return w < s.last + 1 + spec_.size + spec_.grace;
    }

    void add_session(const std::string& key, RefMillis t, const RefValue& v, RefMillis w) {
        const RefMillis gap = spec_.size;
        std::vector<Session>& list = sessions_[key];
        std::vector<std::size_t> joined;
        bool closed_covers = false;
        for (std::size_t i = 0; i < list.size(); ++i) {
            const bool covers = list[i].first - gap <= t && t <= list[i].last + gap;
            if (!covers) continue;
            if (session_open(list[i], w))
                joined.push_back(i);
            else
                closed_covers = true;
        }
        const bool own_closed = w >= t + 1 + gap + spec_.grace;
        if (joined.empty()) {
            if (own_closed) {
                ++late_session_;
                ++cov_.late_drops;
                return;
            }
            if (closed_covers) ++cov_.closed_in_reach;
            Session s;
            s.first = s.last = t;
            s.floor = w == std::numeric_limits<RefMillis>::min()
                          ? w
                          : w - 1 - 2 * gap - spec_.grace;  // what may have been forgotten
            s.records.emplace_back(t, v);
            insert_sorted(list, std::move(s));
            ++cov_.contributions;
            return;
        }
        std::size_t earliest = joined.front();
        for (std::size_t i : joined)
            if (list[i].first < list[earliest].first) earliest = i;
        if (t < list[earliest].first && own_closed) {
            // A late record extends the open session backwards (README "Window kinds"), also over
            // closed sessions. The exceptions (README): the sink knows a session by (key, first),
            // so it may not come to start where a closed session starts; and the worker
            // remembers closed sessions only until w >= last + 1 + retention + gap (the
            // minimum retention gap + grace here): it may not reach back to the last record
            // of one forgotten, nor to what could have been forgotten when the open session
            // began (its floor).
            const RefMillis keep = 2 * gap + spec_.grace;
            const RefMillis first = list[earliest].first;
            bool refused = t <= list[earliest].floor;
            for (const Session& p : list) {
                if (session_open(p, w) || p.first >= first) continue;
                const bool forgotten = w >= p.last + 1 + keep;
                refused = refused || (forgotten ? t <= p.last : t == p.first);
            }
            if (refused) {
                ++late_session_;
                ++cov_.late_drops;
                ++cov_.backward_drops;
                return;
            }
            ++cov_.late_extends;
        }
        Session merged;
        merged.first = t;
        merged.last = t;
        merged.floor = list[earliest].floor;
        merged.records.emplace_back(t, v);
        for (std::size_t i : joined) {
            merged.first = std::min(merged.first, list[i].first);
            merged.last = std::max(merged.last, list[i].last);
            merged.records.insert(merged.records.end(), list[i].records.begin(),
                                  list[i].records.end());
        }
        if (joined.size() >= 2)
            ++cov_.session_merges;
        else
            ++cov_.session_extends;
        if (closed_covers) ++cov_.closed_in_reach;
        for (auto it = joined.rbegin(); it != joined.rend(); ++it)
            list.erase(list.begin() + static_cast<std::ptrdiff_t>(*it));
        insert_sorted(list, std::move(merged));
        ++cov_.contributions;
    }

    RefSpec spec_;
    std::int64_t late_window_ = 0;
    std::int64_t late_session_ = 0;
    RefCoverage cov_;
    std::map<RefRowKey, RefAgg> grid_;                                             // grid
    std::map<std::string, std::vector<std::pair<RefMillis, RefValue>>> accepted_;  // sliding
    mutable RefRows sliding_rows_;  // sliding_derive() cache
    mutable bool sliding_stale_ = false;
    std::map<std::string, std::vector<Session>> sessions_;  // session
};

// The watermark of README "Time and the watermark" over several partitions, written from the SPEC
// alone (no core::Watermark code): W = min over partitions that hold data of their largest event
// time, minus max_out_of_orderness; never decreasing. A partition assigned with records
// waiting holds W back (W does not move at all) until its first record, or until it turns
// out to have had nothing (caught up). With idle_timeout, a partition caught up and silent
// that long (wall clock, judged at ticks) stops counting until its next record; when every
// partition with data is idle, W follows the newest record of any of them.
class RefWatermark {
public:
    static constexpr RefMillis kNone = std::numeric_limits<RefMillis>::min();

    RefWatermark(RefMillis ooo, RefMillis idle_timeout, std::vector<bool> pending_at_start)
        : ooo_(ooo), idle_timeout_(idle_timeout), pending_at_start_(std::move(pending_at_start)),
          parts_(pending_at_start_.size()) {
        for (std::size_t p = 0; p < parts_.size(); ++p) parts_[p].pending = pending_at_start_[p];
    }

    RefMillis w() const { return w_; }
    // Partitions now idle (for the generator's coverage counts).
    int idle_partitions() const {
        int n = 0;
        for (const Part& x : parts_) n += x.idle;
        return n;
    }

    // A record at event time t from partition p, delivered at wall time now; returns the
    // W it is judged against (this record included).
    RefMillis record(std::size_t p, RefMillis t, RefMillis now) {
        Part& x = parts_[p];
        x.max = x.has_max ? std::max(x.max, t) : t;
        x.has_max = true;
        x.pending = false;
        x.caught_up = false;
        x.idle = false;
        x.last_delivery = now;
        x.delivered_since_restart = true;
        update();
        return w_;
    }
    // The consumer reached the end of partition p.
    void caught_up(std::size_t p) {
        Part& x = parts_[p];
        x.caught_up = true;
        if (!x.has_max) x.pending = false;  // it had nothing to deliver after all
        update();
    }
    void tick(RefMillis now) {
        for (Part& x : parts_)
            if (idle_timeout_ > 0 && x.has_max && x.caught_up && !x.idle &&
                (!x.delivered_since_restart || now - x.last_delivery >= idle_timeout_))
                x.idle = true;
        update();
    }
    // A crash and restart: W and each partition's largest event time survive; nothing else
    // does. When a partition last delivered is unknown (as long ago as can be); partitions
    // without data are assigned as at the start. W is not recomputed until the next event.
    void restart() {
        for (std::size_t p = 0; p < parts_.size(); ++p) {
            Part& x = parts_[p];
            x.caught_up = false;
            x.idle = false;
            x.delivered_since_restart = false;
            if (!x.has_max) x.pending = pending_at_start_[p];
        }
    }

private:
    struct Part {
        bool has_max = false;
        RefMillis max = 0;
        bool pending = false;
        bool caught_up = false;
        bool idle = false;
        bool delivered_since_restart = true;
        RefMillis last_delivery = 0;
    };
    void update() {
        bool any = false, any_active = false;
        RefMillis min_active = 0, max_all = 0;
        for (const Part& x : parts_) {
            if (x.pending) return;
            if (!x.has_max) continue;
            max_all = any ? std::max(max_all, x.max) : x.max;
            any = true;
            if (x.idle) continue;
            min_active = any_active ? std::min(min_active, x.max) : x.max;
            any_active = true;
        }
        if (!any) return;
        const RefMillis m = any_active ? min_active : max_all;  // all idle: the newest record
        if (w_ == kNone || m - ooo_ > w_) w_ = m - ooo_;
    }

    RefMillis ooo_;
    RefMillis idle_timeout_;
    std::vector<bool> pending_at_start_;
    std::vector<Part> parts_;
    RefMillis w_ = kNone;
};

}  // namespace stoatflow_test
