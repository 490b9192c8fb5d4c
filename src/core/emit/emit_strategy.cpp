// The emit strategies' SQL names, both ways.
#include "stoatflow/core/emit/emit_strategy.hpp"

#include "stoatflow/core/error.hpp"

namespace stoatflow::core {

const char* to_string(EmitStrategy e) {
    return e == EmitStrategy::OnWindowUpdate ? "on_window_update" : "on_window_close";
}

EmitStrategy emit_strategy_from_name(const std::string& name) {
    for (EmitStrategy e : {EmitStrategy::OnWindowUpdate, EmitStrategy::OnWindowClose})
        if (name == to_string(e)) return e;
    throw Error(sqlstate::kInvalidParameterValue, "unknown emit strategy \"" + name + "\"",
                "Use 'on_window_update' (a row per change, final when closed) or "
                "'on_window_close' (one final row per window).");
}

}  // namespace stoatflow::core
