#!/bin/bash
# oci-layout.sh — package a root filesystem directory as a one-layer OCI image layout, offline.
#
# usage: rootfs-tools/oci-layout.sh [--user USER] ROOTFS DEST NAME [CMD...]
#
# DEST becomes an OCI image layout (oci-layout, index.json, blobs/sha256) holding one image
# whose ref.name annotation is NAME (e.g. localhost/busybox:latest), ready for
# `lbbox load --oci-dir DEST`. The layer is a reproducible tar+gzip of ROOTFS (sorted, numeric
# owners, fixed mtime for the tar headers' order only). CMD defaults to /bin/sh.
set -euo pipefail
export LC_ALL=C
umask 022

user=""
if [ "${1:-}" = --user ]; then
	user=$2
	shift 2
fi
[ $# -ge 3 ] || { echo "usage: $0 [--user USER] ROOTFS DEST NAME [CMD...]" >&2; exit 2; }
rootfs=$1 dest=${2%/} name=$3
shift 3
[ -d "$rootfs" ] || { echo "oci-layout.sh: $rootfs is not a directory" >&2; exit 1; }
cmd=("$@")
[ ${#cmd[@]} -gt 0 ] || cmd=(/bin/sh)

work=$(mktemp -d "$(dirname -- "$dest")/.oci-layout.XXXXXX")
trap 'rm -rf -- "$work"' EXIT
mkdir -p "$work/blobs/sha256"

sha() { sha256sum "$1" | cut -d' ' -f1; }
put() { # file -> blob; prints digest hex
	local h
	h=$(sha "$1")
	mv -- "$1" "$work/blobs/sha256/$h"
	printf '%s' "$h"
}
json_array() { # args -> ["a","b"] (no quotes or backslashes expected in CMD)
	local out="" a
	for a in "$@"; do out+="${out:+,}\"$a\""; done
	printf '[%s]' "$out"
}

tar --sort=name --numeric-owner --exclude=./.lbbox-rootfs-stamp -C "$rootfs" -cf "$work/layer.tar" .
diff_id=$(sha "$work/layer.tar")
gzip -n -6 "$work/layer.tar"
layer_size=$(stat -c %s "$work/layer.tar.gz")
layer=$(put "$work/layer.tar.gz")

printf '{"architecture":"amd64","os":"linux","config":{"User":"%s","Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],"Cmd":%s},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
	"$user" "$(json_array "${cmd[@]}")" "$diff_id" >"$work/config.json"
config_size=$(stat -c %s "$work/config.json")
config=$(put "$work/config.json")

printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:%s","size":%s}]}' \
	"$config" "$config_size" "$layer" "$layer_size" >"$work/manifest.json"
manifest_size=$(stat -c %s "$work/manifest.json")
manifest=$(put "$work/manifest.json")

printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"org.opencontainers.image.ref.name":"%s"}}]}' \
	"$manifest" "$manifest_size" "$name" >"$work/index.json"
printf '{"imageLayoutVersion":"1.0.0"}' >"$work/oci-layout"

rm -rf -- "$dest"
mv -T -- "$work" "$dest"
trap - EXIT
