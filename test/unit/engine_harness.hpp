// Test harness: feeds records through a Watermark and a WindowedAggregation, commits
// when asked, and keeps the sink as a table of rows so tests read as records in → rows out.
#pragma once
#include "stoatflow/core/watermark.hpp"
#include "stoatflow/core/windowed_aggregation.hpp"

#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

namespace stoatflow::test {
using namespace stoatflow::core;

struct In {
    std::string key;
    Millis t;
    std::optional<std::int64_t> v = std::nullopt;
    std::int32_t partition = 0;
};

struct Row {
    std::string key;
    Millis start, end, event_time;
    std::vector<std::string> values;  // as text, "NULL" for SQL NULL
    bool final;
    bool operator==(const Row& o) const {
        return key == o.key && start == o.start && end == o.end && event_time == o.event_time &&
               values == o.values && final == o.final;
    }
};

inline std::ostream& operator<<(std::ostream& os, const Row& r) {
    os << "{" << r.key << " [" << r.start << "," << r.end << ") et=" << r.event_time;
    for (auto& v : r.values) os << " " << v;
    return os << (r.final ? " final}" : " open}");
}

inline std::vector<AggSpec> count_sum() {
    return {{AggFn::CountStar, "", "n"}, {AggFn::Sum, "v", "s"}};
}

class Harness {
public:
    // ext: external aggregates (their state goes into Row::values last, as its bytes); each
    // record is handed to them as the In it came from.
    Harness(WindowSpec spec, EmitStrategy emit = EmitStrategy::OnWindowUpdate, Millis max_ooo = 0,
            std::vector<AggSpec> aggs = count_sum(), Millis retention = kNoTime,
            std::shared_ptr<ExternalAggregates> ext = nullptr)
        : agg(spec, aggs, emit, retention, 0, ext), wm(max_ooo), spec_(spec), emit_(emit),
          max_ooo_(max_ooo), aggs_(std::move(aggs)), retention_(retention), ext_(std::move(ext)) {}

    // A worker restart after the last commit: a new engine restored from the state rows as
    // recovery reads them (the newest version per window), the watermark
    // restored, the sink kept. Uncommitted records are lost, as in a crash.
    std::unique_ptr<Harness> restarted() const {
        auto p = std::make_unique<Harness>(spec_, emit_, max_ooo_, aggs_, retention_, ext_);
        Harness& r = *p;
        r.wm.restore(committed_wm_);
        // Newest version per window across segments: the log is in commit order.
        std::map<std::pair<std::string, Millis>, const WindowStateRow*> newest;
        for (const auto& s : state_log) newest[{s.key, s.start}] = &s;
        for (const auto& [id, row] : newest)
            if (!row->removed) r.agg.restore(*row, r.wm.current());
        r.sink = sink;
        r.writes = writes;
        r.state_log = state_log;
        return p;
    }

    void push(const In& r) {
        const Millis w = wm.observe(r.partition, r.t);
        std::vector<Value> vals(agg.layout().size());
        for (auto& v : vals) v = r.v ? Value::of_int(*r.v) : Value::missing();
        agg.process(r.key, r.t, vals.data(), w, &r);
    }
    void push(std::initializer_list<In> rs) {
        for (auto& r : rs) push(r);
    }
    // One commit: returns what it wrote and applies it to the sink table.
    CommitOutput commit(std::optional<Millis> force_w = std::nullopt) {
        CommitOutput out;
        agg.flush(force_w ? *force_w : wm.current(), out);
        for (auto& d : out.deletes) sink.erase({d.key, d.start});
        for (auto& u : out.upserts) {
            sink[{u.key, u.start}] = to_row(u);
            ++writes[{u.key, u.start}];
        }
        for (auto& s : out.state) state_log.push_back(s);
        committed_wm_ = wm.serialize();
        return out;
    }
    Row to_row(const SinkRow& u) const {
        Row r{u.key, u.start, u.end, u.event_time, {}, u.final};
        for (std::size_t i = 0; i < agg.layout().size(); ++i)
            r.values.push_back(agg.layout().as_text(i, u.cells[i]).value_or("NULL"));
        if (ext_) r.values.push_back(u.external);
        return r;
    }
    std::vector<Row> rows() const {
        std::vector<Row> v;
        for (auto& [k, r] : sink) v.push_back(r);
        return v;
    }

    WindowedAggregation agg;
    Watermark wm;
    std::map<std::pair<std::string, Millis>, Row> sink;
    std::map<std::pair<std::string, Millis>, int> writes;
    std::vector<WindowStateRow> state_log;

private:
    WindowSpec spec_;
    EmitStrategy emit_;
    Millis max_ooo_;
    std::vector<AggSpec> aggs_;
    Millis retention_;
    std::shared_ptr<ExternalAggregates> ext_;
    std::string committed_wm_ = Watermark(0).serialize();
};

}  // namespace stoatflow::test
