#!/bin/bash
# bench.sh — how long does a one-shot sandbox of /bin/true take?
#
# usage: scripts/bench.sh [--rootfs DIR] [--lbbox PATH] [-n N] [--json FILE]
#        scripts/bench.sh --compare OLD.json NEW.json
#
# --json FILE also writes every figure (median and p90 in ms, memory in KiB)
# with the commit and date as one JSON record; --compare prints two such
# records side by side with the change of each figure, so a regression
# between two commits is visible.
#
# Times `lbbox run` of /bin/true in the busybox rootfs N times (default 200,
# env BENCH_N) after BENCH_WARMUP (default 10) warm-up runs, and does the same
# for the peers that are installed (crun, bwrap, unshare+chroot) on the same
# rootfs, in the same run. Prints a markdown table: median, p90 and the ratio
# of each median to lbbox's. BENCH_TOOLS (default "lbbox lbbox-net-on crun
# bwrap unshare") picks the tools. lbbox-net-on is `lbbox run --network on`
# (veth + bridge + NAT) on a bridge of its own (lbbench0, 10.90.0.0/24), pruned
# at the end; the difference of its median to lbbox's (network off) is printed.
# lbbox-rootless and lbbox-rootless-net-on run lbbox
# as nobody, off and on (pasta), in a network namespace of the benchmark's own
# (lbbench-rl, a veth to lbbench-up as its uplink; /bin/true sends nothing),
# with a /dev/net/tun that nobody may open bound in a private mount namespace.
# BENCH_OCI (default on when podman and ctr are installed; BENCH_OCI=0 skips)
# runs scripts/bench_oci.py: lbbox-runc vs runc under podman and containerd
# (BENCH_OCI_N runs, default 30), its figures in --json as oci_*.
# BENCH_SCALE=N (default 0: off) runs scripts/bench_scale.py: lbbox run, session create, exec
# and ls, box_exec, box_create_session and box_status with no other session, then with N idle
# sessions of a Box runtime (and up to 200 managed processes) alive: each median, its ratio,
# and the runtime's RSS per idle session (BENCH_SCALE_REPS runs per case, default 30; --json
# as scale_*). Everything it made is removed afterwards.
#
# Each run is timed in this bash process with $EPOCHREALTIME around the
# command: one fork+exec per run, the same for every tool, and no `date`
# spawns. This is a benchmark, not a test: it fails (exit 1) only when lbbox
# itself cannot run.
set -euo pipefail
export LC_ALL=C # $EPOCHREALTIME uses the locale's decimal point

self=$(readlink -f -- "$0")
repo=$(cd -- "$(dirname -- "$self")/.." && pwd)

die() { printf 'bench.sh: %s\n' "$*" >&2; exit 1; }
warn() { printf 'bench.sh: %s\n' "$*" >&2; }

# Deletes every container in crun state dir $1.
crun_delete_all() {
	local id
	for id in $(crun --root "$1" list -q 2>/dev/null); do
		crun --root "$1" delete -f "$id" >/dev/null 2>&1 || true
	done
}

