// The aggregates of one aggregation (AggLayout): how a record folds into a window's cells,
// how two windows' cells combine, the result values and the state tables' binary form.
#pragma once
#include "stoatflow/core/aggregate/agg_spec.hpp"
#include "stoatflow/core/aggregate/cells.hpp"
#include "stoatflow/core/external_aggregate.hpp"
#include "stoatflow/core/no_postgres.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace stoatflow::core {

// The aggregates of one aggregation: the built-in ones (specs, folded in AggCells) and,
// optionally, external ones whose state only `external` understands (one ExternalState
// per window for all of them). Whether there are external ones is decided here, once per
// layout, so the built-in path pays one predictable branch per window touched.
class AggLayout {
public:
    explicit AggLayout(std::vector<AggSpec> specs,
                       std::shared_ptr<ExternalAggregates> external = nullptr);
    const std::vector<AggSpec>& specs() const { return specs_; }
    std::size_t size() const { return specs_.size(); }
    ExternalAggregates* external() const { return external_.get(); }

    std::vector<AggCell> empty_state() const { return std::vector<AggCell>(specs_.size()); }
    // Fold one record (values[i] is the field value for aggregate i) into cells.
    void add(AggCell* cells, const Value* values) const;
    // Combine two windows' states (session merge, sliding derivation).
    void merge(AggCell* into, const AggCell* from) const;

    // Result value of aggregate i: nullopt is SQL NULL (no values seen).
    std::optional<std::int64_t> as_bigint(std::size_t i, const AggCell& c) const;
    std::optional<double> as_double(std::size_t i, const AggCell& c) const;
    // numeric as exact decimal text (sum)
    std::optional<std::string> as_numeric_text(std::size_t i, const AggCell& c) const;
    // The same sum when it is an exact integer within int64 (the common case; no text).
    std::optional<std::int64_t> as_numeric_int64(std::size_t i, const AggCell& c) const;
    // Any column as text (for tests and the SQL layer's text paths).
    std::optional<std::string> as_text(std::size_t i, const AggCell& c) const;

    // Compact binary state: only the fields each function needs, little-endian. Per cell:
    // n (int64); min/max: d; sum/avg: the integer sum's low 128 bits, then d. That is the
    // whole row (version 0.1's format, of a length fixed by the specs: state_v01_size())
    // whenever every integer sum fits __int128; otherwise the row goes on with a tail: the
    // byte 2 (format version) and each sum/avg cell's ihi (int64), and the 128 bits
    // written are the normalized isum. A session's floor (WindowedAggregation), when given,
    // follows as one more tail: the byte 3 and the floor (int64). A layout with external
    // aggregates always ends with their state: the byte 4, its length (uint32) and the
    // bytes ExternalAggregates::serialize wrote (`external`, required for such a layout).
    void serialize(const AggCell* cells, std::string& out,
                   std::optional<std::int64_t> floor = std::nullopt,
                   const std::string* external = nullptr) const;
    // Reads every form (rows written by 0.1 included); the floor into *floor (nullopt when
    // the row has none), the external state's bytes into *external. Throws Error (XX001) on
    // a short or malformed buffer, and when the external tail is missing or unexpected.
    std::vector<AggCell> deserialize(const char* data, std::size_t len,
                                     std::optional<std::int64_t>* floor = nullptr,
                                     std::string* external = nullptr) const;
    // Length of a row in the 0.1 format for these aggregates.
    std::size_t state_v01_size() const;
    static constexpr char kStateWideSums = 2;      // version byte of the wide-sums tail
    static constexpr char kStateSessionFloor = 3;  // tag of the floor tail
    static constexpr char kStateExternal = 4;      // tag of the external aggregates' state

private:
    std::vector<AggSpec> specs_;
    std::shared_ptr<ExternalAggregates> external_;
};

}  // namespace stoatflow::core
