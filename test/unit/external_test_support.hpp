// A test implementation of core::ExternalAggregates ("concatenate in order") that counts
// every state it makes and frees, and the checks the external-aggregate tests share.
#pragma once
#include "engine_harness.hpp"

#include "stoatflow/core/error.hpp"

#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace stoatflow::test {

// "Concatenate in order": each window's inputs (the record's value, N for none) in the order
// the engine folded them; merge appends. Order-sensitive on purpose: a restart that changed
// the order of folds or merges would show.
struct Seq {
    std::vector<std::string> items;
};

class SeqAggregates : public ExternalAggregates {
public:
    explicit SeqAggregates(bool mergeable = true) : mergeable_(mergeable) {}
    ~SeqAggregates() override {
        for (Seq* s : live_) delete s;  // reported by the tests (live() != 0), not leaked here
    }
    ExternalHandle create() override { return make(Seq{}); }
    void add(ExternalHandle h, const void* row) override {
        tick();
        const In& r = *static_cast<const In*>(row);
        seq(h).items.push_back(r.v ? std::to_string(*r.v) : "N");
    }
    void merge(ExternalHandle into, ExternalHandle from) override {
        tick();
        if (!mergeable_) throw std::logic_error("merge on an aggregate without combine");
        Seq& a = seq(into);
        const Seq& b = seq(from);
        a.items.insert(a.items.end(), b.items.begin(), b.items.end());
    }
    ExternalHandle copy(ExternalHandle h) override { return make(seq(h)); }
    void destroy(ExternalHandle h) noexcept override {
        Seq* s = static_cast<Seq*>(h);
        if (live_.erase(s) == 0) {
            ++bad_;  // a double free, or a handle this implementation never made
            return;
        }
        ++destroyed_;
        delete s;
    }
    void serialize(ExternalHandle h, std::string& out) override {
        tick();
        out += "seq:" + text(seq(h));
    }
    ExternalHandle deserialize(const char* data, std::size_t len) override {
        const std::string s(data, len);
        if (s.rfind("seq:", 0) != 0) throw Error(stoatflow::sqlstate::kDataCorrupted, "bad seq");
        Seq q;
        std::stringstream in(s.substr(4));
        for (std::string item; std::getline(in, item, ',');) q.items.push_back(item);
        return make(std::move(q));
    }
    bool can_merge() const override { return mergeable_; }
    std::size_t memory_bytes() const override { return live_.size() * sizeof(Seq); }

    static std::string text(const Seq& s) {
        std::string out;
        for (std::size_t i = 0; i < s.items.size(); ++i) out += (i ? "," : "") + s.items[i];
        return out;
    }
    std::size_t live() const { return live_.size(); }
    std::size_t created() const { return created_; }
    std::size_t destroyed() const { return destroyed_; }
    std::size_t bad() const { return bad_; }
    // Every operation but destroy throws once this many more have run (0: never).
    long fail_after = 0;

private:
    void tick() {
        if (fail_after > 0 && --fail_after == 0) throw std::runtime_error("injected failure");
    }
    ExternalHandle make(Seq s) {
        tick();
        Seq* p = new Seq(std::move(s));
        live_.insert(p);
        ++created_;
        return p;
    }
    Seq& seq(ExternalHandle h) {
        Seq* s = static_cast<Seq*>(h);
        if (!live_.count(s)) {
            ++bad_;  // use after free
            throw std::logic_error("use of a state not alive");
        }
        return *s;
    }
    bool mergeable_;
    std::set<Seq*> live_;
    std::size_t created_ = 0, destroyed_ = 0, bad_ = 0;
};

// The external state of a sink row, as the items it holds.
inline std::vector<std::string> items_of(const std::string& bytes) {
    EXPECT_EQ(bytes.rfind("seq:", 0), 0u) << bytes;
    std::vector<std::string> v;
    std::stringstream in(bytes.substr(4));
    for (std::string item; std::getline(in, item, ',');) v.push_back(item);
    return v;
}

// A sink row's external state must hold exactly the inputs its built-in count(*) and sum
// saw (Row::values: n, s, external).
inline void expect_consistent(const Row& r) {
    ASSERT_EQ(r.values.size(), 3u);
    const auto items = items_of(r.values[2]);
    std::int64_t sum = 0, seen = 0;
    for (const auto& i : items)
        if (i != "N") {
            sum += std::stoll(i);
            ++seen;
        }
    EXPECT_EQ(r.values[0], std::to_string(items.size())) << r;
    EXPECT_EQ(r.values[1], seen ? std::to_string(sum) : "NULL") << r;
}

// The state log as the state tables hand it back: every row through AggLayout's bytes.
inline void through_bytes(Harness& h) {
    const AggLayout& l = h.agg.layout();
    for (WindowStateRow& s : h.state_log) {
        if (s.removed) continue;
        std::string bytes;
        l.serialize(s.cells.data(), bytes, s.floor, &s.external);
        s.cells = l.deserialize(bytes.data(), bytes.size(), &s.floor, &s.external);
    }
}

inline std::string seq_of(const Harness& h, const std::string& key, Millis start) {
    return SeqAggregates::text(Seq{items_of(h.sink.at({key, start}).values.at(2))});
}

}  // namespace stoatflow::test
