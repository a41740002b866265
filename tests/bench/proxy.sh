#!/usr/bin/env bash
# Egress proxy benchmark (make bench; not CI). Measures the path a session's
# agent uses — `hobbs proxy relay` on TCP, forwarding to `hobbs proxy` on a
# unix socket, with policy, authentication and audit on — against tinyproxy
# on TCP and the direct path, on loopback, one target, one CONNECT tunnel per
# request, 16 concurrent clients: new tunnels/s with p50/p99, the proxy's
# CPU time per tunnel (relay and proxy together), bulk MB/s, and the RSS
# growth for 500 idle tunnels.
#
# HOLD=DURATION runs the hobbs under test with held requests on (--hold,
# an approvals directory): allowed requests must cost the same.
# BASELINE=FILE adds another hobbs binary on the same path to every round;
# BASELINE_REF=REF builds one from a git ref (e.g. BASELINE_REF=main), for an
# A/B comparison. ROUNDS interleaved rounds (default 5); prints medians and
# the ratios the goals are stated in, per round and overall.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-5}
DUR=${DUR:-5s}
CONC=${CONC:-16}
GO=${GO:-go}

if ! command -v tinyproxy >/dev/null; then
  echo "bench: installing tinyproxy from Debian" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tinyproxy >/dev/null
fi

tmp=$(mktemp -d /tmp/hobbs-proxybench-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -n "${worktree:-}" ] && git worktree remove --force "$worktree" >/dev/null 2>&1
  rm -rf "$tmp"
}
trap cleanup EXIT

CGO_ENABLED=0 $GO build -o "$tmp/hobbs" ./cmd/hobbs
$GO build -o "$tmp/proxybench" ./tests/bench/proxybench
if [ -n "${BASELINE_REF:-}" ]; then
  worktree=$tmp/baseline-src
  git worktree add --detach -q "$worktree" "$BASELINE_REF"
  (cd "$worktree" && CGO_ENABLED=0 $GO build -o "$tmp/baseline" ./cmd/hobbs)
  BASELINE=$tmp/baseline
fi

port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
T=$(port); PH=$(port); PB=$(port); PT=$(port)

"$tmp/proxybench" target -listen 127.0.0.1:$T & TGPID=$!; pids+=($TGPID)

printf 'domains: ["localhost:%s"]\nallow_private: [127.0.0.0/8, "::1/128"]\n' "$T" > "$tmp/policy.yaml"
printf 'services: [claude, github]\n' > "$tmp/default.yaml"
echo "bench-token-0123456789" > "$tmp/token"

# session BIN NAME RELAYPORT: the proxy on a unix socket and the relay in
# front of it, as in a session; sets <NAME>_PIDS to "proxy,relay".
session() {
  local bin=$1 name=$2 rport=$3 hold=()
  if [ "$name" = hobbs ] && [ -n "${HOLD:-}" ]; then
    hold=(--hold "$HOLD" --approvals "$tmp/approvals" --session bench)
  fi
  "$bin" proxy --listen "unix:$tmp/$name.sock" --policy "$tmp/default.yaml" --policy "$tmp/policy.yaml" \
    --audit "$tmp/$name-audit.log" --auth-token-file "$tmp/token" "${hold[@]}" 2>"$tmp/$name.err" &
  local ppid=$!
  pids+=($ppid)
  "$bin" proxy relay --listen 127.0.0.1:$rport --to "unix:$tmp/$name.sock" 2>"$tmp/$name-relay.err" &
  local rpid=$!
  pids+=($rpid)
  printf -v "${name}_PIDS" '%s,%s' "$ppid" "$rpid"
}
session "$tmp/hobbs" hobbs $PH
systems="direct hobbs tinyproxy"
if [ -n "${BASELINE:-}" ]; then
  session "$BASELINE" baseline $PB
  systems="direct hobbs baseline tinyproxy"
fi
cat > "$tmp/tinyproxy.conf" <<CONF
Port $PT
Listen 127.0.0.1
Timeout 600
MaxClients 4096
Allow 127.0.0.1
ConnectPort $T
LogLevel Critical
CONF
tinyproxy -d -c "$tmp/tinyproxy.conf" >/dev/null 2>&1 & TPID=$!; pids+=($TPID)

for p in $PH $PT $T ${BASELINE:+$PB}; do
  for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null && break; sleep 0.1; done
done
sleep 1