# Prefix for a command run the way crun works on hybrid-cgroup hosts: in a
# private mount namespace with an empty tmpfs over the v2 mount (skipped where
# there is none). unshare and sh exec, so the pid is the command's.
# shellcheck disable=SC2016 # "$@" is for the inner sh
crun_ns=(unshare -m sh -c 'mount --make-rprivate / &&
	{ ! mountpoint -q /sys/fs/cgroup/unified ||
		mount -t tmpfs none /sys/fs/cgroup/unified; } && exec "$@"' sh)

# Internal mode (--time-loop N WARM OUT ERRFILE CRUN_ROOT CMD...): run the
# timing loop, write one duration (µs) per line to OUT. "@I@" in CMD is
# replaced by the run number (crun needs a new container id per run). With a
# non-empty CRUN_ROOT, delete any container left in that crun state dir
# afterwards, from the same mount namespace, so crun sees the cgroup tree it
# created them in.
time_loop() {
	local n=$1 warm=$2 out=$3 errf=$4 crun_root=$5
	shift 5
	local i t0 t1 rc=0 stop=0
	local -a cmd times=()
	# A signal ends the loop after the current run, so the cleanup below runs.
	trap 'stop=1' INT TERM HUP
	{
		for ((i = 0; i < warm + n && !stop; i++)); do
			cmd=("${@//@I@/$i}")
			t0=$EPOCHREALTIME
			"${cmd[@]}" || { rc=$?; break; }
			t1=$EPOCHREALTIME
			if ((i >= warm)); then
				times+=($((${t1/./} - ${t0/./})))
			fi
		done
	} </dev/null >/dev/null 2>"$errf"
	if [ -n "$crun_root" ]; then crun_delete_all "$crun_root"; fi
	if [ "$rc" != 0 ]; then
		printf 'exit status %s at run %s\n' "$rc" "$i" >>"$errf"
		return 1
	fi
	if [ "$stop" = 1 ]; then
		echo interrupted >>"$errf"
		return 130
	fi
	printf '%s\n' "${times[@]}" >"$out"
}

# Internal mode, run inside crun_ns: a detached container, then N timed `crun exec`s into it.
crun_exec_loop() {
	local state=$1 bundle=$2 out=$3 errf=$4 id=lbbox-bench-exec-$$ rc=0
	crun --root "$state" --cgroup-manager=cgroupfs run --detach --bundle "$bundle" "$id" \
		>/dev/null 2>"$errf" || return 1
	"$self" --time-loop "$N" "$WARM" "$out" "$errf" "" crun --root "$state" exec "$id" /bin/true ||
		rc=$?
	crun --root "$state" kill "$id" KILL >/dev/null 2>&1 || true
	sleep 0.2
	crun --root "$state" delete -f "$id" >/dev/null 2>&1 || true
	return "$rc"
}

# compare OLD NEW: the figures of two --json records side by side.
compare() {
	[ -r "$1" ] && [ -r "$2" ] || die "--compare needs two readable JSON records"
	printf '| figure | %s | %s | change |\n| --- | ---: | ---: | ---: |\n' \
		"$(jq -r '.commit' "$1")" "$(jq -r '.commit' "$2")"
	jq -r -n --slurpfile a "$1" --slurpfile b "$2" '
		($a[0].figures) as $o | ($b[0].figures) as $n
		| (($o | keys) + ($n | keys) | unique)[] as $k
		| [$k, ($o[$k].median // null), ($n[$k].median // null)]
		| "| \(.[0]) | \(.[1] // "-") | \(.[2] // "-") | "
		  + (if .[1] and .[2] and .[1] > 0
		     then "\(((.[2] - .[1]) / .[1] * 1000 | round) / 10)%" else "-" end) + " |"'
}

case "${1:-}" in
--compare) [ $# -eq 3 ] || usage; compare "$2" "$3"; exit ;;
--time-loop) shift; time_loop "$@"; exit ;;
--crun-delete-all) crun_delete_all "$2"; exit ;;
--crun-exec-loop) N=$2 WARM=$3; shift 3; crun_exec_loop "$@"; exit ;;
esac

N=${BENCH_N:-200}
WARM=${BENCH_WARMUP:-10}
TOOLS=${BENCH_TOOLS:-lbbox lbbox-image lbbox-net-on lbbox-rootless lbbox-rootless-net-on crun bwrap unshare}
rootfs=$repo/build/images/busybox/rootfs
lbbox=$repo/build/lbbox
json_out=

usage() {
	printf 'usage: %s [--rootfs DIR] [--lbbox PATH] [-n N] [--json FILE]\n       %s --compare OLD.json NEW.json\n' \
		"${0##*/}" "${0##*/}" >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case "$1" in
	--rootfs) [ $# -ge 2 ] || usage; rootfs=$2; shift 2 ;;
	--rootfs=*) rootfs=${1#*=}; shift ;;
	--lbbox) [ $# -ge 2 ] || usage; lbbox=$2; shift 2 ;;
	--lbbox=*) lbbox=${1#*=}; shift ;;
	-n) [ $# -ge 2 ] || usage; N=$2; shift 2 ;;
	--json) [ $# -ge 2 ] || usage; json_out=$2; shift 2 ;;
	-h | --help) usage ;;
	*) usage ;;
	esac
