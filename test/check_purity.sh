#!/usr/bin/env bash
# The pure rooms (src/README.md) never include PostgreSQL: every file under src/{core,format,kafka,flow,registry}
# and include/stoatflow/{core,format,kafka,flow,registry} is checked, and every header there includes
# stoatflow/core/no_postgres.hpp (which refuses to compile next to postgres.h). The Makefile
# builds the same folders without PostgreSQL's include path; this is the same rule in review.
set -euo pipefail
root=${1:-.}
cd "$root"
rooms=(core format kafka flow registry)
files=()
for r in "${rooms[@]}"; do
    while IFS= read -r f; do files+=("$f"); done < <(find "src/$r" "include/stoatflow/$r" -type f \( -name '*.cpp' -o -name '*.hpp' \) | sort)
done
[ "${#files[@]}" -gt 0 ] || { echo "check_purity: no files found under the pure rooms" >&2; exit 1; }
if grep -nE '#\s*include\s*[<"](postgres|postgres_ext|fmgr|funcapi|miscadmin|executor/|utils/|catalog/|access/|nodes/|storage/|lib/|commands/|parser/|pgstat|tcop/|optimizer/)' "${files[@]}"; then
    echo "check_purity: the files above are in a pure room and include PostgreSQL headers" >&2
    exit 1
fi
missing=()
for f in "${files[@]}"; do
    case $f in
    *.hpp) [ "$f" = include/stoatflow/core/no_postgres.hpp ] || grep -q '#include "stoatflow/core/no_postgres.hpp"' "$f" || missing+=("$f") ;;
    esac
done
if [ "${#missing[@]}" -gt 0 ]; then
    printf '  %s\n' "${missing[@]}" >&2
    echo "check_purity: the headers above are in a pure room and do not include stoatflow/core/no_postgres.hpp" >&2
    exit 1
fi
# The rooms' arrows (src/README.md): a pure room includes only the rooms it may.
declare -A may=([core]="core" [format]="core format" [kafka]="core format kafka" [flow]="core format flow" [registry]="core registry")
wrong=()
for f in "${files[@]}"; do
    room=${f#src/}
    room=${room#include/stoatflow/}
    room=${room%%/*}
    while IFS= read -r inc; do
        [[ " ${may[$room]} " == *" $inc "* ]] || wrong+=("$f includes stoatflow/$inc/")
    done < <(grep -oE '#include "stoatflow/[a-z_]+/' "$f" | sed -E 's#.*"stoatflow/##; s#/$##' | sort -u)
done
if [ "${#wrong[@]}" -gt 0 ]; then
    printf '  %s\n' "${wrong[@]}" >&2
    echo "check_purity: the includes above go against the rooms' arrows (src/README.md)" >&2
    exit 1
fi
echo "check_purity: ${#files[@]} files in src/{core,format,kafka,flow,registry} and include/stoatflow/{core,format,kafka,flow,registry} are free of PostgreSQL"
