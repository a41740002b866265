#!/usr/bin/env bash
# hobbs serve's latency (make bench; not in CI): from a signed webhook's
# arrival, and from the paired owner's Telegram message (a FAKE Bot API
# server), to the FAKE claude's start, each beside `docker run --rm IMAGE
# true` on the same image, interleaved (tests/e2e BenchmarkServe). Goal:
# both ratios <= 1.5. Needs what the e2e suite needs (Docker Engine,
# apt-get). ROUNDS=N changes the rounds (default 9).
set -euo pipefail
cd "$(dirname "$0")/../.."
go test ./tests/e2e -run '^$' -bench '^BenchmarkServe$' -benchtime "${ROUNDS:-9}x" -count 1 -timeout 30m
