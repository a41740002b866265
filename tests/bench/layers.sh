#!/usr/bin/env bash
# Private layers (make bench; not in CI): the end of an untainted session
# that changed 100 of 10,000 memories — its layer's changes, the merge by
# meaning, the provenance record, the layer's removal (BenchmarkLayerEnd,
# src/launcher; goal <= 100 ms/op) — and the making of the session's
# snapshot at its start (make-ms/op). COUNT=N repeats it (default 3).
set -euo pipefail
cd "$(dirname "$0")/../.."
go test ./src/launcher -run '^$' -bench '^BenchmarkLayerEnd$' -benchtime 20x -count "${COUNT:-3}"
