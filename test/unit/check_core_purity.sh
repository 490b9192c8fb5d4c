#!/usr/bin/env bash
# Fails if any file of the pure core (and the pure parts of the PostgreSQL layer: the record
# path, the worker's clock and policy) includes a PostgreSQL header.
set -euo pipefail
root=${1:-.}
if grep -nE '#\s*include\s*[<"](postgres|postgres_ext|fmgr|funcapi|miscadmin|executor/|utils/|catalog/|access/|nodes/|storage/|lib/|commands/|parser/|pgstat)' \
    "$root"/src/core/*.cpp "$root"/include/stoatflow/core/*.hpp \
    "$root"/src/pg/record_path.cpp "$root"/include/stoatflow/pg/record_path.hpp \
    "$root"/include/stoatflow/pg/clock.hpp "$root"/include/stoatflow/pg/worker_policy.hpp \
    "$root"/include/stoatflow/pg/limits.hpp "$root"/include/stoatflow/pg/text.hpp; then
    echo "core files above include PostgreSQL headers" >&2
    exit 1
fi
echo "core is free of PostgreSQL headers"
