#!/usr/bin/env python3
"""Builds a hostile OCI image layout for the security tests, offline (standard library only).

usage: mkimage.py DEST NAME [--base ROOTFS] [--user USER] ENTRY...

The image has the tree ROOTFS as its first layer (when given) and, on top, one layer holding
ENTRY..., each of which is one tar member, exactly as an attacker would write it:

  chr:PATH:MAJOR:MINOR     a character device     blk:PATH:MAJOR:MINOR  a block device
  fifo:PATH                a FIFO                 dir:PATH:MODE         a directory
  file:PATH:MODE:TEXT      a regular file (MODE in octal, e.g. 4755 for setuid root)
  copy:PATH:MODE:HOSTFILE  a regular file with HOSTFILE's bytes (e.g. a static binary)
  symlink:PATH:TARGET      hardlink:PATH:TARGET

Every member is owned by root. The config's User is USER verbatim (e.g. "4294967296").
"""
import gzip
import hashlib
import io
import json
import os
import sys
import tarfile


def add_tree(tar, root):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(dirnames) + sorted(filenames):
            path = os.path.join(dirpath, name)
            arc = os.path.relpath(path, root)
            if arc == ".lbbox-rootfs-stamp":
                continue
            info = tar.gettarinfo(path, arcname=arc)
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if info.isreg():
                with open(path, "rb") as f:
                    tar.addfile(info, f)
            else:
                tar.addfile(info)


def member(spec):
    kind, rest = spec.split(":", 1)
    info = tarfile.TarInfo()
    info.uid = info.gid = 0
    data = None
    if kind in ("chr", "blk"):
        path, major, minor = rest.split(":")
        info.type = tarfile.CHRTYPE if kind == "chr" else tarfile.BLKTYPE
        info.devmajor, info.devminor, info.mode = int(major), int(minor), 0o666
    elif kind == "fifo":
        path, info.type, info.mode = rest, tarfile.FIFOTYPE, 0o644
    elif kind == "dir":
        path, mode = rest.split(":")
        info.type, info.mode = tarfile.DIRTYPE, int(mode, 8)
    elif kind in ("file", "copy"):
        path, mode, text = rest.split(":", 2)
        info.mode = int(mode, 8)
        if kind == "copy":
            with open(text, "rb") as f:
                data = f.read()
        else:
            data = text.encode()
        info.size = len(data)
    elif kind in ("symlink", "hardlink"):
        path, target = rest.split(":", 1)
        info.type = tarfile.SYMTYPE if kind == "symlink" else tarfile.LNKTYPE
        info.linkname, info.mode = target, 0o777
    else:
        sys.exit("mkimage.py: unknown entry kind " + kind)
    info.name = path.lstrip("/")
    return info, data


def layer(write):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        write(tar)
    tar_bytes = raw.getvalue()
    return tar_bytes, gzip.compress(tar_bytes, mtime=0)


def main(argv):
    dest, name, rest = argv[0], argv[1], argv[2:]
    base = user = None
    while rest and rest[0] in ("--base", "--user"):
        if rest[0] == "--base":
            base = rest[1]
        else:
            user = rest[1]
        rest = rest[2:]
    os.makedirs(os.path.join(dest, "blobs", "sha256"))

    def blob(data):
        digest = hashlib.sha256(data).hexdigest()
        with open(os.path.join(dest, "blobs", "sha256", digest), "wb") as f:
            f.write(data)
        return {"digest": "sha256:" + digest, "size": len(data)}

    layers = []
    if base:
        layers.append(layer(lambda tar: add_tree(tar, base)))

    def hostile(tar):
        for spec in rest:
            info, data = member(spec)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)

    layers.append(layer(hostile))
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {"Env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin"], "Cmd": ["/bin/sh"]},
        "rootfs": {"type": "layers",
                   "diff_ids": ["sha256:" + hashlib.sha256(t).hexdigest() for t, _ in layers]},
    }
    if user is not None:
        config["config"]["User"] = user
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": dict(mediaType="application/vnd.oci.image.config.v1+json",
                       **blob(json.dumps(config).encode())),
        "layers": [dict(mediaType="application/vnd.oci.image.layer.v1.tar+gzip", **blob(gz))
                   for _, gz in layers],
    }
    index = {"schemaVersion": 2, "manifests": [dict(
        mediaType="application/vnd.oci.image.manifest.v1+json",
        annotations={"org.opencontainers.image.ref.name": name},
        **blob(json.dumps(manifest).encode()))]}
    with open(os.path.join(dest, "index.json"), "w") as f:
        json.dump(index, f)
    with open(os.path.join(dest, "oci-layout"), "w") as f:
        f.write('{"imageLayoutVersion":"1.0.0"}')


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1:])
