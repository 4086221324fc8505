# lib.sh — what every rootfs builder shares: options, messages, temporary paths, and the
# stamp + atomic-rename install, so DEST is always absent, the old tree or the complete new one.
# Sourced by the builders after they set PROG; defines $verbose, $dest, $parent, $base.
# shellcheck shell=bash

STAMP_NAME=.lbbox-rootfs-stamp
verbose=0
tmp_paths=()

die() { printf '%s: %s\n' "$PROG" "$*" >&2; exit 1; }
log() { if [ "$verbose" = 1 ]; then printf '%s: %s\n' "$PROG" "$*" >&2; fi; }
usage() { printf 'usage: %s [-v] DEST\n' "$PROG" >&2; exit 2; }

cleanup() {
	local p
	for p in "${tmp_paths[@]}"; do rm -rf -- "$p"; done
}
trap cleanup EXIT

# rootfs_args "$@": -v, then DEST.
rootfs_args() {
	local opt
	while getopts vh opt; do
		case "$opt" in
		v) verbose=1 ;;
		*) usage ;;
		esac
	done
	shift $((OPTIND - 1))
	[ $# -eq 1 ] || usage
	dest=${1%/}
	[ -n "$dest" ] || die "DEST must not be /"
	parent=$(dirname -- "$dest")
	base=$(basename -- "$dest")
}

# rootfs_lock STAMP: serialises builders of the same parent directory; returns 1 (nothing to
# do) when DEST already carries STAMP.
rootfs_lock() {
	mkdir -p -- "$parent"
	exec 9<"$parent"
	flock 9
	if [ -f "$dest/$STAMP_NAME" ] && [ "$(cat "$dest/$STAMP_NAME")" = "$1" ]; then
		log "$dest is up to date"
		return 1
	fi
}

# rootfs_tmp VAR KIND [-d]: sets VAR to a new temporary path beside DEST (a directory with
# -d), removed on exit unless installed. Not a $(...) function: the list must see the path.
rootfs_tmp() {
	local p
	if [ "${3:-}" = -d ]; then
		p=$(mktemp -d "$parent/.$base.$2.XXXXXX")
	else
		p=$(mktemp "$parent/.$base.$2.XXXXXX")
	fi
	tmp_paths+=("$p")
	printf -v "$1" '%s' "$p"
}

# rootfs_install WORK STAMP: stamps the finished tree and renames it into place.
rootfs_install() {
	local work=$1 old
	printf '%s\n' "$2" >"$work/$STAMP_NAME"
	# rename(2) cannot replace a non-empty directory: move the old tree aside first.
	if [ -e "$dest" ] || [ -L "$dest" ]; then
		rootfs_tmp old old -d
		mv -T -- "$dest" "$old/tree"
	fi
	mv -T -- "$work" "$dest"
}
