#!/bin/sh
# vm-test.sh - run test binaries as root inside a throw-away pure-cgroup-v2 Linux guest (qemu).
#
# Hybrid and legacy hosts cannot exercise lbbox's cgroup v2 code (nor a fresh pid 1 world), so
# this boots Debian's cloud kernel from an initramfs holding only a static busybox, the test
# binaries, their shared libraries and any extra files, and runs each binary in
# /sys/fs/cgroup/test/runner with CGROOT=/sys/fs/cgroup/test (a subtree it may use freely).
#
#   usage: scripts/vm-test.sh [--extra HOSTPATH:GUESTPATH ...] [--uid UID] TEST_BIN...
#     --extra  copy a file or directory (recursively) into the guest; ELF files bring their libs
#     --uid    run the tests as UID instead of root (test/ is delegated to it; needs util-linux)
#   env: VM_ENV="K=V K2=V2"   environment of every test in the guest (e.g. LBBOX_BIN=/opt/lbbox)
#        LBBOX_VM_CACHE        kernel cache (default ~/.cache/lbbox-vm)
#        VM_MEM VM_SMP         guest memory (MiB) and CPUs (default 1024, 2)
#        VM_TIMEOUT            whole run, seconds (default 900); VM_TEST_TIMEOUT per binary (300)
#        VM_KERNEL VM_OVERLAY_KO  use this bzImage / overlay.ko instead of the cached Debian one
#        VM_ACCEL              force tcg or kvm;  VM_LOG  keep the console log at this path
# Prints every test's output, then "@@TEST-END name rc=N" per binary; exits 0 only when the guest
# reports "@@VM-DONE fail=0". Host needs qemu-system-x86 and busybox-static (not installed here).
set -eu

die() { echo "vm-test.sh: $*" >&2; exit 2; }

EXTRAS=${VM_EXTRA:-}
RUN_UID=0
while [ $# -gt 0 ]; do
	case $1 in
	--extra) [ $# -ge 2 ] || die "--extra needs HOSTPATH:GUESTPATH"; EXTRAS="$EXTRAS $2"; shift 2 ;;
	--extra=*) EXTRAS="$EXTRAS ${1#--extra=}"; shift ;;
	--uid) [ $# -ge 2 ] || die "--uid needs a number"; RUN_UID=$2; shift 2 ;;
	--) shift; break ;;
	-*) die "unknown option $1" ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] || die "usage: $0 [--extra HOSTPATH:GUESTPATH ...] [--uid UID] TEST_BIN..."

command -v qemu-system-x86_64 >/dev/null ||
	die "qemu-system-x86_64 not found: apt-get install --no-install-recommends qemu-system-x86"
BUSYBOX=${VM_BUSYBOX:-/bin/busybox}
[ -x "$BUSYBOX" ] || die "$BUSYBOX not found: apt-get install busybox-static"
# the guest has no libc of its own for busybox: it must be the static one
if ldd "$BUSYBOX" >/dev/null 2>&1; then die "$BUSYBOX is not static: apt-get install busybox-static"; fi
for t in "$@"; do [ -f "$t" ] && [ -x "$t" ] || die "$t is not an executable file"; done
if [ "$RUN_UID" != 0 ]; then command -v setpriv >/dev/null || die "--uid needs setpriv (util-linux)"; fi

CACHE=${LBBOX_VM_CACHE:-$HOME/.cache/lbbox-vm}
MEM=${VM_MEM:-1024}; SMP=${VM_SMP:-2}; TMO=${VM_TIMEOUT:-900}; TEST_TMO=${VM_TEST_TIMEOUT:-300}

# ---- 1. kernel + overlay.ko, once per kernel package, then cached ------------------------------
# The meta package is resolved each time (ABI bumps rename linux-image-6.1.0-NN-cloud-amd64);
# without apt metadata any cached kernel will do.
fetch_kernel() {
	pkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null |
		awk '/Depends: linux-image-/{print $2; exit}') || true
	if [ -z "$pkg" ]; then
		k=$(ls -d "$CACHE"/linux-image-*/vmlinuz 2>/dev/null | head -1)
		[ -n "$k" ] || die "cannot resolve linux-image-cloud-amd64 (apt-get update?) and no cached kernel in $CACHE"
		dirname "$k"; return
	fi
	kd=$CACHE/$pkg
	if [ ! -f "$kd/vmlinuz" ]; then
		echo "vm-test.sh: downloading $pkg into $CACHE" >&2
		tmp=$(mktemp -d "$CACHE/dl.XXXXXX")
		(cd "$tmp" && apt-get download "$pkg" >/dev/null 2>&1 && dpkg-deb -x "$pkg"_*.deb x) ||
			{ rm -rf "$tmp"; die "apt-get download $pkg failed"; }
		mkdir -p "$tmp/k"
		mv "$tmp"/x/boot/vmlinuz-* "$tmp/k/vmlinuz"
		find "$tmp/x" -name overlay.ko -exec mv {} "$tmp/k/overlay.ko" \;
		rm -rf "$kd"; mv "$tmp/k" "$kd"; rm -rf "$tmp"
	fi
	echo "$kd"
}
mkdir -p "$CACHE"
OVERLAY_KO=${VM_OVERLAY_KO:-}
if [ -z "${VM_KERNEL:-}" ]; then
	kd=$(fetch_kernel)
	VM_KERNEL=$kd/vmlinuz
	[ -n "$OVERLAY_KO" ] || OVERLAY_KO=$kd/overlay.ko
