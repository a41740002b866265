#!/usr/bin/env bash
# Session start-up benchmark (make bench; not in CI): `hobbs run -- true` to
# exit against the anchor `docker run --rm IMAGE true`, interleaved, on the
# same image. Goal: hobbs run within +1.0 s of the anchor. Also checks that a
# run with unchanged inputs does no build step.
#
# Needs Docker Engine, apt-get/dpkg-deb (busybox-static for an offline base),
# and, when run as root, setpriv (hobbs run refuses root; it runs as uid 4242).
# RUNS=N changes the number of rounds (default 7). BASELINE=FILE adds another
# hobbs binary (e.g. one built from main) to every round, on the same image,
# for an A/B comparison; BASELINE=noprovenance builds this tree without the
# launcher's provenance record for that (what the record costs a session).
# HOBBS_TRACE=1 on a single `hobbs run` shows where its time goes (one line
# per engine call, with timestamps). MEMORIES=N seeds N active memories
# (tests/bench/memgen) before the rounds: the launcher's provenance record
# reads the shares at each session's start and end.
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-7}
work=$(mktemp -d /tmp/hobbs-bench-XXXXXX)
chmod 755 "$work"
tag=hobbs-bench-$$:1 tag_base=hobbs-bench-$$:baseline
cleanup() {
	docker image rm -f "$tag" "$tag_base" >/dev/null 2>&1 || true
	for i in "$work/instance" "$work/instance-baseline"; do
		docker volume rm -f "hobbs-claude-$(printf %s "$i" | sha256sum | cut -c1-12)" >/dev/null 2>&1 || true
	done
	rm -rf "$work"
}
trap cleanup EXIT

echo "building the static binary" >&2
CGO_ENABLED=0 go build -trimpath -o "$work/hobbs" ./cmd/hobbs

# Offline base: busybox-static from Debian, imported (cached by content).
cache=${XDG_CACHE_HOME:-$HOME/.cache}/hobbs-e2e
mkdir -p "$cache"
deb=$(ls "$cache"/busybox-static_*.deb 2>/dev/null | tail -1 || true)
if [ -z "$deb" ]; then
	(cd "$cache" && { apt-get download busybox-static >/dev/null 2>&1 || { apt-get update -qq && apt-get download busybox-static >/dev/null; }; })
	deb=$(ls "$cache"/busybox-static_*.deb | tail -1)
fi
base=hobbs-bench-base:$(sha256sum "$deb" | cut -c1-12)
if ! docker image inspect "$base" >/dev/null 2>&1; then
	rootfs=$work/rootfs
	mkdir -p "$rootfs"/{bin,etc,tmp,home,usr/local/bin,run}
	dpkg-deb -x "$deb" "$work/deb"
	cp "$work/deb/bin/busybox" "$rootfs/bin/"
	for a in $("$rootfs/bin/busybox" --list); do [ "$a" = busybox ] || ln -s busybox "$rootfs/bin/$a"; done
	printf 'root:x:0:0:root:/root:/bin/sh\n' >"$rootfs/etc/passwd"
	printf 'root:x:0:\n' >"$rootfs/etc/group"
	chmod 1777 "$rootfs/tmp"
	tar -C "$rootfs" -c . | docker import - "$base" >/dev/null
fi

as_user=()
if [ "$(id -u)" = 0 ]; then
	as_user=(setpriv --reuid 4242 --regid 4242 --groups "$(stat -c %g /var/run/docker.sock)")
	chown 4242:4242 "$work"
fi
# Each binary has an instance of its own (made by its own init: an older
# binary may refuse a newer config.yaml's keys), with the same memories,
# and an image of its own (built from its own assets), on the same base.
run_bin() {
	local bin=$1 inst=$work/instance
	shift
	[ "$bin" = "$work/baseline" ] && inst=$work/instance-baseline
	"${as_user[@]}" env HOME="$work" HOBBS_HOME="$inst" PATH="$PATH" HOBBS_BINARY="$bin" "$bin" "$@"
}
run_hobbs() { run_bin "$work/hobbs" "$@"; }
if [ "${BASELINE:-}" = noprovenance ]; then
	# This tree with the launcher's provenance record left out (issue 33's
	# anchor: the same session without it), built from a copy.
	echo "building the baseline: this tree without the provenance record" >&2
	mkdir "$work/src"
	git ls-files -z | xargs -0 cp --parents -t "$work/src"
	sed -i 's/Provenance: provenance.New(p.instance.FS(), rt.Audit)}/Provenance: (*provenance.Store)(nil)}/' "$work/src/src/launcher/execute.go"
	grep -q 'Provenance: (\*provenance.Store)(nil)}' "$work/src/src/launcher/execute.go" ||
		{ echo "session.sh: cannot leave the provenance record out of src/launcher/execute.go" >&2; exit 1; }
	(cd "$work/src" && CGO_ENABLED=0 go build -trimpath -o "$work/baseline" ./cmd/hobbs)
	BASELINE=$work/baseline