done
case "$N$WARM" in *[!0-9]*) die "N and BENCH_WARMUP must be numbers" ;; esac
[ "$N" -gt 0 ] || die "N must be > 0"

if [ ! -x "$rootfs/bin/sh" ]; then
	"$repo/rootfs-tools/busybox.sh" "$rootfs" || die "cannot build $rootfs"
fi
rootfs=$(readlink -f -- "$rootfs")
[ -x "$rootfs/bin/true" ] || die "$rootfs has no /bin/true"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/lbbox-bench.XXXXXX")

# Never rm -rf through a mount a sandbox left behind (it could be the rootfs).
cleanup() {
	if [ -z "${tmp:-}" ]; then return; fi
	if [ -d "$tmp/run-net/net" ]; then
		LBBOX_NET_BRIDGE=lbbench0 "$lbbox" --runroot "$tmp/run-net" network prune \
			>/dev/null || warn "lbbox network prune failed"
	fi
	if [ -d "$tmp/run-scale/box" ]; then # a scale run cut short: its sessions, one by one
		"$lbbox" --runroot "$tmp/run-scale" --root "$tmp/root-scale" session ls --json \
			2>/dev/null | jq -r .session_id | while read -r s; do
			"$lbbox" --runroot "$tmp/run-scale" --root "$tmp/root-scale" session rm "$s" \
				>/dev/null
		done
	fi
	if [ -d "$tmp/run-sess/box" ]; then
		"$lbbox" --runroot "$tmp/run-sess" --root "$tmp/root-sess" session ls --json 2>/dev/null |
			jq -r .session_id | while read -r s; do
			"$lbbox" --runroot "$tmp/run-sess" --root "$tmp/root-sess" session rm "$s" >/dev/null
		done
	fi
	if [ -d "$tmp/crun-state" ]; then
		"${crun_ns[@]}" "$self" --crun-delete-all "$tmp/crun-state" || true
	fi
	if [ -e "$tmp/rl-netns" ]; then
		ip netns del lbbench-rl 2>/dev/null || true
		ip netns del lbbench-up 2>/dev/null || true
	fi
	if awk -v t="$tmp/" 'index($5, t) == 1 { found = 1 } END { exit !found }' \
		/proc/self/mountinfo; then
		warn "mounts left under $tmp; not removing it"
		exit 1
	fi
	rm -rf -- "$tmp"
}
trap cleanup EXIT

# Loops run as background jobs we wait for: a trapped signal interrupts
# `wait` at once (not only after a foreground job ends), is passed on to the
# loop, which stops after its current run and cleans up, and then we exit.
child=""
on_signal() {
	if [ -n "$child" ]; then
		kill -TERM "$child" 2>/dev/null || true
		wait "$child" 2>/dev/null || true
	fi
	exit 130
}
trap on_signal INT TERM HUP

run_child() {
	local rc=0
	"$@" &
	child=$!
	wait "$child" || rc=$?
	child=""
	return "$rc"
}

# Writes the crun bundle for $rootfs to $tmp/bundle.
make_crun_bundle() {
	local b=$tmp/bundle
	mkdir -p "$b"
	(cd "$b" && crun spec) || return 1
	jq --arg root "$rootfs" '
		.root = {path: $root, readonly: true}
		| .process.terminal = false
		| .process.args = ["/bin/true"]
		| .linux.namespaces = [{type: "pid"}, {type: "mount"}, {type: "network"},
			{type: "ipc"}, {type: "uts"}, {type: "cgroup"}]
	' "$b/config.json" >"$b/config.json.new" &&
		mv "$b/config.json.new" "$b/config.json"
}

# The rootless tools' world, once: the namespaces, the tun node, directories of nobody's.
rl_setup() {
	[ -e "$tmp/rl-netns" ] && return 0
	touch "$tmp/rl-netns"
	ip netns add lbbench-rl && ip netns add lbbench-up &&
		ip link add lbbench-rl0 netns lbbench-rl type veth peer name lbbench-up0 \
			netns lbbench-up &&
		ip -n lbbench-rl link set lo up && ip -n lbbench-rl link set lbbench-rl0 up &&
		ip -n lbbench-rl addr add 198.51.100.2/24 dev lbbench-rl0 &&
		ip -n lbbench-rl route add default via 198.51.100.1 &&
		ip -n lbbench-up link set lbbench-up0 up &&
		ip -n lbbench-up addr add 198.51.100.1/24 dev lbbench-up0 || return 1
	chmod 711 "$tmp"
	mkdir -p "$tmp/rl/run" "$tmp/rl/root" "$tmp/rl/home"
	mknod -m 666 "$tmp/rl/tun" c 10 200
	chown -R 65534:65534 "$tmp/rl"
}