fi
[ -f "$VM_KERNEL" ] || die "kernel $VM_KERNEL not found"

# ---- 2. initramfs --------------------------------------------------------------------------------
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT; trap 'exit 130' INT TERM
R=$W/root
mkdir -p "$R"/bin "$R"/tests "$R"/proc "$R"/sys "$R"/dev "$R"/tmp "$R"/run "$R"/var/lib "$R"/etc \
	"$R"/root "$R"/newroot
cp "$BUSYBOX" "$R"/bin/busybox
if [ -n "$OVERLAY_KO" ] && [ -f "$OVERLAY_KO" ]; then cp "$OVERLAY_KO" "$R"/overlay.ko; fi
printf 'root:x:0:0::/root:/bin/sh\n' >"$R"/etc/passwd; printf 'root:x:0:\n' >"$R"/etc/group
if [ "$RUN_UID" != 0 ]; then
	printf 't:x:%s:%s::/tmp:/bin/sh\n' "$RUN_UID" "$RUN_UID" >>"$R"/etc/passwd
	printf 't:x:%s:\n' "$RUN_UID" >>"$R"/etc/group
fi

is_elf() { [ "$(head -c 4 "$1" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = 7f454c46 ]; }

add_libs() { # every shared library ldd lists for $1, at the same path in the guest
	ldd "$1" 2>/dev/null | grep -o '/[^ ]*' | while read -r lib; do
		[ -e "$R$lib" ] && continue
		mkdir -p "$R$(dirname "$lib")"; cp -L "$lib" "$R$lib"
	done
}

add_path() { # $1 host file or directory, $2 guest path
	mkdir -p "$R$(dirname "$2")"
	if [ -d "$1" ]; then
		cp -a "$1" "$R$2"
		find "$1" -type f | while read -r f; do if is_elf "$f"; then add_libs "$f"; fi; done
	else
		cp -L "$1" "$R$2"
		if is_elf "$1"; then add_libs "$1"; fi
	fi
}

n=0
for t in "$@"; do n=$((n + 1)); add_path "$t" "/tests/$(printf %02d $n)-$(basename "$t")"; done
for x in $EXTRAS; do
	case $x in *:*) add_path "${x%%:*}" "${x#*:}" ;; *) add_path "$x" "$x" ;; esac
done
if [ "$RUN_UID" != 0 ]; then add_path "$(command -v setpriv)" /bin/setpriv.ul; fi
# CRITERION_JOBS=1: suites share one cgroup subtree and may not run their tests in parallel
{ echo CRITERION_JOBS=1; for kv in ${VM_ENV:-}; do echo "$kv"; done; } >"$R"/etc/vm-env

