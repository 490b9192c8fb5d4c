#!/usr/bin/env bash
# Fails when a tracked C++ file differs from what the repository's .clang-format makes of it.
# Fix with: clang-format -i $(git ls-files '*.cpp' '*.hpp' '*.h')
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h')
bad=0
for f in "${files[@]}"; do
    if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
        echo "format_check: $f differs from .clang-format (clang-format -i $f)" >&2
        bad=$((bad + 1))
    fi
done
echo "format_check: ${#files[@]} files, $bad differ"
[ "$bad" -eq 0 ]