# Prefix: as nobody in lbbench-rl, seeing the usable tun node. unshare and sh exec.
# shellcheck disable=SC2016 # "$@" is for the inner sh
rl_ns() {
	rl=(unshare -m sh -c 'mount --bind "$0/tun" /dev/net/tun &&
		exec ip netns exec lbbench-rl setpriv --reuid=65534 --regid=65534 --clear-groups \
		env HOME="$0/home" XDG_RUNTIME_DIR= "$@"' "$tmp/rl")
}

# bench TOOL: runs the timing loop for TOOL; durations land in $tmp/TOOL.times.
bench() {
	local tool=$1
	local out=$tmp/$tool.times errf=$tmp/$tool.err
	local -a loop=(run_child "$self" --time-loop "$N" "$WARM" "$out" "$errf")
	case "$tool" in
	lbbox)
		[ -x "$lbbox" ] || { echo "not found: $lbbox" >"$errf"; return 1; }
		mkdir -p "$tmp/run" "$tmp/root"
		"${loop[@]}" "" "$lbbox" --runroot "$tmp/run" --root "$tmp/root" \
			run --rootfs "$rootfs" -- /bin/true
		;;
	lbbox-image)
		# the same rootfs as a one-layer OCI image, loaded and unpacked once before timing
		[ -x "$lbbox" ] || { echo "not found: $lbbox" >"$errf"; return 1; }
		mkdir -p "$tmp/run-img" "$tmp/root-img"
		"$repo/rootfs-tools/oci-layout.sh" "$rootfs" "$tmp/layout" localhost/bench:1 \
			>"$errf" 2>&1 || return 1
		"$lbbox" --root "$tmp/root-img" load --oci-dir "$tmp/layout" >"$errf" 2>&1 || return 1
		"${loop[@]}" "" "$lbbox" --runroot "$tmp/run-img" --root "$tmp/root-img" \
			run --image localhost/bench:1 -- /bin/true
		;;
	lbbox-net-on)
		[ -x "$lbbox" ] || { echo "not found: $lbbox" >"$errf"; return 1; }
		mkdir -p "$tmp/run-net" "$tmp/root"
		LBBOX_NET_BRIDGE=lbbench0 LBBOX_NET_SUBNET=10.90.0.0/24 \
			"${loop[@]}" "" "$lbbox" --runroot "$tmp/run-net" --root "$tmp/root" \
			run --network on --rootfs "$rootfs" -- /bin/true
		;;
	lbbox-rootless | lbbox-rootless-net-on)
		[ -x "$lbbox" ] || { echo "not found: $lbbox" >"$errf"; return 1; }
		rl_setup >"$errf" 2>&1 || return 1
		local net=off rl
		[ "$tool" = lbbox-rootless-net-on ] && net=on
		: >"$out" && chown 65534 "$out" "$errf"
		rl_ns
		run_child "${rl[@]}" "${loop[@]:1}" "" "$lbbox" --runroot "$tmp/rl/run" \
			--root "$tmp/rl/root" run --network "$net" --rootfs "$rootfs" -- /bin/true
		;;
	crun)
		make_crun_bundle 2>"$errf" || return 1
		mkdir -p "$tmp/crun-state"
		# crun refuses hybrid cgroups: hide the v2 mount, once around the loop.
		run_child "${crun_ns[@]}" "${loop[@]:1}" "$tmp/crun-state" \
			crun --root "$tmp/crun-state" --cgroup-manager=cgroupfs \
			run --bundle "$tmp/bundle" "lbbox-bench-$$-@I@"
		;;
	bwrap)
		"${loop[@]}" "" bwrap --unshare-all --ro-bind "$rootfs" / \
			--proc /proc --dev /dev /bin/true
		;;
	unshare)
		"${loop[@]}" "" unshare --pid --mount --net --uts --ipc --fork \
			chroot "$rootfs" /bin/true
		;;
	*) echo "unknown tool" >"$errf"; return 1 ;;
	esac
}