target=localhost:$T
res="$tmp/results"
auth=hobbs:bench-token-0123456789
# run KIND NAME PROXYADDR PIDS AUTH: one measurement of one system, tagged
# with its round so that ratios can be taken within a round.
run() {
  local kind=$1 name=$2 proxy=$3 pid=$4 auth=$5 a=()
  [ -n "$auth" ] && a=(-auth "$auth")
  case $kind in
    tunnels) echo "$name round=$r $("$tmp/proxybench" tunnels -target $target ${proxy:+-proxy $proxy} ${pid:+-pid $pid} -tpid $TGPID "${a[@]}" -c $CONC -d $DUR)" | tee -a "$res" ;;
    bulk) echo "$name round=$r $("$tmp/proxybench" bulk -target $target ${proxy:+-proxy $proxy} "${a[@]}" -c $CONC -d $DUR)" | tee -a "$res" ;;
    idle) [ -z "$pid" ] || echo "$name round=$r $("$tmp/proxybench" idle -target $target -proxy $proxy "${a[@]}" -pid $pid -n 500)" | tee -a "$res" ;;
  esac
}
read -ra systems <<<"${SYSTEMS:-$systems}"
ns=${#systems[@]}
# Each round measures one kind for every system back to back (new tunnels,
# then bulk, then idle), in an order rotated each round so no system always
# runs first: the systems compared in a ratio are measured seconds apart,
# not a minute, which matters on a machine whose speed drifts.
for r in $(seq 1 "$ROUNDS"); do
  echo "== round $r" >&2
  for kind in tunnels bulk idle; do
    for i in $(seq 0 $((ns - 1))); do
      s=${systems[$(( (i + r - 1) % ns ))]}
      case $s in
        direct) run $kind direct "" "" "" ;;
        hobbs) run $kind hobbs 127.0.0.1:$PH "$hobbs_PIDS" $auth ;;
        baseline) run $kind baseline 127.0.0.1:$PB "$baseline_PIDS" $auth ;;
        tinyproxy) run $kind tinyproxy 127.0.0.1:$PT $TPID "" ;;
      esac
    done
  done
done

echo
echo "== medians over $ROUNDS rounds ($CONC clients, one tunnel per request, loopback; hobbs = relay -> unix socket -> proxy)"
python3 - "$res" <<'PY'
import sys, statistics as st, collections
d = collections.defaultdict(lambda: collections.defaultdict(list))
byround = collections.defaultdict(dict)  # (name, key) -> {round: value}
for line in open(sys.argv[1]):
    name, *kv = line.split()
    fields = dict(x.split("=") for x in kv)
    rnd = fields.pop("round", None)
    for k, v in fields.items():
        d[name][k].append(float(v))
        byround[(name, k)][rnd] = float(v)
med = lambda n, k: st.median(d[n][k]) if d[n][k] else float("nan")
names = [n for n in ["direct", "hobbs", "baseline", "tinyproxy"] if n in d]
print(f"{'system':10} {'tunnels/s':>10} {'p50 ms':>8} {'p99 ms':>8} {'CPU us/tunnel':>14} {'bulk MB/s':>10} {'idle500 +MB':>12} {'errors':>7}")
for n in names:
    errs = sum(d[n]["errors"])
    print(f"{n:10} {med(n,'tunnels_per_s'):10.0f} {med(n,'p50_ms'):8.3f} {med(n,'p99_ms'):8.3f} {med(n,'cpu_us_per_tunnel'):14.0f} {med(n,'bulk_MBps'):10.0f} {med(n,'rss_delta_MB'):12.1f} {errs:7.0f}")
print("(CPU and RSS: the proxy's processes — relay and proxy for hobbs)")
print()
def ratio(a, b, k, goal):
    if a not in d or b not in d:
        return
    pr = [byround[(a, k)][x] / byround[(b, k)][x] for x in sorted(byround[(a, k)], key=int)
          if x in byround[(b, k)] and byround[(b, k)][x]]
    print(f"{a} / {b} {k:14} = {st.median(pr):.2f}  (goal {goal}; per round: {' '.join(f'{x:.2f}' for x in pr)})")
ratio("hobbs", "tinyproxy", "tunnels_per_s", ">= 0.5")
ratio("hobbs", "tinyproxy", "bulk_MBps", ">= 1.0")
ratio("baseline", "tinyproxy", "tunnels_per_s", "the baseline's")
ratio("baseline", "tinyproxy", "bulk_MBps", "the baseline's")
ratio("hobbs", "baseline", "tunnels_per_s", ">= 0.9")
ratio("hobbs", "baseline", "bulk_MBps", ">= 0.9")
ratio("hobbs", "tinyproxy", "cpu_us_per_tunnel", "lower is better")
print(f"hobbs RSS for 500 idle tunnels = +{med('hobbs','rss_delta_MB'):.1f} MB  (goal <= +10)")
if "baseline" in d:
    print(f"baseline RSS for 500 idle tunnels = +{med('baseline','rss_delta_MB'):.1f} MB")
PY
