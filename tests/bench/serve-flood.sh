#!/usr/bin/env bash
# hobbs serve under a flood (make bench; the same test runs in the e2e
# suite with its bounds): tests/e2e TestServeUnderFlood sends 5,000 signed
# deliveries from 500 senders over loopback against one trigger (paced
# over 25 s), then 20,000 unsigned requests, and reports the answers by
# status, the median answer time of the first and the last 500 deliveries
# and their ratio (goal <= 1.5), the most runs waiting (bound 20), serve's
# peak RSS (goal < 100 MB) and the growth of the logs (goal < 1 MB).
# Needs what the e2e suite needs (Docker Engine, apt-get). ROUNDS=N repeats.
set -euo pipefail
cd "$(dirname "$0")/../.."
go test ./tests/e2e -run '^TestServeUnderFlood$' -count "${ROUNDS:-1}" -v -timeout 30m |
  grep -E 'serve_limits_test.go:[0-9]+: (5000 deliveries|serve.s peak RSS|20,000 unsigned)|^(--- |ok|FAIL)'
# The listener alone, in process, without runs: the same ratio.
go test ./src/serve -run '^$' -bench '^BenchmarkFloodAnswers$' -benchtime 3x -count 1 | grep -E '^Benchmark'
