#!/usr/bin/env bash
# Memory benchmark (issue 3), not run in CI. Builds hobbs, generates a corpus
# of ARCHIVE archived + ACTIVE active memories (~400 bytes each), then times,
# interleaved, RUNS times each:
#   search:  hobbs memory search LITERAL --all -l   vs  rg -il LITERAL active archive
#   context: hobbs memory context                   vs  rg -c status active
#   recall:  hobbs memory recall QUESTION --all     (goal: <= 50 ms)
#   and hobbs --version, the cost of starting the process
# and checks that search and rg report the same files. Prints medians and
# ratios (goal: search <= 0.25x rg, context <= 1.5x rg). With BASELINE (a
# hobbs binary) or BASELINE_REF (a git ref to build one from, e.g. main), it
# also times the first index build of both, BUILDS interleaved rounds
# (goal: hobbs <= 1.2x the baseline).
#
#   tests/bench/memory.sh                 # 100000 + 10000, 11 runs
#   ARCHIVE=20000 ACTIVE=2000 RUNS=5 tests/bench/memory.sh
#   BASELINE_REF=main BUILDS=3 tests/bench/memory.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
ARCHIVE=${ARCHIVE:-100000}
ACTIVE=${ACTIVE:-10000}
RUNS=${RUNS:-11}
LITERAL=${LITERAL:-zanzibarquokka}
command -v rg >/dev/null || { echo "memory bench: ripgrep (rg) is required: apt-get install -y ripgrep" >&2; exit 3; }

work=$(mktemp -d "${TMPDIR:-/tmp}/hobbs-membench.XXXXXX")
trap 'rm -rf "$work"' EXIT
export HOBBS_HOME="$work/instance"
bin="$work/hobbs"
go build -o "$bin" ./cmd/hobbs
if [ -n "${BASELINE_REF:-}" ]; then
  mkdir "$work/baseline-src"
  git archive "$BASELINE_REF" | tar -x -C "$work/baseline-src"
  (cd "$work/baseline-src" && go build -o "$work/baseline" ./cmd/hobbs)
  BASELINE=$work/baseline
fi
"$bin" init --no-input >/dev/null 2>&1
echo "memory bench: generating $ARCHIVE archived + $ACTIVE active memories in $work" >&2
go run ./tests/bench/memgen -dir "$HOBBS_HOME/memory" -archive "$ARCHIVE" -active "$ACTIVE" -rare "$LITERAL"
cd "$HOBBS_HOME/memory"

# Build the index once (derived data; the first search pays for it), then
# let the racy window pass so time stamps are trusted.
t0=$(date +%s%N)
"$bin" memory search "$LITERAL" --all -l >/dev/null
t1=$(date +%s%N)
echo "memory bench: first search (builds the index): $(( (t1 - t0) / 1000000 )) ms" >&2
sleep 3
"$bin" memory search "$LITERAL" --all -l >/dev/null
"$bin" memory context >/dev/null   # first context of the day updates last_accessed

# A question: the rare word and three words of an archived memory.
QUESTION="what do I know about $LITERAL and $(awk 'f == 2 && NF {print $1, $2, $3; exit} /^---$/ {f++}' "archive/$(ls archive | sed -n 500p)")"
"$bin" memory recall "$QUESTION" --all >/dev/null

# Same hits.
"$bin" memory search "$LITERAL" --all -l | cut -f2 | sed 's|^memory/||' | sort >"$work/hobbs.hits"
rg -il "$LITERAL" active archive | sort >"$work/rg.hits"
if ! cmp -s "$work/hobbs.hits" "$work/rg.hits"; then
  echo "memory bench: FAIL: hobbs and rg found different files" >&2
  diff "$work/hobbs.hits" "$work/rg.hits" >&2 || true
  exit 1
fi
echo "memory bench: same $(wc -l <"$work/rg.hits") hits as rg" >&2

