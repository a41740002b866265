#!/usr/bin/env bash
# make bench: run every tests/bench/*.sh benchmark script (except this one).
set -euo pipefail
cd "$(dirname "$0")"
status=0
for s in ./*.sh; do
  [ "$(basename "$s")" = run.sh ] && continue
  echo "=== $s"
  bash "$s" || status=1
done
exit $status
