#!/usr/bin/env bash
# Egress proxy benchmark (make bench; not CI). On loopback, against one
# target, one CONNECT tunnel per request, 16 concurrent clients:
#   direct (no proxy) · hobbs proxy (policy, auth, audit on) · bare goproxy ·
#   tinyproxy · mitmproxy (the seed's proxy)
# measures new tunnels/s and p50/p99, the proxy process's CPU time per
# tunnel, bulk MB/s, and proxy RSS growth for 500 idle tunnels. ROUNDS interleaved rounds (default 3); prints medians and
# the ratios the issue's goals are stated in.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-3}
DUR=${DUR:-5s}
CONC=${CONC:-16}
GO=${GO:-go}

if ! command -v tinyproxy >/dev/null || ! command -v mitmdump >/dev/null; then
  echo "bench: installing tinyproxy and mitmproxy from Debian" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tinyproxy mitmproxy >/dev/null
fi

tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT

CGO_ENABLED=0 $GO build -o "$tmp/hobbs" ./cmd/hobbs
$GO build -o "$tmp/proxybench" ./tests/bench/proxybench
$GO build -o "$tmp/bareproxy" ./tests/bench/bareproxy

port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
T=$(port); PH=$(port); PG=$(port); PT=$(port); PM=$(port)

"$tmp/proxybench" target -listen 127.0.0.1:$T & TGPID=$!; pids+=($TGPID)

printf 'domains: ["localhost:%s"]\nallow_private: [127.0.0.0/8, "::1/128"]\n' "$T" > "$tmp/policy.yaml"
printf 'services: [claude, github]\n' > "$tmp/default.yaml"
echo "bench-token-0123456789" > "$tmp/token"
"$tmp/hobbs" proxy --listen 127.0.0.1:$PH --policy "$tmp/default.yaml" --policy "$tmp/policy.yaml" \
  --audit "$tmp/audit.log" --auth-token-file "$tmp/token" 2>"$tmp/hobbs.err" & HPID=$!; pids+=($HPID)
"$tmp/bareproxy" -listen 127.0.0.1:$PG 2>/dev/null & GPID=$!; pids+=($GPID)
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
mitmdump -q --listen-host 127.0.0.1 --listen-port $PM --ignore-hosts '.*' >/dev/null 2>&1 & MPID=$!; pids+=($MPID)

for p in $PH $PG $PT $PM $T; do
  for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null && break; sleep 0.1; done
done
sleep 1

target=localhost:$T
res="$tmp/results"
# run KIND NAME PROXYADDR PID AUTH: one measurement of one system, tagged
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
read -ra systems <<<"${SYSTEMS:-direct hobbs goproxy tinyproxy mitmproxy}"
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
        hobbs) run $kind hobbs 127.0.0.1:$PH $HPID "hobbs:bench-token-0123456789" ;;
        goproxy) run $kind goproxy 127.0.0.1:$PG $GPID "" ;;
        tinyproxy) run $kind tinyproxy 127.0.0.1:$PT $TPID "" ;;
        mitmproxy) run $kind mitmproxy 127.0.0.1:$PM $MPID "" ;;
      esac
    done
  done
done

echo
echo "== medians over $ROUNDS rounds (16 clients, one tunnel per request, loopback)"
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
def per_round(a, b, k):
    ra, rb = byround.get((a, k), {}), byround.get((b, k), {})
    return [ra[x] / rb[x] for x in sorted(ra, key=int) if x in rb and rb[x]]
med = lambda n, k: st.median(d[n][k]) if d[n][k] else float("nan")
print(f"{'system':10} {'tunnels/s':>10} {'p50 ms':>8} {'p99 ms':>8} {'CPU us/tunnel':>14} {'load us/tunnel':>15} {'bulk MB/s':>10} {'idle500 +MB':>12} {'errors':>7}")
for n in ["direct", "hobbs", "goproxy", "tinyproxy", "mitmproxy"]:
    errs = sum(d[n]["errors"])
    load = med(n,'client_cpu_us_per_tunnel') + med(n,'target_cpu_us_per_tunnel')
    print(f"{n:10} {med(n,'tunnels_per_s'):10.0f} {med(n,'p50_ms'):8.3f} {med(n,'p99_ms'):8.3f} {med(n,'cpu_us_per_tunnel'):14.0f} {load:15.0f} {med(n,'bulk_MBps'):10.0f} {med(n,'rss_delta_MB'):12.1f} {errs:7.0f}")
print("(CPU: the proxy process's; load: the benchmark's client and target together, same cores)")
print()
print(f"hobbs bulk / direct bulk          = {med('hobbs','bulk_MBps')/med('direct','bulk_MBps'):.2f}  (goal >= 0.6)")
pr = per_round('hobbs', 'direct', 'bulk_MBps')
if pr:
    print(f"  within each round                = {' '.join(f'{x:.2f}' for x in pr)} (median {st.median(pr):.2f})")
print(f"hobbs tunnels/s / tinyproxy       = {med('hobbs','tunnels_per_s')/med('tinyproxy','tunnels_per_s'):.2f}  (goal >= 1.2)")
pr = per_round('hobbs', 'tinyproxy', 'tunnels_per_s')
if pr:
    print(f"  within each round                = {' '.join(f'{x:.2f}' for x in pr)} (median {st.median(pr):.2f})")
print(f"hobbs p50 / tinyproxy p50         = {med('hobbs','p50_ms')/med('tinyproxy','p50_ms'):.2f}  (goal <= 1.0)")
print(f"hobbs tunnels/s / direct          = {med('hobbs','tunnels_per_s')/med('direct','tunnels_per_s'):.2f}")
print(f"hobbs tunnels/s / bare goproxy    = {med('hobbs','tunnels_per_s')/med('goproxy','tunnels_per_s'):.2f}")
print(f"hobbs tunnels/s / mitmproxy       = {med('hobbs','tunnels_per_s')/med('mitmproxy','tunnels_per_s'):.2f}")
print(f"hobbs CPU per tunnel / tinyproxy = {med('hobbs','cpu_us_per_tunnel')/med('tinyproxy','cpu_us_per_tunnel'):.2f}  (proxy process only; steadier than rates on a shared machine)")
print(f"hobbs RSS for 500 idle tunnels    = +{med('hobbs','rss_delta_MB'):.1f} MB  (goal <= +10)")
PY
