#!/usr/bin/env bash
# Fails unless every pg_regress test in sql/ is listed in test/schedule (and vice versa) and has
# an expected/*.out file. Install scripts (sql/stoatflow--*.sql) are not tests and are skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

scheduled=$(awk '$1 == "test:" { for (i = 2; i <= NF; i++) print $i }' test/schedule | sort)
on_disk=$(for f in sql/*.sql; do
    name=$(basename "$f" .sql)
    case "$name" in stoatflow--*) continue ;; esac
    echo "$name"
done | sort)

status=0
for name in $(comm -23 <(echo "$on_disk") <(echo "$scheduled")); do
    echo "check_schedule: sql/$name.sql is not listed in test/schedule" >&2
    status=1
done
for name in $(comm -13 <(echo "$on_disk") <(echo "$scheduled")); do
    echo "check_schedule: test/schedule lists $name but sql/$name.sql does not exist" >&2
    status=1
done
for name in $scheduled; do
    if [ ! -f "expected/$name.out" ]; then
        echo "check_schedule: expected/$name.out is missing" >&2
        status=1
    fi
done
duplicates=$(echo "$scheduled" | uniq -d)
if [ -n "$duplicates" ]; then
    echo "check_schedule: listed more than once in test/schedule: $duplicates" >&2
    status=1
fi
if [ "$status" -eq 0 ]; then
    echo "check_schedule: $(echo "$scheduled" | wc -w) tests, all scheduled"
fi
exit "$status"
