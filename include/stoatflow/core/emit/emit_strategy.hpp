// The two emit strategies of an aggregation (README, "Emit strategies") and their SQL names.
#pragma once
#include "stoatflow/core/no_postgres.hpp"

#include <string>

namespace stoatflow::core {

enum class EmitStrategy { OnWindowUpdate, OnWindowClose };
const char* to_string(EmitStrategy e);
// 'on_window_update' | 'on_window_close'; throws Error (22023) otherwise.
EmitStrategy emit_strategy_from_name(const std::string& name);

}  // namespace stoatflow::core
