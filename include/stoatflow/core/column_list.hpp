// The `columns` list of create_source, in the style of JSON_TABLE's COLUMNS
// (`name type [PATH '$.a.b']`, comma separated), split into its parts. Type names are left as
// text: the PostgreSQL layer resolves them with PostgreSQL's own type-name parser.
#pragma once
#include "stoatflow/core/no_postgres.hpp"
#include "stoatflow/core/metadata_columns.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace stoatflow::core {

struct ColumnDecl {
    std::string name;               // as an identifier: unquoted names folded to lower case
    std::string type;               // the type name as written (trimmed)
    std::vector<std::string> path;  // members from the document root; [name] without PATH
    bool path_given = false;        // the list gave PATH (a CSV source's columns take none)
    std::size_t position = 0;       // 1-based character position of the name in the list
};

// The metadata columns every source with `columns` has: stoatflow/core/metadata_columns.hpp.

// Splits the list. Throws stoatflow::Error: 42601 for a syntax error (the message names the
// position and the text there), 42701 for a duplicate name or one of the metadata columns'
// names, 42622 for a name longer than 63 bytes.
std::vector<ColumnDecl> parse_column_list(const std::string& text);

// A PATH literal's content ('$.a."b c"') as members; throws 42601 naming what is wrong.
std::vector<std::string> parse_json_path(const std::string& path);

}  // namespace stoatflow::core
