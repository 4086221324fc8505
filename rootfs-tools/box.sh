#!/bin/bash
# box.sh — build the default Box image: a Debian bookworm root filesystem with what
# LangBot's tools and MCP servers run in a sandbox: python and python3 (venv, pip), node,
# npm and npx, git, curl, and common command-line tools, as a plain directory.
#
# usage: rootfs-tools/box.sh [-v] DEST
#
# Same mirror, stamp, locking and atomic install as python.sh (lib.sh's debian_rootfs).
# scripts/setup.sh loads it into the store as localhost/box:latest, the image the Box
# runtime gives a session that asks for LangBot's default (rockchin/langbot-sandbox:latest).
set -euo pipefail
export LC_ALL=C
umask 022

# python-is-python3: LangBot's file tools run `python - <<'PY'` and its MCP setup rewrites
# host interpreters to `python`. nodejs + npm: most stdio MCP servers start with npx.
PACKAGES="python3,python-is-python3,python3-venv,python3-pip,nodejs,npm,git,curl,ca-certificates"
PACKAGES+=",coreutils,procps,less,jq,unzip,xz-utils,file"

PROG=box.sh
# shellcheck source=rootfs-tools/lib.sh
. "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"
rootfs_args "$@"
debian_rootfs box
