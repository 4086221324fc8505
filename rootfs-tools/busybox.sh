#!/bin/bash
# busybox.sh — build a minimal busybox root filesystem, offline, in seconds.
#
# usage: rootfs-tools/busybox.sh [-v] DEST
#
# The static busybox comes from Debian's busybox-static package: the installed
# /bin/busybox when that package provides it and it is static, otherwise the
# package is fetched with `apt-get download` and unpacked in a temporary dir.
#
# The tree is built in a sibling temporary directory and renamed into place,
# so DEST is either absent, the old tree or the complete new tree. DEST holds
# a stamp (.lbbox-rootfs-stamp) with the busybox sha256 and the layout version;
# when it matches, nothing is done. Builders of the same parent directory are
# serialised with flock(1). Prints nothing but errors unless -v.
set -euo pipefail
export LC_ALL=C
umask 022

# Bump when the layout below changes, so existing trees get rebuilt.
LAYOUT_VERSION=1
PROG=busybox.sh
# shellcheck source=rootfs-tools/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"
rootfs_args "$@"

is_static() {
	# ldd exits 1 on static binaries; its message is what tells them apart.
	local out
	out=$(ldd "$1" 2>&1 || true)
	case "$out" in
	*"not a dynamic executable"* | *"statically linked"*) return 0 ;;
	esac
	return 1
}

# Sets $bb to a static busybox from busybox-static, downloading it if needed.
bb=""
find_busybox() {
	local status
	status=$(dpkg-query -W -f='${Status}' busybox-static 2>/dev/null || true)
	if [ "$status" = "install ok installed" ] &&
		dpkg-query -L busybox-static 2>/dev/null | grep -qx /bin/busybox &&
		[ -x /bin/busybox ] && is_static /bin/busybox; then
		bb=/bin/busybox
		return
	fi
	log "fetching busybox-static with apt-get download"
	local dl
	dl=$(mktemp -d "${TMPDIR:-/tmp}/lbbox-busybox-deb.XXXXXX")
	tmp_paths+=("$dl")
	# apt drops privileges to _apt for downloads; let it write here.
	chown _apt "$dl" 2>/dev/null || true
	(cd "$dl" && apt-get -qq download busybox-static >/dev/null) ||
		die "apt-get download busybox-static failed"
	local deb
	deb=$(find "$dl" -maxdepth 1 -name 'busybox-static_*.deb' | head -n1)
	[ -n "$deb" ] || die "apt-get download produced no busybox-static .deb"
	dpkg-deb -x "$deb" "$dl/x"
	[ -x "$dl/x/bin/busybox" ] || die "busybox-static package has no bin/busybox"
	is_static "$dl/x/bin/busybox" || die "busybox from busybox-static is not static"
	bb=$dl/x/bin/busybox
}

# Sets $target to the relative path from directory $1 (inside the rootfs, no
# leading /) to bin/busybox. No subshell: it runs once per applet.
target=""
link_target() {
	local rest=$1
	target=bin/busybox
	while [ -n "$rest" ]; do
		target=../$target
		case "$rest" in
		*/*) rest=${rest#*/} ;;
		*) rest="" ;;
		esac
	done
}

populate() {
	local root=$1 bb=$2
	local d
	for d in bin sbin usr/bin usr/sbin etc proc sys dev root home home/sandbox \
		workspace var/tmp run; do
		mkdir -p "$root/$d"
	done
	mkdir -m 1777 "$root/tmp"
	chmod 1777 "$root/tmp" "$root/var/tmp"
	chmod 0700 "$root/root"
	chown 1000:1000 "$root/home/sandbox"

	cp -- "$bb" "$root/bin/busybox"
	chmod 0755 "$root/bin/busybox"

	# --list-full gives each applet's usual directory (bin/sh, usr/bin/awk …).
	# Skip busybox itself: linking it would replace the binary with a
	# self-referencing symlink. linuxrc is the initrd entry point, not an applet
	# anyone runs in a sandbox.
	local path name dir
	while IFS= read -r path; do
		name=${path##*/}
		case "$name" in
		busybox | linuxrc | "") continue ;;
		esac
		case "$path" in
		*/*) dir=${path%/*} ;;
		*) dir=bin ;;
		esac
		# Some applets exist in more than one list entry; first one wins.
		[ -e "$root/$dir/$name" ] || [ -L "$root/$dir/$name" ] && continue
		mkdir -p "$root/$dir"
		link_target "$dir"
		ln -s "$target" "$root/$dir/$name"
	done < <("$root/bin/busybox" --list-full)
	[ -L "$root/bin/sh" ] || die "busybox has no sh applet"

	cat >"$root/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
sandbox:x:1000:1000:sandbox:/home/sandbox:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
EOF
	cat >"$root/etc/group" <<'EOF'
root:x:0:
sandbox:x:1000:
nogroup:x:65534:
EOF
	# Empty files: a read-only sandbox needs existing mountpoints to bind over.
	: >"$root/etc/hosts"
	: >"$root/etc/resolv.conf"
	: >"$root/etc/hostname"
	chmod 0644 "$root/etc/passwd" "$root/etc/group" "$root/etc/hosts" \
		"$root/etc/resolv.conf" "$root/etc/hostname"
}

main() {
	local sum stamp work
	find_busybox
	sum=$(sha256sum <"$bb")
	sum=${sum%% *}
	stamp=$(printf 'lbbox-rootfs busybox\nlayout %s\nbusybox-sha256 %s\n' \
		"$LAYOUT_VERSION" "$sum")
	rootfs_lock "$stamp" || return 0

	log "building $dest from $bb (sha256 $sum)"
	rootfs_tmp work tmp -d
	chmod 0755 "$work"
	populate "$work" "$bb"
	rootfs_install "$work" "$stamp"
	log "built $dest ($(find "$dest" -type l | wc -l) applet links)"
}

main
