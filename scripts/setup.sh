#!/usr/bin/env bash
# Prepares a Debian 12 host for lbbox: installs the Debian packages it builds and tests with,
# builds it (build/), and builds the images (busybox for the tests, python for users, box for
# LangBot's sessions and the tests of it).
# Idempotent: a second run installs nothing and rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

LBBOX_ROOT=${LBBOX_ROOT:-/var/lib/lbbox}

# build + run time libraries
PKGS=(gcc make cmake pkg-config libseccomp-dev libcap-dev libnl-3-dev libnl-route-3-dev
      libjansson-dev libssl-dev libcriterion-dev libarchive-dev libcurl4-openssl-dev
      # the skill store of the Box runtime: SKILL.md front matter
      libyaml-dev
      # the Box runtime's HTTP / WebSocket side (lbbox serve, the relay)
      libwebsockets-dev
      # --network on: NAT and filtering (nft); the network tests' DNS responder (python3)
      nftables python3
      # --network on without root: pasta (user-mode networking, as podman's rootless mode)
      passt
      # images (rootfs-tools/) and the cgroup-v2 guest (scripts/vm-test.sh)
      busybox-static mmdebstrap qemu-system-x86 iproute2 util-linux
      # OCI layout interoperability checks of the image store (tests/unit/test_load.c)
      skopeo umoci
      # the man pages (docs/man/*.scd; cmake --install puts them under share/man/man1)
      scdoc
      # style check, and the peers scripts/bench.sh compares against
      clang-format crun bubblewrap jq
      # lbbox-runc's acceptance: podman (with conmon and the CNI plugins of its default
      # network) and containerd (ctr, the runc shim) run containers with lbbox as their runtime;
      # catatonit: the init of a podman pod's infra container (podman's pause image is built
      # from it)
      podman conmon containernetworking-plugins containerd catatonit
      # tests/oci/cri.py: a CRI client (kubelet's side of containerd's CRI plugin) over gRPC
      python3-grpcio
      # scripts/fuzz.sh: clang and its libFuzzer + sanitizer runtimes
      clang libclang-rt-14-dev)

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "setup: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null

# The busybox rootfs: the test suite's image (build/images) and the user's --image busybox.
rootfs-tools/busybox.sh build/images/busybox/rootfs
rootfs-tools/busybox.sh "$LBBOX_ROOT/images/busybox/rootfs"
# The Python sandbox image; LBBOX_SKIP_PYTHON=1 skips it (it needs a Debian mirror, ~1 min).
if [ "${LBBOX_SKIP_PYTHON:-0}" != 1 ]; then
	rootfs-tools/python.sh "$LBBOX_ROOT/images/python/rootfs"
fi
# The default Box image (python, node/npx, git, curl; rootfs-tools/box.sh): what LangBot's
# default image runs as, and the image of the tests' rpc/box_image. LBBOX_SKIP_BOX=1 skips it,
# for developers only (that test then skips too; CI must build it).
if [ "${LBBOX_SKIP_BOX:-0}" != 1 ]; then
	rootfs-tools/box.sh "$LBBOX_ROOT/images/box/rootfs"
fi
# The same trees as OCI image layouts (build/images/NAME-oci, rebuilt when the tree's stamp
# changes; the test suite loads them) and as images in the store (run --image localhost/NAME).
oci_image() { # rootfs name
	local rootfs=$1 layout=build/images/$2-oci ref=localhost/$2:latest
	[ -d "$rootfs" ] || return 0
	if ! cmp -s "$rootfs/.lbbox-rootfs-stamp" "$layout/.source-stamp" 2>/dev/null; then
		rootfs-tools/oci-layout.sh "$rootfs" "$layout" "$ref" || return 1
		cp "$rootfs/.lbbox-rootfs-stamp" "$layout/.source-stamp"
		build/lbbox --root "$LBBOX_ROOT" rmi "$ref" >/dev/null 2>&1 || true
	fi
	build/lbbox --root "$LBBOX_ROOT" inspect "$ref" >/dev/null 2>&1 ||
		build/lbbox --root "$LBBOX_ROOT" load --oci-dir "$layout" >/dev/null
}
oci_image build/images/busybox/rootfs busybox
oci_image "$LBBOX_ROOT/images/python/rootfs" python
oci_image "$LBBOX_ROOT/images/box/rootfs" box
echo "setup: done; try: build/lbbox run -- echo hello"
