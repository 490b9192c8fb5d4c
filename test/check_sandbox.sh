#!/usr/bin/env bash
# One owner of "run an owner's code": only the sandbox (src/pg/border/sandbox.cpp) switches the current
# user. A second place that calls SetUserIdAndSecContext (or SetUserId / SetSessionUserId) is a
# second, weaker copy of a security rule: fail.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t hits < <(git grep -lE '\bSet(UserIdAndSecContext|UserIdAndContext|SessionUserId|CurrentRoleId)\s*\(' -- 'src/*.cpp' 'src/*.hpp' 'include/*.hpp' || true)
if [ "${#hits[@]}" -ne 1 ] || [ "${hits[0]}" != src/pg/border/sandbox.cpp ]; then
    echo "check_sandbox: user switches outside src/pg/border/sandbox.cpp: ${hits[*]:-none at all}" >&2
    exit 1
fi
echo "check_sandbox: only src/pg/border/sandbox.cpp switches users"
