#!/usr/bin/env bash
# The cost of interception (secrets bound to a host): HTTPS requests through
# the proxy to a local TLS server, the host an opaque tunnel (the anchor) or
# intercepted (TLS with the session CA, placeholder replaced, response
# masked, TLS again). Go benchmark BenchmarkHTTPSRequest, ROUNDS rounds in
# one run; prints the median ns/op of each and the ratio to the tunnel.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-5}
out=$(go test -run '^$' -bench 'HTTPSRequest' -benchtime 500x -count "$ROUNDS" ./src/egress/ 2>/dev/null | grep '^BenchmarkHTTPSRequest')
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for conn in keepalive new; do
  t=$(echo "$out" | grep "tunnel/$conn" | awk '{print $3}' | median)
  i=$(echo "$out" | grep "intercepted/$conn" | awk '{print $3}' | median)
  awk -v c="$conn" -v t="$t" -v i="$i" 'BEGIN {printf "%-10s tunnel %8.0f us/req  intercepted %8.0f us/req  ratio %.2fx\n", c, t/1000, i/1000, i/t}'
done
