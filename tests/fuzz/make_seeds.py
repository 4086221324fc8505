#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets into tests/fuzz/corpus/<target>/.

Run once by hand when a seed changes; the output is committed (scripts/fuzz.sh never runs this).
Seeds are small, hand-made, valid or nearly valid inputs: what the fuzzer mutates from.
"""
import gzip
import hashlib
import io
import json
import os
import shutil
import sys
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(HERE, "corpus")


def put(target, name, data):
    if isinstance(data, str):
        data = data.encode()
    assert len(data) <= 16384, "%s/%s is %d bytes" % (target, name, len(data))
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def line(obj):
    return json.dumps(obj) + "\n"


# ---- RPC lines, as tests/rpc/conformance.py sends them ----------------------------------------

IMAGE = "rockchin/langbot-sandbox:latest"
CTX = {"instance_uuid": "inst-1", "workspace_uuid": "ws-1", "placement_generation": 1}


def spec(session_id, cmd="", **kw):
    # tests/rpc/conformance.py's spec(): every BoxSpec field with LangBot's defaults
    s = {"cmd": cmd, "workdir": "/workspace", "timeout_sec": 30, "network": "off",
         "session_id": session_id, "env": {}, "image": IMAGE, "host_path": None,
         "host_path_mode": "rw", "mount_path": "/workspace", "extra_mounts": [],
         "skill_name": None, "persistent": False, "cpus": 1.0, "memory_mb": 512,
         "pids_limit": 128, "read_only_rootfs": True, "workspace_quota_mb": 0}
    s.update(kw)
    return s


def request(seq, action, data, context=CTX):
    m = {"seq_id": seq, "action": action, "data": data}
    if context is not None:
        m["context"] = context
    return m


def chunked(text, piece):
    out = [line({"type": "chunk_start", "total_size": len(text.encode())})]
    raw, off = text.encode(), 0
    while off < len(raw):
        n = min(piece, len(raw) - off)
        while off + n < len(raw) and raw[off + n] & 0xC0 == 0x80:  # cut on a character
            n -= 1
        out.append(line({"type": "chunk_data", "data": raw[off:off + n].decode(),
                         "offset": off}))
        off += n
    out.append(line({"type": "chunk_end"}))
    return "".join(out)


def rpc():
    exec_line = line(request(1, "box_exec", spec("u1", "echo hi > f; cat f; echo err >&2; pwd")))
    put("rpc", "box_exec", exec_line)
    put("rpc", "managed_process", line(request(2, "box_start_managed_process", {
        "session_id": "m1", "spec": {"process_id": "loop", "command": "sh",
                                     "args": ["-c", "while true; do sleep 1; done"],
                                     "env": {"B": "2", "A": "1"}}})))
    put("rpc", "legacy_no_context", line(request(3, "box_get_sessions", {}, context=None)))
    # a message in chunks, with a message inside it that the reader drops, and noise around
    msg = json.dumps(request(4, "__ping", {"pad": "x\u20ac" * 40}), ensure_ascii=False)
    put("rpc", "chunked", "hello\n" + chunked(msg, 50) + "[1]\n{not json}\n" +
        line(request(5, "box_status", {})))
    put("rpc", "chunk_violation", line({"type": "chunk_start", "total_size": 4}) +
        line({"type": "chunk_data", "data": "{}", "offset": 1}))
    # what Python's json.loads reads and jansson does not: huge integers, overflowing reals,
    # "\u0000" (answered with a reason); and a text that is no JSON, whose seq_id is recovered
    put("rpc", "lenient_numbers", '{"seq_id": 99999999999999999999, "action": "box_exec", '
        '"data": {"timeout_sec": -1e400, "memory_mb": 123456789012345678901234567890, '
        '"cmd": "a\\u0000b"}}\n')
    put("rpc", "undecodable", '{"seq_id": 42, "action": "box_exec", "data": {"cmd": tru}}\n'
        '{"code": 0, "seq_id": 7, "data": [}\n')
    put("rpc", "tenancy", line(request(6, "box_get_session", {"session_id": " ../Bad id!! "},
                                       {"instance_uuid": "i", "workspace_uuid": "w\u00e9",
                                        "placement_generation": 0})))


# ---- Box specs --------------------------------------------------------------------------------

def box_spec():
    put("box_spec", "create_session", json.dumps(request(1, "box_create_session", spec("c1"))))
    # pydantic's lax forms: numeric strings, "yes", floats for ints, mounts, env
    put("box_spec", "lax_exec", json.dumps(request(2, "box_exec", spec(
        " e1 ", "true", timeout_sec="1_0", memory_mb=256.0, cpus="0.5", pids_limit="64",
        persistent="yes", read_only_rootfs=0, network="on", host_path="/srv/ws",
        host_path_mode="ro", workdir=None, skill_name="my-skill", workspace_quota_mb="  5 ",
        env={"A": "1", "PATH": "/bin"},
        extra_mounts=[{"host_path": "/srv/data", "mount_path": "/data", "mode": "ro"},
                      {"host_path": "C:\\data", "mount_path": "/win", "mode": "none"}]))))
    put("box_spec", "bare_invalid", json.dumps(spec("e1", "true", memory_mb=16, cpus="nan")))
    put("box_spec", "managed_process", json.dumps(request(3, "box_start_managed_process", {
        "session_id": "m1", "spec": {"process_id": "done", "command": " sh ",
                                     "args": ["-c", "echo done && exit 0"], "cwd": "/workspace",
                                     "memory_mb": "128"}})))
    put("box_spec", "profile", json.dumps({"session_id": "p1", "profile": " offline_readonly ",
                                           "network": "on", "timeout_sec": 1000}))


# ---- seccomp profiles -------------------------------------------------------------------------

def strip_comments(v):
    if isinstance(v, dict):
        return {k: strip_comments(x) for k, x in v.items() if k != "comment"}
    if isinstance(v, list):
        return [strip_comments(x) for x in v]
    return v


def seccomp():
    with open(os.path.join(TOP, "seccomp", "default.json")) as f:
        default = json.load(f)
    # the default profile, the same rules without comments and spaces (to stay under 16 KiB)
    put("seccomp", "default_min.json",
        json.dumps(strip_comments(default), separators=(",", ":")))
    put("seccomp", "docker_like.json", json.dumps({
        "defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 1,
        "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
        "syscalls": [
            {"names": ["read", "write", "exit_group", "no_such_syscall"],
             "action": "SCMP_ACT_ALLOW"},
            {"names": ["personality"], "action": "SCMP_ACT_ALLOW",
             "args": [{"index": 0, "value": 0, "op": "SCMP_CMP_EQ"}]},
            {"names": ["socket"], "action": "SCMP_ACT_ERRNO", "errnoRet": 97,
             "args": [{"index": 0, "value": 40, "op": "SCMP_CMP_EQ"}]},
            {"names": ["clone"], "action": "SCMP_ACT_ALLOW",
             "args": [{"index": 0, "value": 2114060288, "valueTwo": 0,
                       "op": "SCMP_CMP_MASKED_EQ"}],
             "excludes": {"caps": ["CAP_SYS_ADMIN"], "arches": ["s390x"]}},
            {"names": ["chroot"], "action": "SCMP_ACT_ALLOW",
             "includes": {"caps": ["CAP_SYS_CHROOT"]}},
            {"names": ["ptrace"], "action": "SCMP_ACT_KILL_PROCESS",
             "includes": {"arches": ["amd64", "arm64"], "minKernel": "4.8"}},
            {"name": "kill", "action": "SCMP_ACT_LOG"},
        ]}))
    put("seccomp", "absorbed.json", json.dumps({
        "defaultAction": "SCMP_ACT_ALLOW", "archMap": [
            {"architecture": "SCMP_ARCH_X86_64", "subArchitectures": ["SCMP_ARCH_X86"]}],
        "syscalls": [
            {"names": ["socket"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1,
             "args": [{"index": 0, "value": 40, "op": "SCMP_CMP_EQ"}]},
            {"names": ["socket"], "action": "SCMP_ACT_TRAP"}]}))


# ---- image references -------------------------------------------------------------------------

def refs():
    digest = "sha256:" + hashlib.sha256(b"x").hexdigest()
    for i, r in enumerate(["alpine", "alpine:3.20", "ghcr.io/org/img:1.2@" + digest,
                           "[::1]:5000/team/tool:v1", "localhost/python",
                           "index.docker.io/library/busybox:latest",
                           "127.0.0.1:5000/a__b/c-d.e:TAG_1", "UPPER/case", "docker.io/x@" +
                           "sha512:" + "a" * 128]):
        put("ref", "ref%d" % i, r)


# ---- OCI / Docker documents -------------------------------------------------------------------

def dg(c):
    return "sha256:" + c * 64


def desc(mt, digest, size, **kw):
    d = {"mediaType": mt, "digest": digest, "size": size}
    d.update(kw)
    return d


def manifests():
    oci_m = "application/vnd.oci.image.manifest.v1+json"
    put("manifest", "oci_manifest.json", json.dumps({
        "schemaVersion": 2, "mediaType": oci_m,
        "config": desc("application/vnd.oci.image.config.v1+json", dg("c"), 321),
        "layers": [desc("application/vnd.oci.image.layer.v1.tar+gzip", dg("1"), 10),
                   desc("application/vnd.oci.image.layer.v1.tar", dg("2"), 20,
                        annotations={"org.opencontainers.image.title": "l2"})],
        "annotations": {"org.opencontainers.image.ref.name": "1.0"}}, indent=1))
    put("manifest", "oci_index.json", json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [
            desc(oci_m, dg("a"), 100, platform={"os": "linux", "architecture": "amd64"}),
            desc(oci_m, dg("b"), 100, platform={"os": "linux", "architecture": "arm64"}),
            desc(oci_m, dg("d"), 100, platform={"os": "linux", "architecture": "arm64",
                                                "variant": "v8"}),
            desc(oci_m, dg("e"), 100, platform={"os": "unknown", "architecture": "unknown"},
                 annotations={"vnd.docker.reference.type": "attestation-manifest"})]},
        indent=1))
    docker_m = "application/vnd.docker.distribution.manifest.v2+json"
    put("manifest", "docker_list.json", json.dumps({
        "schemaVersion": 2,
        "mediaType": "application/vnd.docker.distribution.manifest.list.v2+json",
        "manifests": [desc(docker_m, dg("f"), 528, platform={
            "os": "linux", "architecture": "arm", "variant": "v7"})]}))
    put("manifest", "docker_manifest.json", json.dumps({
        "schemaVersion": 2, "mediaType": docker_m,
        "config": desc("application/vnd.docker.container.image.v1+json", dg("c"), 1469),
        "layers": [desc("application/vnd.docker.image.rootfs.diff.tar.gzip", dg("3"), 2)]}))
    put("manifest", "no_media_type.json", json.dumps({
        "schemaVersion": 2, "config": desc("application/vnd.oci.image.config.v1+json",
                                           dg("c"), 1),
        "layers": []}))
    put("manifest", "config.json", json.dumps({
        "architecture": "arm64", "variant": "v8", "os": "linux",
        "config": {"Env": ["PATH=/usr/bin:/bin"], "Entrypoint": ["/bin/sh", "-c"],
                   "Cmd": None, "WorkingDir": "/srv", "User": "nobody:nogroup"},
        "rootfs": {"type": "layers", "diff_ids": [dg("1"), dg("2")]},
        "history": [{"created_by": "x"}]}, indent=1))
    put("manifest", "schema1.json", json.dumps({"schemaVersion": 1, "name": "x", "tag": "y",
                                                "fsLayers": []}))


# ---- docker save manifest.json (fuzz_load_docker's archive) -----------------------------------

def fixture_tar():
    """fuzz_load_docker.c's make_tar(): the same 2048 bytes."""
    hello = b"hello from a docker layer\n"
    h = bytearray(2048)
    h[0:5] = b"hello"
    h[100:107] = b"0000644"
    h[108:115] = b"0000000"
    h[116:123] = b"0000000"
    h[124:135] = b"%011o" % len(hello)
    h[136:147] = b"00000000000"
    h[148:156] = b" " * 8
    h[156:157] = b"0"
    h[257:265] = b"ustar\x0000"
    h[265:269] = b"root"
    h[297:301] = b"root"
    h[148:155] = b"%06o\x00" % sum(h[0:512])
    h[512:512 + len(hello)] = hello
    return bytes(h)