elif [ -n "${BASELINE:-}" ]; then
	cp "$BASELINE" "$work/baseline"
	chmod 755 "$work/baseline"
fi
mkdir -p "$work/ws"
[ "$(id -u)" = 0 ] && chown 4242:4242 "$work/ws"

run_hobbs init --no-input >/dev/null 2>&1
insts=("$work/instance")
if [ -n "${BASELINE:-}" ]; then
	run_bin "$work/baseline" init --no-input >/dev/null 2>&1
	insts+=("$work/instance-baseline")
fi
if [ "${MEMORIES:-0}" -gt 0 ]; then
	for inst in "${insts[@]}"; do
		go run ./tests/bench/memgen -dir "$inst/memory" -active "$MEMORIES" -archive 0 >/dev/null
		[ "$(id -u)" = 0 ] && chown -R 4242:4242 "$inst/memory"
	done
	echo "seeded $MEMORIES active memories in each instance" >&2
fi
echo "building the image (not timed)" >&2
run_hobbs build --base "$base" --tag "$tag" >/dev/null 2>&1
[ -n "${BASELINE:-}" ] && run_bin "$work/baseline" build --base "$base" --tag "$tag_base" >/dev/null 2>&1

ms() { date +%s%3N; }
hobbs_t=() anchor_t=() base_t=() builds=0
time_hobbs() {
	local t0 t1
	t0=$(ms); run_hobbs run --image "$tag" --base "$base" --workspace "$work/ws" -- true 2>"$work/err" ||
		{ echo "hobbs run failed:" >&2; cat "$work/err" >&2; exit 1; }; t1=$(ms)
	hobbs_t+=($((t1 - t0)))
	grep -q '^building' "$work/err" && builds=$((builds + 1))
	return 0
}
time_baseline() {
	local t0 t1
	[ -n "${BASELINE:-}" ] || return 0
	t0=$(ms); run_bin "$work/baseline" run --image "$tag_base" --base "$base" --workspace "$work/ws" -- true 2>"$work/err" ||
		{ echo "the baseline's run failed:" >&2; cat "$work/err" >&2; exit 1; }; t1=$(ms)
	base_t+=($((t1 - t0)))
	grep -q '^building' "$work/err" && echo "warning: the baseline built the image (its assets differ)" >&2
	return 0
}
for i in $(seq 1 "$RUNS"); do
	t0=$(ms); docker run --rm "$tag" true; t1=$(ms)
	anchor_t+=($((t1 - t0)))
	# Alternate which binary goes first.
	if [ $((i % 2)) = 1 ]; then time_hobbs; time_baseline; else time_baseline; time_hobbs; fi
done

median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ha=$(median "${hobbs_t[@]}")
an=$(median "${anchor_t[@]}")
echo "session start-up, $RUNS interleaved rounds (ms): hobbs run -- true: ${hobbs_t[*]}"
echo "                                                 docker run --rm:   ${anchor_t[*]}"
awk -v h="$ha" -v a="$an" 'BEGIN { printf "median: hobbs run %d ms, docker run %d ms: +%d ms (%.2fx); goal <= +1000 ms: %s\n", h, a, h-a, h/a, (h-a <= 1000 ? "met" : "MISSED") }'
if [ -n "${BASELINE:-}" ]; then
	b=$(median "${base_t[@]}")
	echo "                                                 baseline run:      ${base_t[*]}"
	awk -v h="$ha" -v b="$b" -v a="$an" 'BEGIN { printf "baseline median %d ms (+%d ms over docker run); this build / baseline: %.2f\n", b, b-a, h/b }'
fi
echo "runs with unchanged inputs that built the image: $builds (goal 0)"