# stats FILE: prints "median p90" in ms (p90 = nearest rank).
stats() {
	sort -n "$1" | awk '
		{ v[NR] = $1 }
		END {
			med = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			r = int(0.9 * NR); if (r < 0.9 * NR) r++
			printf "%.2f %.2f\n", med / 1000, v[r] / 1000
		}'
}

have() {
	case "$1" in
	lbbox | lbbox-net-on | lbbox-image) return 0 ;;
	lbbox-rootless) command -v setpriv >/dev/null ;;
	lbbox-rootless-net-on) command -v setpriv >/dev/null && command -v pasta >/dev/null ;;
	crun) command -v crun >/dev/null && command -v jq >/dev/null ;;
	*) command -v "$1" >/dev/null ;;
	esac
}

declare -A med p90
lbbox_ok=0
ran=()
for tool in $TOOLS; do
	if ! have "$tool"; then
		[ "$tool" = crun ] && command -v crun >/dev/null && warn "crun: skipped, needs jq"
		continue
	fi
	if bench "$tool"; then
		read -r "med[$tool]" "p90[$tool]" < <(stats "$tmp/$tool.times")
		ran+=("$tool")
		[ "$tool" = lbbox ] && lbbox_ok=1
	else
		warn "$tool failed:"
		tail -n 5 "$tmp/$tool.err" | sed 's/^/    /' >&2
	fi
done

printf '%s runs of /bin/true (after %s warm-up) in %s, %s\n\n' \
	"$N" "$WARM" "$rootfs" "$(uname -r)"
if [ "$lbbox_ok" = 1 ]; then
	printf 'lbbox run: median %s ms, p90 %s ms\n\n' "${med[lbbox]}" "${p90[lbbox]}"
fi
printf '| tool | median ms | p90 ms | × lbbox |\n'
printf '| --- | ---: | ---: | ---: |\n'
for tool in "${ran[@]}"; do
	ratio=n/a
	if [ "$lbbox_ok" = 1 ]; then
		ratio=$(awk -v a="${med[$tool]}" -v b="${med[lbbox]}" \
			'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }')
	fi
	printf '| %s | %s | %s | %s |\n' "$tool" "${med[$tool]}" "${p90[$tool]}" "$ratio"
done

if [ "$lbbox_ok" = 1 ] && [ -n "${med[lbbox-image]:-}" ]; then
	printf '\nan image from the store (overlay of its snapshot) adds %s ms to the median of a rootfs directory\n' \
		"$(awk -v a="${med[lbbox-image]}" -v b="${med[lbbox]}" 'BEGIN { printf "%.2f", a - b }')"
fi
if [ "$lbbox_ok" = 1 ] && [ -n "${med[lbbox-net-on]:-}" ]; then
	printf '\n--network on adds %s ms to the median of --network off\n' \
		"$(awk -v a="${med[lbbox-net-on]}" -v b="${med[lbbox]}" 'BEGIN { printf "%.2f", a - b }')"
fi
if [ -n "${med[lbbox-rootless-net-on]:-}" ] && [ -n "${med[lbbox-rootless]:-}" ]; then
	printf '\nrootless, --network on (pasta) adds %s ms to the median of --network off\n' \
		"$(awk -v a="${med[lbbox-rootless-net-on]}" -v b="${med[lbbox-rootless]}" \
			'BEGIN { printf "%.2f", a - b }')"
fi

