#!/usr/bin/env bash
# make bench: runs every benchmark script in tests/bench (not in CI).
set -uo pipefail
cd "$(dirname "$0")"
status=0
for f in ./*.sh; do
  [ "$(basename "$f")" = run.sh ] && continue
  echo "== $f"
  bash "$f" || status=1
done
exit $status
