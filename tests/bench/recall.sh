#!/usr/bin/env bash
# Recall benchmark (issue 34), not run in CI: `hobbs memory recall` against
# SQLite FTS5's bm25() on LoCoMo's development conversations (one memory per
# dialog turn; every question of categories 1-4 asked of both, each query a
# process of its own). Prints recall@5, recall@10, MRR@10, ms per query and
# the ratios (goal: recall@5 >= 1.15x FTS5's, <= 20 ms per query). See
# tests/bench/recallbench.
#
#   tests/bench/recall.sh
#   LOCOMO=/path/to/locomo-dev.json SQLITE3=/usr/bin/sqlite3 tests/bench/recall.sh
#
# The data is licensed for non-commercial research use: it is read where it
# lies and never copied into the repository.
set -euo pipefail
cd "$(dirname "$0")/../.."
LOCOMO=${LOCOMO:-../shared/locomo/locomo-dev.json}
SQLITE3=${SQLITE3:-sqlite3}
[ -r "$LOCOMO" ] || { echo "recall bench: no LoCoMo data at $LOCOMO (set LOCOMO=path/to/locomo-dev.json)" >&2; exit 3; }
command -v "$SQLITE3" >/dev/null || { echo "recall bench: sqlite3 with FTS5 is required: apt-get install -y sqlite3" >&2; exit 3; }
work=$(mktemp -d "${TMPDIR:-/tmp}/hobbs-recallbench.XXXXXX")
trap 'rm -rf "$work"' EXIT
go build -o "$work/hobbs" ./cmd/hobbs
go build -o "$work/recallbench" ./tests/bench/recallbench
"$work/recallbench" -data "$LOCOMO" -hobbs "$work/hobbs" -sqlite3 "$(command -v "$SQLITE3")" -work "$work"
