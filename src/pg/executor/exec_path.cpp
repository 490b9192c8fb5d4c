// An aggregation's executor as the worker builds it, and its aggregate states as the window
// engine drives them: as the aggregation's owner (README "Security": user code never runs as the
// worker's superuser).
#include "stoatflow/core/error.hpp"
#include "stoatflow/core/metadata_columns.hpp"

#include <string>

#include "stoatflow/pg/executor/exec_path.hpp"
#include "stoatflow/pg/border/spi.hpp"
#include "stoatflow/pg/border/text.hpp"

extern "C" {
#include "access/sysattr.h"
#include "miscadmin.h"
#include "nodes/bitmapset.h"
#include "nodes/readfuncs.h"
#include "optimizer/optimizer.h"
#include "utils/memutils.h"
}

namespace stoatflow::pg {

namespace {

// The executor's aggregate states for the engine. It switches no user: the engine reaches them
// only inside run_as_owner(owner) (the commit cycle enters it per aggregation), and every call
// checks that it is there.
class OwnedAggregates final : public core::ExternalAggregates {
public:
    OwnedAggregates(AggregationExecutor& exec, Oid owner)
        : exec_(exec), inner_(exec.aggregates()), owner_(owner) {}
    AggregationExecutor& executor() const { return exec_; }

