#!/usr/bin/env bash
# Backup benchmark (issue 44), not run in CI. Builds hobbs, makes an
# instance with MEMS active memories (tests/bench/memgen), then, RUNS
# interleaved rounds, each into fresh repositories (cold restic caches):
#   first:       hobbs backup                 vs  restic backup INSTANCE (the same directory, run directly)
# and, after the last round, with 10 memories changed:
#   incremental: hobbs backup                 vs  restic backup INSTANCE
# Then a sync of SYNCED (1000) changed memories into a second device,
# SYNC_RUNS (5) times, each from the same starting point.
# Prints medians and ratios. Goals: first backup <= 1.3x restic run
# directly; incremental hobbs backup <= 2 s; sync <= 1 s (the line SYNC:).
#
#   tests/bench/backup.sh                  # 10000 memories, 5 rounds
#   MEMS=2000 RUNS=3 tests/bench/backup.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
MEMS=${MEMS:-10000}
RUNS=${RUNS:-5}
command -v restic >/dev/null || { echo "backup bench: restic is required: apt-get install -y restic" >&2; exit 3; }

work=$(mktemp -d "${TMPDIR:-/tmp}/hobbs-backupbench.XXXXXX")
trap 'rm -rf "$work"' EXIT
export HOBBS_HOME="$work/instance"
export XDG_CACHE_HOME="$work/cache" XDG_STATE_HOME="$work/state" XDG_CONFIG_HOME="$work/config"
bin="$work/hobbs"
go build -o "$bin" ./cmd/hobbs
"$bin" init --no-input >/dev/null 2>&1
"$bin" vault init >/dev/null 2>&1
echo "backup bench: generating $MEMS memories in $work" >&2
go run ./tests/bench/memgen -dir "$HOBBS_HOME/memory" -archive 0 -active "$MEMS"
printf 'bench-password\n' > "$work/pw"

ms() { echo $(( ($2 - $1) / 1000000 )); }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
h_times=() r_times=()
for i in $(seq 1 "$RUNS"); do
  rm -rf "$work/cache" "$work/hrepo" "$work/rrepo"
  RESTIC_PASSWORD_FILE="$work/pw" "$bin" backup init "$work/hrepo" --device bench >/dev/null 2>&1
  RESTIC_PASSWORD_FILE="$work/pw" restic init -q --repo "$work/rrepo" >/dev/null
  t0=$(date +%s%N)
  "$bin" backup --scheduled >/dev/null
  t1=$(date +%s%N)
  RESTIC_PASSWORD_FILE="$work/pw" restic backup -q --repo "$work/rrepo" "$HOBBS_HOME" >/dev/null
  t2=$(date +%s%N)
  h_times+=("$(ms "$t0" "$t1")") r_times+=("$(ms "$t1" "$t2")")
  echo "backup bench: round $i: hobbs backup $(ms "$t0" "$t1") ms, restic backup $(ms "$t1" "$t2") ms" >&2
done
h=$(printf '%s\n' "${h_times[@]}" | median)
r=$(printf '%s\n' "${r_times[@]}" | median)
echo "first backup of $MEMS memories: hobbs backup ${h} ms, restic backup ${r} ms, ratio $(awk "BEGIN {printf \"%.2f\", $h/$r}") (goal <= 1.30)"

# Incremental: 10 memories changed since the last backup of each repository.
i=0
for f in "$HOBBS_HOME"/memory/active/*.md; do
  printf '\nreinforced in the benchmark\n' >> "$f"
  i=$((i+1)); [ $i -ge 10 ] && break
done
t0=$(date +%s%N)
"$bin" backup --scheduled >/dev/null
t1=$(date +%s%N)
RESTIC_PASSWORD_FILE="$work/pw" restic backup -q --repo "$work/rrepo" "$HOBBS_HOME" >/dev/null
t2=$(date +%s%N)
echo "incremental backup after 10 changed memories: hobbs backup $(ms "$t0" "$t1") ms (goal <= 2000), restic backup $(ms "$t1" "$t2") ms"

# Sync: a second device restored from this one's backup; then SYNCED (1,000)
# of this device's memories change (a line added) and it backs up. The second
# device's `hobbs sync --no-backup` (snapshots listed, the snapshot staged
# against the base kept at the restore, the changed parts checked, the merge)
# runs SYNC_RUNS times, each from a copy of the second device as it was
# before the sync; beside it, per round, one restic call that only opens the
# repository (restic cat config: the key's derivation and the repository's
# config), of which a sync makes two.
SYNCED=${SYNCED:-1000}
SYNC_RUNS=${SYNC_RUNS:-5}
b="$work/device-b"
RESTIC_PASSWORD_FILE="$work/pw" "$bin" --instance "$b" restore --repo "$work/hrepo" --yes >/dev/null 2>&1
RESTIC_PASSWORD_FILE="$work/pw" "$bin" --instance "$b" backup init "$work/hrepo" --device bench-b >/dev/null 2>&1
i=0
for f in "$HOBBS_HOME"/memory/active/*.md; do
  printf '\nconfirmed again on this device\n' >> "$f"
  i=$((i+1)); [ $i -ge "$SYNCED" ] && break
done
"$bin" backup --scheduled >/dev/null
cp -a "$b" "$work/device-b.before"
cp -a "$work/.device-b.sync" "$work/device-b.sync.before"
s_times=() o_times=()
for i in $(seq 1 "$SYNC_RUNS"); do
  rm -rf "$b" "$work/.device-b.sync"
  cp -a "$work/device-b.before" "$b"
  cp -a "$work/device-b.sync.before" "$work/.device-b.sync"
  sync
  t0=$(date +%s%N)
  "$bin" --instance "$b" sync --no-backup --json > "$work/sync.json"
  t1=$(date +%s%N)
  RESTIC_PASSWORD_FILE="$work/pw" restic cat config --repo "$work/hrepo" >/dev/null
  t2=$(date +%s%N)
  changed=$(grep -o '"memory/active/' "$work/sync.json" | wc -l)
  s_times+=("$(ms "$t0" "$t1")") o_times+=("$(ms "$t1" "$t2")")
  echo "backup bench: sync round $i: hobbs sync $(ms "$t0" "$t1") ms ($changed memories merged), restic cat config $(ms "$t1" "$t2") ms; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
done
s=$(printf '%s\n' "${s_times[@]}" | median)
o=$(printf '%s\n' "${o_times[@]}" | median)
echo "SYNC: hobbs sync --no-backup merging $changed changed memories (of $MEMS): median ${s} ms of $SYNC_RUNS (goal <= 1000 ms); one restic repository open (restic cat config): median ${o} ms; load average $(cut -d' ' -f1-3 /proc/loadavg)"