def fixture_config(diff_id, layers):
    ids = '"%s"' % diff_id + (', "%s"' % diff_id if layers > 1 else "")
    return ('{"architecture": "amd64", "os": "linux", "config": {"Env": ["PATH=/bin"], '
            '"Cmd": ["sh"]}, "rootfs": {"type": "layers", "diff_ids": [%s]}}' % ids).encode()


def load_docker():
    tar = fixture_tar()
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:  # a real tar, as the C side believes
        assert t.getnames() == ["hello"]
    diff_id = "sha256:" + hashlib.sha256(tar).hexdigest()
    c1 = hashlib.sha256(fixture_config(diff_id, 1)).hexdigest() + ".json"
    c2 = "blobs/sha256/" + hashlib.sha256(fixture_config(diff_id, 2)).hexdigest()
    put("load_docker", "classic.json", json.dumps([
        {"Config": c1, "RepoTags": ["busybox:latest"], "Layers": ["layers/0/layer.tar"]}]))
    put("load_docker", "docker25.json", json.dumps([
        {"Config": c2, "RepoTags": ["fuzz/two:1", "busybox:latest"],
         "Layers": ["layers/1/layer.tar.gz", "./layers/x/../2/layer.tar"]}]))
    put("load_docker", "two_images.json", json.dumps([
        {"Config": "config.json", "RepoTags": None, "Layers": ["layers/0/layer.tar"]},
        {"Config": "/" + c1, "RepoTags": ["alpine:3.20", "busybox:latest"],
         "Layers": ["layers/1/layer.tar.gz"]}]))
    put("load_docker", "bad_name.json", json.dumps([
        {"Config": c1, "RepoTags": ["Bad Name"], "Layers": ["layers/2/layer.tar"]}]))
    put("load_docker", "liar.json", json.dumps([
        {"Config": "blobs/sha256/" + "0" * 64, "RepoTags": ["busybox:latest"],
         "Layers": ["layers/0/layer.tar"]}]))
    put("load_docker", "mismatch.json", json.dumps([
        {"Config": c2, "Layers": ["layers/0/layer.tar"]},
        {"Config": c1, "Layers": "layers/0/layer.tar"}, {"Layers": []}, 7]))