cat >"$R"/init <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin:/usr/sbin HOME=/root
mount -t devtmpfs dev /dev 2>/dev/null
exec 0</dev/console 1>/dev/console 2>&1
if [ -z "${STAGE2:-}" ]; then
	# pivot_root is impossible from the initramfs rootfs: move everything into a real tmpfs
	mount -t tmpfs -o size=90% root /newroot
	for e in /*; do
		case $e in /proc | /sys | /dev | /newroot) ;; *) cp -a "$e" /newroot/ ;; esac
	done
	mkdir -p /newroot/proc /newroot/sys /newroot/dev /newroot/newroot
	umount -l /dev
	exec env STAGE2=1 switch_root /newroot /init
fi
mkdir -p /dev/pts /dev/shm /tmp /run /var/lib
mount -t devpts devpts /dev/pts; mount -t tmpfs shm /dev/shm
mount -t proc proc /proc; mount -t sysfs sys /sys
mount -t tmpfs -o mode=1777 tmp /tmp; mount -t tmpfs -o mode=755 run /run
mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup
echo "+cpu +cpuset +memory +pids" >/sys/fs/cgroup/cgroup.subtree_control
[ -f /overlay.ko ] && insmod /overlay.ko
ip link set lo up 2>/dev/null
while read -r kv; do export "$kv"; done </etc/vm-env
U=$(sed -n 's/.*lbbox.uid=\([0-9]*\).*/\1/p' /proc/cmdline); U=${U:-0}
TEST_TMO=$(sed -n 's/.*lbbox.test_timeout=\([0-9]*\).*/\1/p' /proc/cmdline)
CG=/sys/fs/cgroup/test
# test/ is the subtree tests own (CGROOT); each runs in the leaf test/runner, as processes may
# only sit in leaves once test/ has controllers enabled
mkdir $CG; echo "+cpu +cpuset +memory +pids" >$CG/cgroup.subtree_control
[ "$U" != 0 ] && chown -R "$U:$U" $CG && chmod 1777 /tmp
echo "@@VM kernel=$(uname -r) uptime=$(cut -d' ' -f1 /proc/uptime) cgroup=$(cat /sys/fs/cgroup/cgroup.subtree_control)"

rm_cgroup_tree() { # kills what is left in $1 and removes it with every child cgroup
	[ -d "$1" ] || return 0
	echo 1 >"$1/cgroup.kill" 2>/dev/null
	i=0; while grep -q 'populated 1' "$1/cgroup.events" && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	find "$1" -depth -type d -exec rmdir {} \; 2>/dev/null
	[ ! -d "$1" ]
}

fail=0
for t in /tests/*; do
	name=${t##*/}; name=${name#[0-9][0-9]-}
	echo "@@TEST-START $name uptime=$(cut -d' ' -f1 /proc/uptime)"
	mkdir $CG/runner; [ "$U" != 0 ] && chown -R "$U:$U" $CG/runner
	if [ "$U" = 0 ]; then
		sh -c 'echo $$ >$0/runner/cgroup.procs; cd /tmp; exec env CGROOT=$0 timeout -s KILL $1 "$2"' $CG "$TEST_TMO" "$t"
	else
		# the user's alone in its delegated subtree, timeout too, as in a systemd user slice:
		# a root process there makes enabling cpuset fail (moving it needs CAP_SYS_NICE)
		sh -c 'echo $$ >$0/runner/cgroup.procs; cd /tmp; exec env CGROOT=$0 HOME=/tmp setpriv.ul --reuid=$3 --regid=$3 --clear-groups timeout -s KILL $1 "$2"' $CG "$TEST_TMO" "$t" "$U"
	fi
	rc=$?
	# a fresh runner per binary: the last one may hold lbbox-leaf and enabled controllers
	rm_cgroup_tree $CG/runner || echo "@@WARN cannot remove $CG/runner"
	left=$(find $CG -mindepth 1 -type d)
	if [ -n "$left" ]; then
		echo "@@LEFTOVER-CGROUPS after $name:" $left
		for d in $left; do rm_cgroup_tree "$d"; done
		[ $rc = 0 ] && rc=99
	fi
	echo "@@TEST-END $name rc=$rc uptime=$(cut -d' ' -f1 /proc/uptime)"
	[ $rc = 0 ] || fail=$((fail + 1))
done
echo
echo "@@VM-DONE fail=$fail uptime=$(cut -d' ' -f1 /proc/uptime)"
poweroff -f
EOF
chmod +x "$R"/init
(cd "$R" && find . | "$BUSYBOX" cpio -o -H newc 2>/dev/null | gzip -1) >"$W"/initrd.gz

# ---- 3. boot -----------------------------------------------------------------------------------
# KVM only with real VT-x/AMD-V: a kvm_pvm /dev/kvm (nested, no vmx/svm) hangs a stock kernel.
ACCEL=tcg
if [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; then ACCEL=kvm; fi
ACCEL=${VM_ACCEL:-$ACCEL}
LOG=${VM_LOG:-$W/console.log}
# quiet + loglevel=3: OOM kills and the like stay off the console (and out of the marker lines)
timeout "$TMO" qemu-system-x86_64 -accel "$ACCEL" -m "$MEM" -smp "$SMP" -nic none \
	-nographic -no-reboot -kernel "$VM_KERNEL" -initrd "$W"/initrd.gz \
	-append "console=ttyS0 panic=-1 quiet loglevel=3 cgroup_no_v1=all lbbox.uid=$RUN_UID lbbox.test_timeout=$TEST_TMO" \
	</dev/null | tee "$LOG" || true
tr -d '\r' <"$LOG" | grep -Eq '^@@VM-DONE fail=0( |$)'