# 20 at once: wall time of 20 lbbox runs started together against 20 bwrap runs, rounds
# alternating which goes first (BENCH_BURST rounds, default 15; 0 skips it).
burst_ms() {
	local t0=$EPOCHREALTIME i rc=0
	for ((i = 0; i < 20; i++)); do "$@" >/dev/null 2>&1 & done
	for ((i = 0; i < 20; i++)); do wait -n || rc=1; done
	[ "$rc" = 0 ] || return 1
	awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f\n", (b - a) * 1000000 }'
}
burst_bench() {
	local r lb=("$lbbox" --runroot "$tmp/run" --root "$tmp/root" run --rootfs "$rootfs" -- /bin/true)
	local bw=(bwrap --unshare-all --ro-bind "$rootfs" / --proc /proc --dev /dev /bin/true)
	mkdir -p "$tmp/run" "$tmp/root"
	: >"$tmp/burst-lbbox.times" && : >"$tmp/burst-bwrap.times"
	for ((r = 0; r < ${BENCH_BURST:-15}; r++)); do
		if [ $((r % 2)) = 0 ]; then
			burst_ms "${lb[@]}" >>"$tmp/burst-lbbox.times" || return 1
			burst_ms "${bw[@]}" >>"$tmp/burst-bwrap.times" || return 1
		else
			burst_ms "${bw[@]}" >>"$tmp/burst-bwrap.times" || return 1
			burst_ms "${lb[@]}" >>"$tmp/burst-lbbox.times" || return 1
		fi
	done
	read -r "med[lbbox-20-at-once]" "p90[lbbox-20-at-once]" < <(stats "$tmp/burst-lbbox.times")
	read -r "med[bwrap-20-at-once]" "p90[bwrap-20-at-once]" < <(stats "$tmp/burst-bwrap.times")
	printf '\n20 runs at once (wall, median of %s rounds): lbbox %s ms, bwrap %s ms\n' \
		"${BENCH_BURST:-15}" "${med[lbbox-20-at-once]}" "${med[bwrap-20-at-once]}"
}
if [ "$lbbox_ok" = 1 ] && have bwrap && [ "${BENCH_BURST:-15}" != 0 ]; then
	burst_bench || warn "20-at-once benchmark failed"
fi

# time_ms CMD...: wall time of CMD in ms (its output discarded); fails with it.
time_ms() {
	local t0=$EPOCHREALTIME
	"$@" >/dev/null || return 1
	awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", (b - a) * 1000 }'
}

# Unpack of a large gzip layer (the Python image's rootfs, when built) by lbbox-image against
# tar -xzf of the same blob; BENCH_UNPACK=0 skips it.
unpack_bench() {
	local py=${BENCH_PY_ROOTFS:-/var/lib/lbbox/images/python/rootfs} blob i t0 t1 lb=() tr=()
	[ -d "$py" ] || { warn "unpack: skipped, no $py (scripts/setup.sh builds it)"; return 0; }
	"$repo/rootfs-tools/oci-layout.sh" "$py" "$tmp/py-layout" localhost/py:1 || return 1
	blob=$(find "$tmp/py-layout/blobs/sha256" -type f -size +1M | head -n1)
	# the disk here is noisy: 5 rounds, alternating which of the two goes first
	for i in 1 2 3 4 5; do
		rm -rf "$tmp/py-root" "$tmp/py-tar" && mkdir -p "$tmp/py-tar"
		"$lbbox" --root "$tmp/py-root" load --oci-dir "$tmp/py-layout" >/dev/null || return 1
		sync
		if [ $((i % 2)) = 1 ]; then
			tr+=("$(time_ms tar -xzf "$blob" -C "$tmp/py-tar")")
			lb+=("$(time_ms "$(dirname "$lbbox")/lbbox-image" "$tmp/py-root" prepare localhost/py:1)")
		else
			lb+=("$(time_ms "$(dirname "$lbbox")/lbbox-image" "$tmp/py-root" prepare localhost/py:1)")
			tr+=("$(time_ms tar -xzf "$blob" -C "$tmp/py-tar")")
		fi
	done
	local lbm trm
	lbm=$(printf '%s\n' "${lb[@]}" | sort -n | sed -n 3p)
	trm=$(printf '%s\n' "${tr[@]}" | sort -n | sed -n 3p)
	printf '\nunpack of a %s MB gzip layer (median of 5): lbbox %s ms, tar -xzf %s ms (%s x)\n' \
		"$(($(stat -c %s "$blob") / 1048576))" "$lbm" "$trm" \
		"$(awk -v a="$lbm" -v b="$trm" 'BEGIN { printf "%.2f", a / b }')"
	rm -rf "$tmp/py-root" "$tmp/py-tar" "$tmp/py-layout"
}
[ "${BENCH_UNPACK:-1}" = 0 ] || unpack_bench || warn "unpack benchmark failed"