# ---- layers -----------------------------------------------------------------------------------

def layer(entries, fmt=tarfile.PAX_FORMAT):
    """A tar of entries (TarInfo, bytes or None), cut after its end-of-archive marker."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as t:
        for info, data in entries:
            t.addfile(info, io.BytesIO(data) if data is not None else None)
    raw = buf.getvalue()
    end = len(raw.rstrip(b"\0"))
    end = (end + 511) // 512 * 512 + 1024
    return raw[:end]


def ti(name, type=tarfile.REGTYPE, data=None, mode=0o644, **kw):
    info = tarfile.TarInfo(name)
    info.type = type
    info.mode = mode
    info.mtime = 1700000000
    if data is not None:
        info.size = len(data)
    for k, v in kw.items():
        setattr(info, k, v)
    return info, data


def layers():
    base = layer([
        ti("etc/", tarfile.DIRTYPE, mode=0o755),
        ti("etc/hostname", data=b"box\n"),
        ti("usr/bin/", tarfile.DIRTYPE, mode=0o755),
        ti("usr/bin/sh", data=b"#!sh\n", mode=0o755),
        ti("usr/bin/ash", tarfile.LNKTYPE, linkname="usr/bin/sh"),
        ti("bin", tarfile.SYMTYPE, linkname="usr/bin"),
        ti("bin/ls", data=b"ls\n", uid=1000, gid=1000),
        ti("./", tarfile.DIRTYPE, mode=0o755),
    ])
    put("unpack", "base.tar", base)
    put("unpack", "base.tar.gz", gzip.compress(base, mtime=0))
    put("unpack", "whiteouts.tar", layer([
        ti("a/", tarfile.DIRTYPE, mode=0o555),
        ti("a/keep", data=b"k"),
        ti("a/.wh..wh..opq", data=b""),
        ti(".wh.b", data=b""),
        ti("c/.wh.gone", data=b""),
        ti("c/.wh..wh.plnk", data=b""),
    ]))
    # an opaque marker under a name this layer whited out (refused in overlay mode)
    put("unpack", "whiteout_conflict.tar", layer([
        ti(".wh.b", data=b""),
        ti("b/.wh..wh..opq", data=b""),
        ti("b/new", data=b"n"),
    ]))
    put("unpack", "dotdot.tar", layer([
        ti("../../escape", data=b"x"),
        ti("./../x/../../y/z", data=b"y"),
        ti("/abs/file", data=b"z"),
        ti("up", tarfile.SYMTYPE, linkname="../.."),
        ti("up/evil", data=b"e"),
        ti("root", tarfile.SYMTYPE, linkname="/"),
        ti("root/tmp/x", data=b"r"),
        ti("hl", tarfile.LNKTYPE, linkname="../../root/tmp/x"),
        ti("up/.wh.canary", data=b""),
        ti("up/up2", tarfile.SYMTYPE, linkname="../../../canary"),
        ti("up/up2/f", data=b"f"),
    ]))
    # hardlinks to what lies outside the layer (the fuzz target's victim files): refused
    put("unpack", "hardlink_out.tar", layer([
        ti("hl", tarfile.LNKTYPE, linkname="../../victim"),
        ti("hl2", tarfile.LNKTYPE, linkname="up/victim"),
    ]))
    put("unpack", "special.tar", layer([
        ti("dev/", tarfile.DIRTYPE, mode=0o755),
        ti("dev/null", tarfile.CHRTYPE, mode=0o666, devmajor=1, devminor=3),
        ti("dev/sda", tarfile.BLKTYPE, mode=0o660, devmajor=8, devminor=0),
        ti("p", tarfile.FIFOTYPE),
        ti("su", data=b"s", mode=0o4755),
        # a v2 file capability (CAP_NET_BIND_SERVICE permitted), a user xattr, and a forged
        # overlay marker that must be dropped
        ti("x", data=b"x", mode=0o755, pax_headers={
            "SCHILY.xattr.user.foo": "bar", "SCHILY.xattr.trusted.overlay.opaque": "y",
            "SCHILY.xattr.security.capability": "\x00\x00\x00\x02\x00\x04" + "\x00" * 14}),
        ti("dev/null", data=b"replaced"),
        ti("p/", tarfile.DIRTYPE),
    ]))
    put("unpack", "gnu_long.tar", layer([
        ti("d/" + "n" * 120 + "/f", data=b"long"),
        ti("l", tarfile.SYMTYPE, linkname="t" * 150),
    ], fmt=tarfile.GNU_FORMAT))


# ---- skills: SKILL.md front matter and zip uploads (src/box/skill_*.c) --------------------------

def skills():
    put("skill_meta", "plain", "Just instructions.\n")
    put("skill_meta", "front", "---\nname: pdf\ndisplay_name: 'PDF: tools'\ndescription: >\n"
        "  folded\n  text\n---\n\nBody\n")
    put("skill_meta", "crlf_null", "--- \r\nname: ~\r\ndescription: \"a\\nb\"\r\n---\r\nx")
    put("skill_meta", "list", "---\n- a\n- {b: c}\n---\n")
    put("skill_meta", "anchors", "---\nname: &a x\ndescription: *a\n---\n")

    def zipped(entries):
        import zipfile
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
            for name, data, attr in entries:
                info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
                info.create_system = 3
                info.external_attr = attr << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                z.writestr(info, data)
        return buf.getvalue()
    put("skill_zip", "one.zip", zipped([("pkg/", b"", 0o40755),
                                        ("pkg/SKILL.md", b"---\nname: x\n---\n", 0o100644),
                                        ("pkg/run.sh", b"echo\n", 0o100755)]))
    put("skill_zip", "link.zip", zipped([("s", b"/etc/passwd", 0o120777)]))
    put("skill_zip", "slip.zip", zipped([("../x", b"x", 0o100644), ("/abs", b"x", 0o100644)]))
    put("skill_zip", "dup.zip", zipped([("a/b", b"1", 0o100644), ("a/./b", b"2", 0o100644)]))
    put("skill_zip", "zeros.zip", zipped([("z", b"\0" * 65536, 0o100644)]))


def oci_config():
    """A podman-like config.json, a minimal one, and an exec process.json."""
    ns = [{"type": t} for t in ("pid", "mount", "ipc", "uts")]
    base = {"ociVersion": "1.0.2", "root": {"path": "rootfs", "readonly": True},
            "process": {"args": ["sh"], "cwd": "/", "user": {"uid": 0, "gid": 0}},
            "linux": {"namespaces": ns + [{"type": "network"}]}}
    put("oci_config", "minimal", json.dumps(base))
    full = json.loads(json.dumps(base))
    full["process"].update({
        "env": ["PATH=/bin", "TERM=xterm"], "terminal": True,
        "capabilities": {k: ["CAP_CHOWN", "CAP_KILL"] for k in ("bounding", "effective")},
        "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024}],
        "noNewPrivileges": True})
    full["hostname"] = "c1"
    full["mounts"] = [
        {"destination": "/proc", "type": "proc", "source": "proc"},
        {"destination": "/data", "type": "bind", "source": "/srv", "options": ["rbind", "ro"]},
        {"destination": "/t", "type": "tmpfs", "source": "tmpfs", "options": ["size=1m"]}]
    full["linux"].update({
        "namespaces": ns + [{"type": "network", "path": "/run/netns/x"}],
        "resources": {"memory": {"limit": 67108864}, "pids": {"limit": 10},
                      "cpu": {"quota": 50000, "period": 100000}},
        "seccomp": {"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [
            {"names": ["read"], "action": "SCMP_ACT_ALLOW"}]},
        "maskedPaths": ["/proc/kcore"], "cgroupsPath": "/x/y"})
    full["hooks"] = {"prestart": [{"path": "/bin/true", "args": ["true"], "timeout": 5}]}
    full["annotations"] = {"a": "b"}
    put("oci_config", "podman_like", json.dumps(full))
    put("oci_config", "process", json.dumps({"args": ["ls"], "cwd": "/tmp", "env": ["A=1"]}))


def main():
    if os.path.isdir(CORPUS):
        shutil.rmtree(CORPUS)
    rpc()
    box_spec()
    seccomp()
    refs()
    manifests()
    load_docker()
    layers()
    skills()
    oci_config()


if __name__ == "__main__":
    main()