    core::ExternalHandle create() override {
        require_sandbox(owner_);
        return inner_.create();
    }
    void add(core::ExternalHandle h, const void* row) override {
        require_sandbox(owner_);
        inner_.add(h, row);
    }
    void merge(core::ExternalHandle into, core::ExternalHandle from) override {
        require_sandbox(owner_);
        inner_.merge(into, from);
    }
    core::ExternalHandle copy(core::ExternalHandle h) override {
        require_sandbox(owner_);
        return inner_.copy(h);
    }
    void destroy(core::ExternalHandle h) noexcept override { inner_.destroy(h); }
    void serialize(core::ExternalHandle h, std::string& out) override {
        require_sandbox(owner_);
        inner_.serialize(h, out);
    }
    core::ExternalHandle deserialize(const char* data, std::size_t len) override {
        require_sandbox(owner_);
        return inner_.deserialize(data, len);
    }
    bool can_merge() const override { return inner_.can_merge(); }
    std::size_t memory_bytes() const override { return inner_.memory_bytes(); }

private:
    AggregationExecutor& exec_;
    core::ExternalAggregates& inner_;
    Oid owner_;
};

}  // namespace

namespace {

// Marks the row's columns a tree reads (its Vars: varno 1, attno = position in the row).
void mark_used(const std::string& tree, std::vector<bool>& used) {
    const char* text = tree.c_str();
    Bitmapset* attnos = pg_call([&] {
        Bitmapset* b = nullptr;
        pull_varattnos(static_cast<Node*>(stringToNode(text)), 1, &b);
        return b;
    });
    int m = -1;
    while ((m = bms_next_member(attnos, m)) >= 0) {
        const int att = m + FirstLowInvalidHeapAttributeNumber;
        if (att >= 1 && static_cast<std::size_t>(att) <= used.size()) used[att - 1] = true;
    }
}

}  // namespace

bool source_names_column(const SourceDef& source, const std::string& name) {
    if (name.empty()) return true;
    for (const auto& c : source.columns)
        if (c.name == name) return true;
    for (const auto& m : core::kMetadataColumns)
        if (name == m.name) return true;
    return false;
}

namespace {
std::string as_expression(const SourceDef& source, const std::string& name, const char* dflt) {
    if (name.empty()) return dflt;
    return source_names_column(source, name) ? quote_ident(name) : name;
}
}  // namespace

std::string source_key_text(const SourceDef& source) {
    return as_expression(source, source.key_path, "kafka_key");
}
std::string source_time_text(const SourceDef& source) {
    return as_expression(source, source.event_time_path, "kafka_timestamp");
}

std::unique_ptr<AggregationExecutor> make_source_executor(const SourceDef& source,
                                                          const RowType& row, MemoryContext parent,
                                                          bool time, bool key,
                                                          std::vector<bool>* used) {
    // An aggregation in all but name: its key columns are the expressions, its one aggregate
    // is never folded.
    AggregationDef def;
    def.name = "source " + source.name;
    def.owner = source.owner;
    def.spec = core::WindowSpec::tumbling(1000, 0);
    std::string items;
    if (time) items = "(" + source_time_text(source) + ") AS source_time";
    if (key)
        items += std::string(items.empty() ? "" : ", ") + "(" + source_key_text(source) +
                 ") AS source_key";
    def.group_by = items;
    def.aggregates_text = "count(*)";
    return make_executor(source, def, row, parent, used);
}

std::unique_ptr<AggregationExecutor> make_executor(const SourceDef& source,
                                                   const AggregationDef& def, const RowType& row,
                                                   MemoryContext parent, std::vector<bool>* used) {
    DeclarationTexts t;
    t.columns_json = source.columns_json;
    t.window_kind = def.spec.kind;
    // As create_aggregation analyzed it (_sink_columns_of): the source's key when there is
    // no group_by, its event time column.
    if (!def.group_by) t.key = source_key_text(source);
    t.event_time = source_time_text(source);
    t.group_by = def.group_by;
    t.filter = def.filter;
    t.aggregates = def.aggregates_text;
    std::unique_ptr<AggregationExecutor> exec;
    try {
        run_as_owner(def.owner, [&] {
            const Analysis a = analyze_declaration(t);
            exec = std::make_unique<AggregationExecutor>(a, row, parent);
            if (used != nullptr) {
                used->resize(row.width(), false);
                if (a.group_by.empty() && a.key) mark_used(a.key->tree, *used);
                for (const auto& g : a.group_by) mark_used(g.tree, *used);
                if (a.filter) mark_used(a.filter->tree, *used);
                for (const auto& item : a.aggregates) mark_used(item.tree, *used);
            }
        });
    } catch (const Error& e) {
        throw Error(e.sqlstate(), "aggregation \"" + def.name + "\": " + e.what(),
                    "Its declaration no longer analyzes as it did (an object it uses was "
                    "dropped or changed): drop the aggregation and declare it again.");
    }
    return exec;
}

std::shared_ptr<core::ExternalAggregates> owned_aggregates(AggregationExecutor& exec, Oid owner) {
    return std::make_shared<OwnedAggregates>(exec, owner);
}

BackendLayout::BackendLayout(const AggregationDef& def) {
    if (!def.executor) {
        layout_ = std::make_unique<core::AggLayout>(def.aggregates);
        return;
    }
    const auto source = load_source_by_id(def.source_id);
    if (!source)
        throw Error(sqlstate::kUndefinedObject,
                    "the source of aggregation \"" + def.name + "\" is gone");
    // Not under the current context: SPI's, which the caller's SpiSession deletes before this
    // object goes.
    cxt_ = pg_call([] {
        return AllocSetContextCreate(TopMemoryContext, "stoatflow backend executor",
                                     ALLOCSET_DEFAULT_SIZES);
    });
    row_.emplace(source->columns, cxt_);
    exec_ = make_executor(*source, def, *row_, cxt_);
    layout_ =
        std::make_unique<core::AggLayout>(def.aggregates, owned_aggregates(*exec_, def.owner));
}

BackendLayout::~BackendLayout() {
    layout_.reset();
    exec_.reset();
    row_.reset();
    if (cxt_ != nullptr) MemoryContextDelete(cxt_);
}

AggregationExecutor* executor_of(const core::AggLayout& layout) {
    const auto* owned = dynamic_cast<const OwnedAggregates*>(layout.external());
    return owned ? &owned->executor() : nullptr;
}

}  // namespace stoatflow::pg
