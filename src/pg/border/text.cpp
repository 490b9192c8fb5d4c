// Identifier quoting: PostgreSQL's own rule (quote_identifier), keywords included.
#include "stoatflow/pg/border/guard.hpp"
#include "stoatflow/pg/border/text.hpp"

extern "C" {
#include "utils/builtins.h"
}

namespace stoatflow::pg {

std::string quote_ident(const std::string& name) {
    // PostgreSQL's own rule, keywords included ("order", "end", "user" must be quoted).
    const char* quoted = pg_call([&] { return quote_identifier(name.c_str()); });
    return std::string(quoted);
}

}  // namespace stoatflow::pg
