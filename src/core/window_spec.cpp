// Window definitions: validation with messages a user can act on, the close rule,
// and the minimum retention per kind.
#include "stoatflow/core/window_spec.hpp"

#include "stoatflow/core/error.hpp"
#include "stoatflow/core/limits.hpp"

#include <algorithm>

namespace stoatflow::core {

const char* to_string(WindowKind kind) {
    switch (kind) {
    case WindowKind::Tumbling: return "tumbling";
    case WindowKind::Hopping: return "hopping";
    case WindowKind::Sliding: return "sliding";
    case WindowKind::Session: return "session";
    }
    return "unknown";
}

WindowKind window_kind_from_name(const std::string& name) {
    for (WindowKind k :
         {WindowKind::Tumbling, WindowKind::Hopping, WindowKind::Sliding, WindowKind::Session})
        if (name == to_string(k)) return k;
    throw Error(sqlstate::kInvalidParameterValue, "unknown window kind \"" + name + "\"",
                "Use stoatflow.tumbling(), hopping(), sliding() or session().");
}

WindowSpec WindowSpec::tumbling(Millis size, Millis grace) {
    return {WindowKind::Tumbling, size, size, grace};
}
WindowSpec WindowSpec::hopping(Millis size, Millis advance, Millis grace) {
    return {WindowKind::Hopping, size, advance, grace};
}
WindowSpec WindowSpec::sliding(Millis time_difference, Millis grace) {
    return {WindowKind::Sliding, time_difference, 0, grace};
}
WindowSpec WindowSpec::session(Millis inactivity_gap, Millis grace) {
    return {WindowKind::Session, inactivity_gap, 0, grace};
}

namespace {
const char* length_name(WindowKind kind) {
    switch (kind) {
    case WindowKind::Sliding: return "time_difference";
    case WindowKind::Session: return "inactivity_gap";
    default: return "size";
    }
}

[[noreturn]] void invalid(const std::string& msg, const std::string& hint) {
    throw Error(sqlstate::kInvalidParameterValue, msg, hint);
}
}  // namespace

void WindowSpec::validate() const {
    const std::string what = std::string(to_string(kind)) + " window ";
    if (size <= 0)
        invalid(what + length_name(kind) + " must be positive",
                "Use an interval greater than zero, e.g. '5 minutes'.");
    if (size > kMaxWindowMillis)
        invalid(what + length_name(kind) + " must be at most 10 years", {});
    if (grace < 0)
        invalid(what + "grace must not be negative",
                "Use '0' for no grace, or a positive interval to accept late records.");
    if (grace > kMaxWindowMillis) invalid(what + "grace must be at most 10 years", {});
    if (kind == WindowKind::Hopping) {
        if (advance <= 0)
            invalid("hopping window advance must be positive",
                    "Use an advance greater than zero and no larger than the size.");
        if (advance > size)
            invalid("hopping window advance must not be larger than its size",
                    "An advance equal to the size is a tumbling window; a larger one would "
                    "leave gaps no window covers.");
        // Checked after size and advance are bounded, so the quotient cannot overflow.
        const Millis per_record = (size + advance - 1) / advance;
        if (per_record > kMaxWindowsPerRecord)
            invalid("hopping window puts each record into " + std::to_string(per_record) +
                        " windows (size / advance), more than the limit of " +
                        std::to_string(kMaxWindowsPerRecord),
                    "Use a larger advance: at least size / " +
                        std::to_string(kMaxWindowsPerRecord) + ".");
    } else if (kind == WindowKind::Tumbling && advance != size) {
        invalid("tumbling window advance must equal its size", {});
    }
}

Millis WindowSpec::min_retention() const {
    return kind == WindowKind::Sliding ? 2 * size + grace : size + grace;
}

Millis WindowSpec::close_point(Millis end) const {
    // Windows are reported as [start, end); a session's end is last + 1 ms. A window
    // closes once W ≥ end + grace; a session additionally waits out its gap.
    return kind == WindowKind::Session ? end + size + grace : end + grace;
}

Millis WindowSpec::closed_frontier(Millis watermark) const {
    // is_closed(end, W) ⇔ end ≤ W − (close_point(end) − end): the offset is the same for every end.
    const Millis by_watermark = watermark == kNoTime ? kNoTime : watermark - (close_point(0) - 0);
    if (closed_through == kNoTime) return by_watermark;
    if (by_watermark == kNoTime) return closed_through;
    return std::max(closed_through, by_watermark);
}

std::string WindowSpec::describe() const {
    std::string s = std::string(to_string(kind)) + "(" + std::to_string(size) + "ms";
    if (kind == WindowKind::Hopping) s += ", advance " + std::to_string(advance) + "ms";
    s += ", grace " + std::to_string(grace) + "ms)";
    return s;
}

Millis resolve_retention(const WindowSpec& spec, Millis requested) {
    const Millis min = spec.min_retention();
    if (requested == kNoTime) return min;
    if (requested < min)
        throw Error(sqlstate::kInvalidParameterValue,
                    "retention " + std::to_string(requested) + " ms is below the minimum " +
                        std::to_string(min) + " ms for " + spec.describe(),
                    "Retention must cover the longest a window can stay open: size + grace "
                    "(tumbling, hopping), 2 * time_difference + grace (sliding), gap + grace "
                    "(session). Leave it NULL for the minimum.");
    if (requested > 10 * kMaxWindowMillis)
        throw Error(sqlstate::kInvalidParameterValue, "retention must be at most 100 years");
    return requested;
}

}  // namespace stoatflow::core
