#!/usr/bin/env bash
# The default-paths stage: lbbox as a user meets it. It is installed with `cmake --install` into a
# staging prefix and run from there, with no --root, --runroot or LBBOX_* overrides: the store is
# /var/lib/lbbox and the state /run/lbbox (as root), ~/.local/share/lbbox and
# $XDG_RUNTIME_DIR/lbbox (as a user). The host's own store and state are never touched: the whole
# stage runs in a private mount namespace in which those two directories are fresh, empty tmpfs
# mounts, gone with the namespace.
#
# usage: tests/install/default_paths.sh BUILD_DIR   (as root)
# Prints a [PASS]/[FAIL] line per check and a Criterion-style Synthesis line; exits non-zero when
# a check failed.
set -uo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:?usage: default_paths.sh BUILD_DIR}" && pwd)

if [ "${LBT_IN_NS:-}" != 1 ]; then
	[ "$(id -u)" = 0 ] || { echo "default_paths.sh: run as root" >&2; exit 2; }
	made=()
	for d in /var/lib/lbbox /run/lbbox; do
		[ -d "$d" ] || { mkdir -p "$d" && made+=("$d"); }
	done
	stage=$(mktemp -d /tmp/lbbox-stage.XXXXXX)
	chmod 755 "$stage"
	cmake --install "$build" --prefix "$stage/usr" >/dev/null || { echo "install failed" >&2; exit 1; }
	LBT_IN_NS=1 LBT_STAGE=$stage unshare -m --propagation private "$0" "$build"
	rc=$?
	rm -rf "$stage"
	for d in "${made[@]}"; do rmdir "$d"; done
	exit $rc
fi

# ---- inside the private mount namespace ---------------------------------------------------------
mount -t tmpfs -o mode=0755,size=1g lbt-default-store /var/lib/lbbox || exit 1
mount -t tmpfs -o mode=0755,size=64m lbt-default-state /run/lbbox || exit 1
for v in $(env | sed -n 's/^\(LBBOX_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
export PATH="$LBT_STAGE/usr/bin:$PATH"
tmp=$LBT_STAGE/work
mkdir -p "$tmp" && chmod 755 "$tmp"
passed=0 failed=0

# check NAME EXPECTED CMD...: CMD's stdout (stderr shown on failure) must be EXPECTED
check() {
	local name=$1 want=$2 out
	shift 2
	out=$("$@" 2>"$tmp/err")
	if [ "$out" = "$want" ]; then
		echo "[PASS] default_paths::$name"
		passed=$((passed + 1))
	else
		echo "[FAIL] default_paths::$name"
		printf '  want: %s\n  got:  %s\n  stderr: %s\n' "$want" "$out" "$(cat "$tmp/err")"
		failed=$((failed + 1))
	fi
}

[ "$(command -v lbbox)" = "$LBT_STAGE/usr/bin/lbbox" ] || { echo "lbbox is not the installed one"; exit 1; }
layout=$src/build/images/busybox-oci
[ -d "$layout" ] || layout=$build/images/busybox-oci

# -- as root --------------------------------------------------------------------------------------
# sandbox cgroups that exist before the stage (another run's) are not this stage's leftovers
sandbox_cgroups() { find /sys/fs/cgroup -maxdepth 6 -type d -name 'lbbox-[0-9a-f]*' 2>/dev/null | sort; }
cgroups_before=$(sandbox_cgroups)
check run_host_image "hello" lbbox run -- echo hello
check load "Loaded image: localhost/busybox:latest" lbbox load --oci-dir "$layout"
check run_image "from-image" lbbox run --image localhost/busybox -- echo from-image
check store_and_state_private "700 700" sh -c "stat -c %a /var/lib/lbbox /run/lbbox | xargs"
# pull from the test registry on 127.0.0.1
"$src/rootfs-tools/oci-layout.sh" "$src/build/images/busybox/rootfs" "$tmp/reg" latest \
	/bin/echo pulled >/dev/null
python3 "$src/tests/registry/registry.py" serve --layout "$tmp/reg" --ready "$tmp/ready" \
	--log "$tmp/reg.log" &
reg=$!
for _ in $(seq 100); do [ -s "$tmp/ready" ] && break; sleep 0.05; done
port=$(cut -d' ' -f1 "$tmp/ready")
ref=127.0.0.1:$port/lbt/busybox:latest
check pull "ok" sh -c "lbbox pull --insecure-registry 127.0.0.1:$port $ref >/dev/null && echo ok"
kill $reg
wait $reg 2>/dev/null
check run_pulled "pulled" lbbox run --image "$ref"

check session_without_host_path "hi" sh -c '
	lbbox session create s1 --image localhost/busybox >/dev/null &&
	lbbox session exec s1 -- sh -c "echo hi > f && cat /workspace/f"'
mkdir -p "$tmp/ws"
check session_with_host_path "written" sh -c "
	lbbox session create s2 --image localhost/busybox -v $tmp/ws:/workspace >/dev/null &&
	lbbox session exec s2 -- sh -c 'echo written > /workspace/a' && cat $tmp/ws/a"
check proc_start_stop "running stopped" sh -c '
	lbbox proc start s1 --id p1 -- sleep 1000 >/dev/null &&
	a=$(lbbox proc inspect s1 p1 | sed -n "s/.*\"status\":\"\([a-z]*\)\".*/\1/p") &&
	lbbox proc stop s1 p1 >/dev/null && echo $a stopped'
check session_rm "" sh -c 'lbbox session rm s1 >/dev/null && lbbox session rm s2 >/dev/null &&
	lbbox session ls --json | grep -o "\"session_id\"" || true'
# LangBot's default image, from the store (no network here, no alias variable)
check tag_box_image "" lbbox tag localhost/busybox:latest rockchin/langbot-sandbox:latest
check box_runtime "ok" python3 "$src/tests/install/box_smoke.py" "$LBT_STAGE/usr/bin/lbbox"

# -- the README: every block marked runnable, top to bottom, as a user would paste it -------------
# the Box runtime runs the skill store in lbbox-skill, found beside the installed lbbox-server
check box_skill_helper '"code": 0 s1' sh -c "mkdir -p $tmp/box && cd $tmp/box &&
	r=\$(echo '{\"seq_id\":1,\"action\":\"box_create_skill\",\"data\":{\"skill\":{\"name\":\"s1\"}}}' |
	LANGBOT_BOX_TRUSTED_INSTANCE_UUID=t lbbox box -s --ws-control-port 0 2>/dev/null |
	grep -o '\"code\": 0') && echo \"\$r \$(ls data/box/skills)\""

readme_blocks() {
	awk -v dir="$tmp/readme" '
		/^<!-- runnable -->$/ { want = 1; next }
		want && /^```sh$/ { n++; file = sprintf("%s/block-%02d.sh", dir, n); want = 0; next }
		file && /^```$/ { close(file); file = ""; next }
		file { print > file }
		{ want = 0 }' "$src/README.md"
}
mkdir -p "$tmp/readme" && readme_blocks
for b in "$tmp"/readme/block-*.sh; do
	check "readme_$(basename "$b" .sh)" "" sh -c "cd $tmp && bash -euo pipefail $b >$b.log 2>&1 ||
		{ echo failed:; tail -5 $b.log; }"
done
[ -e "$tmp/readme/block-01.sh" ] || check readme_has_runnable_blocks "yes" echo no
rm -rf /tmp/lbbox-demo /tmp/lbbox-ws

# -- as a user (nobody), in a cgroup delegated to it -----------------------------------------------
home=$tmp/home xdg=$tmp/xdg
mkdir -p "$home" "$xdg" && chown 65534:65534 "$home" "$xdg" && chmod 700 "$xdg"
cp -r "$layout" "$tmp/layout-user" && chmod -R a+rX "$tmp/layout-user"
delegated=()
while IFS=: read -r _ ctrls path; do
	case $ctrls in memory | pids | cpu | cpuacct | cpu,cpuacct | freezer) ;; *) continue ;; esac
	d=/sys/fs/cgroup/$ctrls$path/lbt-default-$$
	mkdir "$d" && chown 65534:65534 "$d" && delegated+=("$d")