# kib PID FIELD: a /proc/PID/status (VmRSS) or smaps_rollup (Pss) value in KiB.
kib() {
	if [ "$2" = Pss ]; then awk '/^Pss:/ { print $2 }' "/proc/$1/smaps_rollup"
	else awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status"; fi
}

# Sessions: exec into a live session against crun exec, session create, idle memory.
session_bench() {
	local run=$tmp/run-sess root=$tmp/root-sess lb i t0 t1 created=() pid kpid
	mkdir -p "$run" "$root"
	lb=("$lbbox" --runroot "$run" --root "$root")
	"${lb[@]}" session create bench --rootfs "$rootfs" >/dev/null || return 1
	run_child "$self" --time-loop "$N" "$WARM" "$tmp/sexec.times" "$tmp/sexec.err" "" \
		"${lb[@]}" session exec bench -- true || { cat "$tmp/sexec.err" >&2; return 1; }
	read -r med[session-exec] p90[session-exec] < <(stats "$tmp/sexec.times")
	# the same on a writable-root session (an exec there runs from a sealed copy of lbbox)
	"${lb[@]}" session create benchw --read-only=false --rootfs "$rootfs" >/dev/null || return 1
	run_child "$self" --time-loop "$N" "$WARM" "$tmp/sexecw.times" "$tmp/sexecw.err" "" \
		"${lb[@]}" session exec benchw -- true || { cat "$tmp/sexecw.err" >&2; return 1; }
	read -r "med[session-exec-rw]" "p90[session-exec-rw]" < <(stats "$tmp/sexecw.times")
	"${lb[@]}" session rm benchw >/dev/null || return 1
	if have crun; then
		mkdir -p "$tmp/bundle-exec" "$tmp/crun-state"
		(cd "$tmp/bundle-exec" && crun spec) >/dev/null &&
			jq --arg root "$rootfs" '.root = {path: $root, readonly: true}
				| .process.terminal = false | .process.args = ["/bin/sleep", "100000"]' \
				"$tmp/bundle-exec/config.json" >"$tmp/bundle-exec/c.json" &&
			mv "$tmp/bundle-exec/c.json" "$tmp/bundle-exec/config.json"
		if run_child "${crun_ns[@]}" "$self" --crun-exec-loop "$N" "$WARM" "$tmp/crun-state" \
			"$tmp/bundle-exec" "$tmp/cexec.times" "$tmp/cexec.err"; then
			read -r med[crun-exec] p90[crun-exec] < <(stats "$tmp/cexec.times")
		else
			warn "crun exec failed:"; tail -n 3 "$tmp/cexec.err" >&2
		fi
	fi
	# idle memory: the session's pid 1, and the keeper of one idle managed process
	pid=$(jq -r .pid "$run"/*/state.json | head -n1)
	"${lb[@]}" proc start bench --id idle -- sleep 100000 >/dev/null || return 1
	kpid=$(jq -r .keeper "$run"/box/sessions/bench/procs/*.json | head -n1)
	local rss pss krss kpss
	rss=$(kib "$pid" VmRSS) pss=$(kib "$pid" Pss) krss=$(kib "$kpid" VmRSS) kpss=$(kib "$kpid" Pss)
	"${lb[@]}" session rm bench >/dev/null || return 1
	# session create with the image cached (each removed again, untimed)
	for ((i = 0; i < 20; i++)); do
		t0=$EPOCHREALTIME
		"${lb[@]}" session create "c$i" --rootfs "$rootfs" >/dev/null || return 1
		t1=$EPOCHREALTIME
		created+=($((${t1/./} - ${t0/./})))
		"${lb[@]}" session rm "c$i" >/dev/null || return 1
	done
	printf '%s\n' "${created[@]}" >"$tmp/screate.times"
	read -r med[session-create] p90[session-create] < <(stats "$tmp/screate.times")
	printf '\nsessions (%s execs of `true`, 20 creates):\n\n' "$N"
	printf '| case | median ms | p90 ms |\n| --- | ---: | ---: |\n'
	printf '| lbbox session exec S -- true | %s | %s |\n' "${med[session-exec]}" "${p90[session-exec]}"
	printf '| the same, writable-root session | %s | %s |\n' "${med[session-exec-rw]}" \
		"${p90[session-exec-rw]}"
	if [ -n "${med[crun-exec]:-}" ]; then
		printf '| crun exec C /bin/true | %s | %s |\n' "${med[crun-exec]}" "${p90[crun-exec]}"
	fi
	printf '| lbbox session create | %s | %s |\n' "${med[session-create]}" "${p90[session-create]}"
	printf '\nidle memory: session pid 1 RSS %s KiB (PSS %s KiB); keeper of one managed process RSS %s KiB (PSS %s KiB)\n' \
		"$rss" "$pss" "$krss" "$kpss"
}
[ "${BENCH_SESSION:-1}" = 0 ] || session_bench || warn "session benchmark failed"

# LangBot's Box RPC over stdio: box_exec round trips, 20 at once, memory with 64 sessions.
rpc_bench() {
	local run=$tmp/run-rpc root=$tmp/root-rpc
	mkdir -p "$run" "$root/images/busybox"
	ln -s "$rootfs" "$root/images/busybox/rootfs"
	BENCH_RPC_JSON=$tmp/rpc.json python3 "$repo/scripts/bench_rpc.py" "$lbbox" "$root" "$run" "$N"
}
[ "${BENCH_RPC:-1}" = 0 ] || rpc_bench || warn "rpc benchmark failed"

# Flat with scale (BENCH_SCALE=N idle sessions; off by default: N = 1000 takes minutes).
scale_bench() {
	local run=$tmp/run-scale root=$tmp/root-scale
	mkdir -p "$run" "$root/images/busybox"
	ln -s "$rootfs" "$root/images/busybox/rootfs"
	BENCH_SCALE_JSON=$tmp/scale.json python3 "$repo/scripts/bench_scale.py" "$lbbox" "$root" \
		"$run" "$rootfs" "$BENCH_SCALE" "${BENCH_SCALE_REPS:-30}"
}
case "${BENCH_SCALE:-0}" in *[!0-9]*) die "BENCH_SCALE must be a number" ;; esac
[ "${BENCH_SCALE:-0}" = 0 ] || scale_bench || warn "scale benchmark failed"

# lbbox-runc vs runc under podman and containerd (scripts/bench_oci.py; BENCH_OCI_N runs, default
# 30). On by default when podman and ctr are installed; BENCH_OCI=0 skips it.
oci_bench() {
	local rc=0
	BENCH_OCI_JSON=$tmp/oci.json python3 "$repo/scripts/bench_oci.py" \
		"$(dirname -- "$lbbox")" "$rootfs" || rc=$?
	[ "$rc" = 77 ] && { warn "oci benchmark skipped"; return 0; }
	return "$rc"
}
if [ "${BENCH_OCI:-1}" != 0 ] && command -v podman >/dev/null && command -v ctr >/dev/null; then
	oci_bench || warn "oci benchmark failed"
fi

case " $TOOLS " in
*" lbbox "*) [ "$lbbox_ok" = 1 ] || die "lbbox did not run" ;;
esac

# --json: every figure of this run, with what it measured.
if [ -n "$json_out" ]; then
	figs=$(for k in "${!med[@]}"; do
		printf '{"%s": {"median": %s, "p90": %s}}\n' "$k" "${med[$k]}" "${p90[$k]:-null}"
	done | jq -s 'add // {}')
	[ -r "$tmp/rpc.json" ] && figs=$(jq -s '.[0] + .[1]' <(printf '%s' "$figs") "$tmp/rpc.json")
	[ -r "$tmp/oci.json" ] && figs=$(jq -s '.[0] + .[1]' <(printf '%s' "$figs") "$tmp/oci.json")
	[ -r "$tmp/scale.json" ] && figs=$(jq -s '.[0] + .[1]' <(printf '%s' "$figs") "$tmp/scale.json")
	jq -n --arg commit "$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
		--arg date "$(date -u +%FT%TZ)" --argjson n "$N" --argjson figures "$figs" \
		'{commit: $commit, date: $date, n: $n, figures: $figures}' >"$json_out"
	printf '\nfigures written to %s\n' "$json_out"
fi
