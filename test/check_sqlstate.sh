#!/usr/bin/env bash
# One spelling of every SQLSTATE: the sqlstate:: constants of include/stoatflow/core/error.hpp.
# C++ raises with them (core::Error) or hands them to errcode() through pg::pg_errcode; a
# PostgreSQL ERRCODE_ macro elsewhere is a second spelling: fail.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t hits < <(git grep -nE '\bERRCODE_[A-Z_]+|errcode\(MAKE_SQLSTATE' -- 'src/*.cpp' 'src/*.hpp' 'include/*.hpp' || true)
if [ "${#hits[@]}" -gt 0 ]; then
    printf '  %s\n' "${hits[@]}" >&2
    echo "check_sqlstate: SQLSTATEs above are not taken from sqlstate:: (include/stoatflow/core/error.hpp)" >&2
    exit 1
fi
echo "check_sqlstate: every SQLSTATE in src/ and include/ comes from sqlstate::"
