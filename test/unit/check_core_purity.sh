#!/usr/bin/env bash
# Fails if any file of the pure core includes a PostgreSQL header.
set -euo pipefail
root=${1:-.}
if grep -nE '#\s*include\s*[<"](postgres|postgres_ext|fmgr|funcapi|miscadmin|executor/|utils/|catalog/|access/|nodes/|storage/|lib/|commands/|parser/|pgstat)' \
    "$root"/src/core/*.cpp "$root"/include/stoatflow/core/*.hpp; then
    echo "core files above include PostgreSQL headers" >&2
    exit 1
fi
echo "core is free of PostgreSQL headers"
