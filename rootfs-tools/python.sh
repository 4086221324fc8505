#!/bin/bash
# python.sh — build a Debian bookworm root filesystem with Python 3, pip and
# venv, as a plain directory, with mmdebstrap.
#
# usage: rootfs-tools/python.sh [-v] DEST
#
# The packages come from the same Debian mirror(s) the host's apt uses (read
# from /etc/apt/sources.list and /etc/apt/sources.list.d/*.{list,sources}):
# on these machines nothing else is reachable. The host's apt settings that
# decide whether that mirror works at all (proxy, Check-Valid-Until for
# snapshot mirrors) are passed on too.
#
# Like busybox.sh: built in a sibling temporary directory, renamed into place,
# and skipped when DEST/.lbbox-rootfs-stamp matches (package list, variant,
# mirror lines, layout version). Builders of one parent dir are serialised
# with flock(1). Prints nothing but errors unless -v. The mmdebstrap flow is
# lib.sh's debian_rootfs, shared with box.sh.
set -euo pipefail
export LC_ALL=C
umask 022

PACKAGES="python3,python3-venv,python3-pip,coreutils,ca-certificates"

PROG=python.sh
# shellcheck source=rootfs-tools/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"
rootfs_args "$@"
debian_rootfs python