ms() { local a b; a=$(date +%s%N); "$@" >/dev/null; b=$(date +%s%N); echo $(( (b - a) / 100000 )); } # 0.1 ms
median() { sort -n | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.1f", m/10}'; }

: >"$work/s.h"; : >"$work/s.r"; : >"$work/c.h"; : >"$work/c.r"; : >"$work/r.h"; : >"$work/v.h"
for _ in $(seq "$RUNS"); do
  ms "$bin" --version >>"$work/v.h"
  ms rg -il "$LITERAL" active archive >>"$work/s.r" || true
  ms "$bin" memory search "$LITERAL" --all -l >>"$work/s.h"
  ms rg -c status active >>"$work/c.r"
  ms "$bin" memory context >>"$work/c.h"
  ms "$bin" memory recall "$QUESTION" --all >>"$work/r.h"
done
sh=$(median <"$work/s.h"); sr=$(median <"$work/s.r"); ch=$(median <"$work/c.h"); cr=$(median <"$work/c.r"); rh=$(median <"$work/r.h"); vh=$(median <"$work/v.h")
# A search right after the trust period ran out checks every archived file.
full=$( { for _ in 1 2 3; do ms "$bin" memory search "$LITERAL" --all -l --full; done; } | median)
awk -v sh="$sh" -v sr="$sr" -v ch="$ch" -v cr="$cr" -v rh="$rh" -v vh="$vh" -v full="$full" -v a="$ARCHIVE" -v n="$ACTIVE" -v runs="$RUNS" 'BEGIN {
  printf "memory bench (%d archived + %d active, median of %d interleaved runs)\n", a, n, runs
  printf "  search  hobbs %7.1f ms   rg -il %7.1f ms   ratio %.3f  (goal <= 0.25)\n", sh, sr, sh / sr
  printf "  context hobbs %7.1f ms   rg -c  %7.1f ms   ratio %.3f  (goal <= 1.5)\n", ch, cr, ch / cr
  printf "  search --full (every file checked) %.1f ms   ratio %.3f to rg -il\n", full, full / sr
  printf "  recall --all  hobbs %7.1f ms   (goal <= 50 ms)   ratio %.3f to search --all\n", rh, rh / sh
  printf "  process start (hobbs --version) %.1f ms: part of every figure above\n", vh
}'
[ -n "${BASELINE:-}" ] || exit 0

# The first index build (after the index is deleted), hobbs and the
# baseline taking turns at going first: wall time, and CPU time (user and
# system), which a busy machine disturbs much less.
BUILDS=${BUILDS:-3}
: >"$work/b.h"; : >"$work/b.b"
build() { rm -rf .index; local TIMEFORMAT='%R %U %S'; { time "$1" memory search "$LITERAL" --all -l >/dev/null; } 2>&1; }
for i in $(seq "$BUILDS"); do
  if [ $((i % 2)) = 1 ]; then build "$bin" >>"$work/b.h"; build "$BASELINE" >>"$work/b.b"
  else build "$BASELINE" >>"$work/b.b"; build "$bin" >>"$work/b.h"; fi
done
col() { awk -v c="$1" '{print (c == 1) ? $1 : $2 + $3}' "$2" | median1; }
median1() { sort -n | awk '{v[NR]=$1} END {printf "%.2f", (NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2}'; }
awk -v bw="$(col 1 "$work/b.h")" -v bbw="$(col 1 "$work/b.b")" -v bc="$(col 2 "$work/b.h")" -v bbc="$(col 2 "$work/b.b")" \
  -v builds="$BUILDS" -v h="$(awk '{printf "%.1f/%.1f ", $1, $2 + $3}' "$work/b.h")" -v b="$(awk '{printf "%.1f/%.1f ", $1, $2 + $3}' "$work/b.b")" 'BEGIN {
  printf "  first index build, median of %d: hobbs %.1f s (CPU %.1f s)   baseline %.1f s (CPU %.1f s)\n", builds, bw, bc, bbw, bbc
  printf "    ratio: wall %.2f, CPU %.2f  (goal <= 1.2)\n", bw / bbw, bc / bbc
  printf "    per round, wall/CPU s: hobbs %s  baseline %s\n", h, b
}'