done </proc/self/cgroup
as_user() {
	setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$home" XDG_RUNTIME_DIR="$xdg" "$@"
}
export DELEGATED="${delegated[*]}"
# runs CMD in the delegated cgroups (a child of its own, so this script stays where it was)
in_cgroup() { bash -c 'for d in $DELEGATED; do echo $$ > "$d/cgroup.procs"; done; exec "$@"' _ "$@"; }
check user_run_host_image "hello" as_user lbbox run -- echo hello
check user_load "Loaded image: localhost/busybox:latest" as_user lbbox load --oci-dir "$tmp/layout-user"
check user_run_image "0" as_user lbbox run --image localhost/busybox -- id -u
check user_paths "700 700" sh -c "stat -c %a $home/.local/share/lbbox $xdg/lbbox | xargs"
check user_session_and_proc "hi running" in_cgroup setpriv --reuid=65534 --regid=65534 \
	--clear-groups env HOME="$home" XDG_RUNTIME_DIR="$xdg" sh -c '
	lbbox session create u1 --image localhost/busybox >/dev/null &&
	out=$(lbbox session exec u1 -- sh -c "echo hi") &&
	lbbox proc start u1 --id p1 -- sleep 1000 >/dev/null &&
	s=$(lbbox proc inspect u1 p1 | sed -n "s/.*\"status\":\"\([a-z]*\)\".*/\1/p") &&
	lbbox proc stop u1 p1 >/dev/null && lbbox session rm u1 >/dev/null && echo "$out $s"'
check user_detached_run "from-run 0 Exited" in_cgroup setpriv --reuid=65534 --regid=65534 \
	--clear-groups env HOME="$home" XDG_RUNTIME_DIR="$xdg" sh -c '
	lbbox run -d --name ur1 localhost/busybox sh -c "echo from-run; exec sleep 600" >/dev/null &&
	for i in $(seq 100); do lbbox logs ur1 | grep -q from-run && break; sleep 0.1; done &&
	l=$(lbbox logs ur1) && u=$(lbbox exec ur1 id -u) && lbbox stop -t 1 ur1 >/dev/null &&
	s=$(lbbox ps -a | grep -o Exited) && lbbox rm ur1 >/dev/null && echo "$l $u $s"'

# -- nothing left ----------------------------------------------------------------------------------
# no sandbox state, no cgroup of a sandbox, no process running an installed binary
leftovers() {
	for d in /run/lbbox "$xdg/lbbox"; do
		ls "$d" | grep -E '^[0-9a-f]{12}$'
		ls "$d/box/sessions" 2>/dev/null
	done
	comm -13 <(echo "$cgroups_before") <(sandbox_cgroups) | grep .
	for p in /proc/[0-9]*; do
		case $(readlink "$p/exe" 2>/dev/null) in "$LBT_STAGE"/*) echo "process ${p#/proc/}" ;; esac
	done
}
check nothing_left "" leftovers
for d in "${delegated[@]}"; do rmdir "$d/lbbox-"* 2>/dev/null; rmdir "$d"; done
echo "[====] Synthesis: Tested: $((passed + failed)) | Passing: $passed | Failing: $failed | Crashing: 0"
[ "$failed" = 0 ]
