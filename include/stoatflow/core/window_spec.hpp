// What a window definition is: kind, size/advance/gap, grace. Validation, the close
// rule, minimum retention and the window length live here, each in one function.
#pragma once
#include "stoatflow/core/no_postgres.hpp"
#include "stoatflow/core/time.hpp"

#include <string>

namespace stoatflow::core {

enum class WindowKind { Tumbling, Hopping, Sliding, Session };

const char* to_string(WindowKind kind);
// The kind a name spells (to_string's inverse); throws Error 22023 for any other name. The one
// place window-kind names are judged: catalog loading and the SQL declarations ask it.
WindowKind window_kind_from_name(const std::string& name);

// Upper bound for any size, gap, advance or grace: ten years. Larger values are
// almost certainly a unit mistake, and keeping them bounded rules out overflow.
inline constexpr Millis kMaxWindowMillis = 10LL * 366 * 24 * 3600 * 1000;

struct WindowSpec {
    WindowKind kind = WindowKind::Tumbling;
    Millis size = 0;     // tumbling/hopping: size; sliding: time difference D; session: gap
    Millis advance = 0;  // hopping: advance; tumbling: == size; otherwise 0
    Millis grace = 0;
    // Windows ending at or before this are closed whatever the grace (kNoTime: none): what the
    // committed state had closed, so a raised grace never reopens a window (README "Altering an
    // aggregation"). Not part of the definition (operator== ignores it).
    Millis closed_through = kNoTime;

    static WindowSpec tumbling(Millis size, Millis grace = 0);
    static WindowSpec hopping(Millis size, Millis advance, Millis grace = 0);
    static WindowSpec sliding(Millis time_difference, Millis grace = 0);
    static WindowSpec session(Millis inactivity_gap, Millis grace = 0);

    // Throws stoatflow::Error (22023) with a message naming the bad parameter.
    void validate() const;

    // size, D or gap: the "window length" term of the segment formula.
    Millis length() const { return size; }

    // The longest a window can stay open: size + grace, 2·D + grace, gap + grace.
    Millis min_retention() const;

    // The close rule, in one place: a window [start, end) — for a session, end is
    // last + 1 ms — is closed once the watermark reaches close_point(end).
    Millis close_point(Millis end) const;
    bool is_closed(Millis end, Millis watermark) const {
        return (closed_through != kNoTime && end <= closed_through) ||
               (watermark != kNoTime && watermark >= close_point(end));
    }
    // The largest end closed at `watermark` (closed_through included; kNoTime when none is):
    // every window with end ≤ it is closed. Committed with the state, it becomes the
    // closed_through of the engine that restores that state.
    Millis closed_frontier(Millis watermark) const;

    std::string describe() const;
    bool operator==(const WindowSpec& o) const {
        return kind == o.kind && size == o.size && advance == o.advance && grace == o.grace;
    }
};

// Retention: NULL (kNoTime) means the minimum; below the minimum is an error.
Millis resolve_retention(const WindowSpec& spec, Millis requested);

}  // namespace stoatflow::core
