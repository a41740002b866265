#!/usr/bin/env bash
# The cost of interception (secrets bound to a host): HTTPS requests through
# the proxy to a local TLS server, the host an opaque tunnel (the anchor) or
# intercepted (TLS with the session CA, placeholder replaced, response
# masked, TLS again). Go benchmark BenchmarkHTTPSRequest, ROUNDS rounds;
# prints the median us/req of each and the ratio to the tunnel.
#
# BASELINE_REF=REF (e.g. BASELINE_REF=main) builds the same benchmark from
# a git ref too and runs the two alternately, round by round, on the same
# machine; it then prints each one's medians and the ratio of this tree's
# intercepted requests to the baseline's (the regression check: interception
# must stay within 1.2x of the baseline). On a loaded machine wall time
# swings more than any difference between builds, so each round also
# measures the CPU time (user + system, /usr/bin/time) of 2,000 intercepted
# requests on a kept-alive connection — client, proxy and server together —
# and prints the median of the per-round ratios.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-5}
GO=${GO:-go}
tmp=$(mktemp -d /tmp/hobbs-secretsbench-XXXXXX)
cleanup() {
  [ -n "${worktree:-}" ] && git worktree remove --force "$worktree" >/dev/null 2>&1
  rm -rf "$tmp"
}
trap cleanup EXIT

$GO test -c -o "$tmp/current.test" ./src/egress/
if [ -n "${BASELINE_REF:-}" ]; then
  worktree=$tmp/baseline-src
  git worktree add --detach -q "$worktree" "$BASELINE_REF"
  (cd "$worktree" && $GO test -c -o "$tmp/baseline.test" ./src/egress/)
fi

run() { # BIN: one round, the benchmark lines
  "$1" -test.run '^$' -test.bench 'HTTPSRequest' -test.benchtime 500x -test.count 1 2>/dev/null | grep '^BenchmarkHTTPSRequest'
}
cpu() { # BIN: CPU microseconds per intercepted kept-alive request, whole process
  { /usr/bin/time -f "%U %S" "$1" -test.run '^$' -test.bench 'HTTPSRequest/intercepted/keepalive$' \
      -test.benchtime 2000x -test.count 1 >/dev/null; } 2>&1 | tail -1 | awk '{print ($1+$2)/2000*1e6}'
}
: > "$tmp/current.out"
: > "$tmp/baseline.out"
: > "$tmp/cpu.out"
for r in $(seq "$ROUNDS"); do
  run "$tmp/current.test" >> "$tmp/current.out"
  if [ -n "${BASELINE_REF:-}" ]; then
    run "$tmp/baseline.test" >> "$tmp/baseline.out"
    if [ -x /usr/bin/time ]; then
      echo "$(cpu "$tmp/current.test") $(cpu "$tmp/baseline.test")" >> "$tmp/cpu.out"
    fi
  fi
done

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
med() { grep "$2/$3" "$tmp/$1.out" | awk '{print $3}' | median; }
for conn in keepalive new; do
  t=$(med current tunnel "$conn"); i=$(med current intercepted "$conn")
  awk -v c="$conn" -v t="$t" -v i="$i" 'BEGIN {printf "%-10s tunnel %8.0f us/req  intercepted %8.0f us/req  ratio %.2fx\n", c, t/1000, i/1000, i/t}'
  if [ -n "${BASELINE_REF:-}" ]; then
    bt=$(med baseline tunnel "$conn"); bi=$(med baseline intercepted "$conn")
    awk -v c="$conn" -v t="$bt" -v i="$bi" -v ref="$BASELINE_REF" 'BEGIN {printf "%-10s tunnel %8.0f us/req  intercepted %8.0f us/req  ratio %.2fx  (%s)\n", c, t/1000, i/1000, i/t, ref}'
    awk -v c="$conn" -v i="$i" -v b="$bi" -v ref="$BASELINE_REF" 'BEGIN {printf "%-10s intercepted, this tree / %s: %.2fx\n", c, ref, i/b}'
  fi
done
if [ -s "$tmp/cpu.out" ]; then
  awk '{print $1/$2}' "$tmp/cpu.out" | sort -n | awk -v ref="$BASELINE_REF" '{a[NR]=$1; s=s sprintf(" %.2f", $1)} END {printf "keepalive  intercepted CPU per request, this tree / %s: %.2fx (rounds:%s)\n", ref, a[int((NR+1)/2)], s}'
  awk '{c+=$1; b+=$2} END {printf "keepalive  intercepted CPU per request: this tree %.0f us, baseline %.0f us (means)\n", c/NR, b/NR}' "$tmp/cpu.out"
fi
