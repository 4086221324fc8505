#!/usr/bin/env python3
"""lbbox-runc behind containerd's CRI, as Kubernetes uses it through a RuntimeClass.

containerd (Debian 12's 1.6, its own root, state and socket under a temporary directory) runs its
CRI plugin with a runtime handler `lbbox`: runtime_type io.containerd.runc.v2, options.BinaryName =
the build's lbbox-runc, options.Root = a directory of the test. The test then talks to it as
kubelet does (tests/oci/cri_client.py, gRPC runtime.v1): Version, ImageStatus, RunPodSandbox with
runtime_handler "lbbox", CreateContainer with resources, StartContainer, ContainerStatus, ExecSync,
UpdateContainerResources, StopContainer, RemoveContainer, StopPodSandbox, RemovePodSandbox; first
a hostNetwork pod, then a pod on a CNI network of the test's own (the Debian CNI plugins' bridge +
host-local, a config under the test directory). The images (a pause that sleeps, a busybox) are an OCI archive built
here from the busybox test rootfs and imported with `ctr -n k8s.io images import`.

Checked: the sandbox and the containers are lbbox-runc's (its root has their state, their pid 1
is lbbox's init), ExecSync's output and exit code, an exit code in ContainerStatus, the CRI's
memory limit and CPU quota read back inside and on the host (and again after an update), the
container's log, an unknown handler refused, a host network pod on the host's uts namespace
(hostname untouched), a CNI pod's container in its sandbox's network namespace with the pod's
address and hostname, a shareProcessNamespace pod (its container in the pause's pid namespace,
seeing the pause, and StopContainer ending the container's processes only), and after
RemovePodSandbox an empty lbbox-runc root and a clean host (no process, mount, cgroup, netns or
bridge of the test's).

Usage: cri.py BUILD_DIR ROOTFS  (exit 77 = skipped: not root)
"""
import glob
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ocihost import (cni_config, containerd_host, ctr_remove, delete_all,  # noqa: E402
                     host_clean, sh, subreaper)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
from sealed_exe import sealed_form  # noqa: E402

try:
    import grpc
except ImportError:  # python3-grpcio is Debian's: a python3 of its own (pyenv) does not see it
    sys.path.append("/usr/lib/python3/dist-packages")
    try:
        import grpc
    except ImportError:
        print("FAIL python3-grpcio is installed (scripts/setup.sh)")
        sys.exit(1)
from cri_client import POD, Cri, container_config, pod_sandbox_config  # noqa: E402

BUILD = os.path.abspath(sys.argv[1])
ROOTFS = os.path.abspath(os.environ.get("LBBOX_TEST_ROOTFS") or sys.argv[2])
RUNC = os.path.join(BUILD, "lbbox-runc")
PAUSE = "localhost/lbbox-cri/pause:1"
BUSYBOX = "localhost/lbbox-cri/busybox:1"
FAILS = []
HOSTNAME = socket.gethostname()
SUBNET, SUBNET_PREFIX = "10.213.78.0/24", "10.213.78."  # not runtimes.py's, which may run too
SANDBOXES = []  # RunPodSandbox's ids not removed yet


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        FAILS.append(what)


def blob(layout, data):
    """Stores data in the layout's blobs; its descriptor's digest and size."""
    digest = hashlib.sha256(data).hexdigest()
    with open(os.path.join(layout, "blobs", "sha256", digest), "wb") as f:
        f.write(data)
    return "sha256:" + digest, len(data)


def oci_archive(tmp, images):
    """An OCI archive of images (name -> Cmd), all of one layer: the busybox test rootfs."""
    layout = os.path.join(tmp, "layout")
    os.makedirs(os.path.join(layout, "blobs", "sha256"))
    layer_tar = os.path.join(tmp, "layer.tar")
    r = sh(["tar", "--numeric-owner", "-C", ROOTFS, "-cf", layer_tar, "."])
    assert r.returncode == 0, r.stderr
    with open(layer_tar, "rb") as f:
        layer = blob(layout, f.read())  # uncompressed: its digest is its diff_id
    os.unlink(layer_tar)
    index = []
    for name, cmd in images.items():
        config = {"architecture": "amd64", "os": "linux",
                  "config": {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:"
                                     "/sbin:/bin"], "Cmd": cmd},
                  "rootfs": {"type": "layers", "diff_ids": [layer[0]]}}
        cd, cs = blob(layout, json.dumps(config).encode())
        manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                               "digest": cd, "size": cs},
                    "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                                "digest": layer[0], "size": layer[1]}]}
        md, ms = blob(layout, json.dumps(manifest).encode())
        index.append({"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": md,
                      "size": ms, "annotations": {"io.containerd.image.name": name,
                                                  "org.opencontainers.image.ref.name": "1"}})
    with open(os.path.join(layout, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": index}, f)
    with open(os.path.join(layout, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)
    archive = os.path.join(tmp, "images.tar")
    r = sh(["tar", "-C", layout, "-cf", archive, "."])
    assert r.returncode == 0, r.stderr
    shutil.rmtree(layout)
    return archive


def cri_section(runc_root, cni_dir):
    """The CRI plugin's configuration: the lbbox handler as a RuntimeClass names it."""
    p = 'plugins."io.containerd.grpc.v1.cri"'
    return f"""[{p}]
  sandbox_image = "{PAUSE}"
  # exec/attach/port-forward streams: loopback only, a free port
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  disable_apparmor = true
  # no CAP_SYS_RESOURCE here: the sandbox's -998 would be refused, as it is for kubelet in a
  # container; containerd's own score is the floor
  restrict_oom_score_adj = true
  [{p}.containerd]
    snapshotter = "overlayfs"
    # a node's usual default; pods name the lbbox handler (a RuntimeClass) to get lbbox-runc
    default_runtime_name = "runc"
    [{p}.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
    [{p}.containerd.runtimes.lbbox]
      runtime_type = "io.containerd.runc.v2"
      [{p}.containerd.runtimes.lbbox.options]
        BinaryName = "{RUNC}"
        Root = "{runc_root}"
        SystemdCgroup = false
  [{p}.cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{cni_dir}"
"""


def runc_ids(runc_root):
    d = os.path.join(runc_root, "k8s.io")  # the shim adds containerd's namespace to Root
    return sorted(n for n in os.listdir(d) if not n.startswith(".")) if os.path.isdir(d) else []


def runc_state(runc_root, cid):
    r = sh([RUNC, "--root", os.path.join(runc_root, "k8s.io"), "state", cid])
    return json.loads(r.stdout) if r.returncode == 0 else {}


def lbbox_init(pid):
    """Whether pid is lbbox's init (run from its sealed view: root), as a container's pid 1 is."""
    try:
        args = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        return args[0] == b"lbbox-init" and sealed_form(pid) == "view"
    except OSError:
        return False


def host_cgroups(pid):
    """pid's cgroup directories on the host, by v1 controller, but for those at their
    hierarchy's root (the ones lbbox does not use)."""
    out = {}
    with open(f"/proc/{pid}/cgroup") as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            for c in (ctrls.split(",") if ctrls and path != "/" else []):
                base = f"/sys/fs/cgroup/{c.replace('name=', '')}"
                if os.path.isdir(base):
                    out[c] = base + path
    return out


def wait_exited(cri, cid, timeout=20):
    end = time.time() + timeout
    while True:
        st = cri.container_status(cid)
        if st["state"] == 2 or time.time() > end:
            return st
        time.sleep(0.1)


def make_pod_cgroup(path):
    """What kubelet does before RunPodSandbox: the pod's cgroup (cgroup_parent) in every
    hierarchy, cpuset's filled from its parent's (a new one has no cpus)."""
    for top in glob.glob("/sys/fs/cgroup/*/"):
        if not os.path.exists(os.path.join(top, "cgroup.procs")):
            continue
        d = top
        for part in path.strip("/").split("/"):
            d = os.path.join(d, part)
            if not os.path.isdir(d):
                os.mkdir(d)
                for f in ("cpuset.cpus", "cpuset.mems"):
                    if os.path.exists(os.path.join(d, f)):
                        with open(os.path.join(os.path.dirname(d), f)) as src:
                            value = src.read()
                        with open(os.path.join(d, f), "w") as dst:
                            dst.write(value)


def remove_cgroups(name):
    """The pods' parent cgroup (kubelet's /kubepods, made by make_pod_cgroup): rmdir'd bottom
    up; what is left."""
    left = []
    for top in glob.glob(f"/sys/fs/cgroup/*/{name}"):
        for root, dirs, _ in os.walk(top, topdown=False):
            try:
                os.rmdir(root)
            except OSError:
                left.append(root)
    return left


def cri_checks(tmp, cri, ctr, runc_root, parent):
    v = cri.version()
    check(v["runtime_name"] == "containerd" and v["runtime_api_version"] == "v1",
          f"Version: containerd, CRI v1 ({v})")
    conds = cri.status()
    check(conds.get("RuntimeReady") and conds.get("NetworkReady"),
          f"Status: RuntimeReady and NetworkReady (the test's CNI config), as kubelet wants "
          f"({conds})")
    archive = oci_archive(tmp, {PAUSE: ["sleep", "86400"], BUSYBOX: ["sh"]})
    r = sh(ctr + ["-n", "k8s.io", "images", "import", archive])
    check(r.returncode == 0, f"ctr -n k8s.io images import ({r.stderr.strip()[-300:]})")
    end = time.time() + 10  # the CRI plugin learns of the images from containerd's events
    while not (cri.image_present(PAUSE) and cri.image_present(BUSYBOX)) and time.time() < end:
        time.sleep(0.1)
    check(cri.image_present(PAUSE) and cri.image_present(BUSYBOX),
          "ImageStatus: the imported pause and busybox images")
    host_pod_checks(tmp, cri, runc_root, parent)
    cni_pod_checks(tmp, cri, runc_root, parent)
    shared_pid_pod_checks(tmp, cri, runc_root, parent)


def host_pod_checks(tmp, cri, runc_root, parent):
    """A hostNetwork pod (no CNI) through its whole life."""
    log_dir = os.path.join(tmp, "pods", "default_p1_uid1")
    os.makedirs(log_dir)
    pod = pod_sandbox_config("p1", "uid1", "default", log_dir, parent + "/poduid1")
    make_pod_cgroup(parent + "/poduid1")
    try:
        cri.run_pod_sandbox(pod_sandbox_config("p0", "uid0", "default", log_dir,
                                               parent + "/poduid0"), "nope")
        check(False, "RunPodSandbox with an unknown runtime handler is refused")
    except grpc.RpcError as e:
        check("nope" in (e.details() or ""),
              f"RunPodSandbox with an unknown runtime handler is refused ({e.details()})")

    sid = cri.run_pod_sandbox(pod, "lbbox")
    SANDBOXES.append(sid)
    st = runc_state(runc_root, sid)
    check(st.get("status") == "running" and lbbox_init(st.get("pid")),
          f"RunPodSandbox(handler lbbox): the sandbox runs under lbbox-runc, pid 1 lbbox's init "
          f"({st.get('status')} {runc_ids(runc_root)})")
    check(cri.pod_sandbox_status(sid)["state"] == 0, "PodSandboxStatus: SANDBOX_READY")
    sandbox_cgs = host_cgroups(st["pid"]) if st.get("pid") else {}
    pod_cg = f"{parent}/poduid1/{sid}"
    check(sandbox_cgs and all(c.endswith(pod_cg) for c in sandbox_cgs.values()),
          f"the sandbox's cgroups: the pod's cgroup_parent/<id> ({sandbox_cgs})")

    # a long-running container with the resources kubelet derives from the pod spec
    res = {"cpu_period": 100000, "cpu_quota": 50000, "cpu_shares": 512,
           "memory_limit_in_bytes": 64 << 20}
    c1 = cri.create_container(sid, container_config(
        "app", BUSYBOX, ["sh", "-c"], ["echo hello-from-cri; exec sleep 86400"],
        envs=[("X", "from-cri")], log_path="app/0.log", resources=res), pod)
    cs = cri.container_status(c1)
    check(cs["state"] == 0 and runc_ids(runc_root) == [sid],
          f"CreateContainer: CONTAINER_CREATED (containerd makes the task at start) ({cs})")
    cri.start_container(c1)
    cs = cri.container_status(c1)
    st = runc_state(runc_root, c1)
    check(cs["state"] == 1 and st.get("status") == "running" and lbbox_init(st.get("pid")),
          f"StartContainer: CONTAINER_RUNNING, running under lbbox-runc, pid 1 lbbox's init "
          f"({cs['state']} {st.get('status')})")
    cgs = host_cgroups(st["pid"]) if st.get("pid") else {}
    check(cgs and all(c.endswith(f"{parent}/poduid1/{c1}") for c in cgs.values()),
          f"the container's cgroups: the pod's cgroup_parent/<id> ({cgs.get('memory')})")

    out, err, code = cri.exec_sync(c1, ["sh", "-c", "echo $X; cat /proc/1/cmdline | tr '\\0' ' ';"
                                        " echo; echo to-err >&2; exit 3"])
    check((out, err, code) == (b"from-cri\nlbbox-init \n", b"to-err\n", 3),
          f"ExecSync: stdout, stderr and exit code; the env, pid 1 lbbox's init "
          f"({out!r} {err!r} {code})")
    # kubelet's metrics: the shim reads them from the cgroups of the container's pid 1
    stats = cri.container_stats(c1)
    check((stats["cpu_ns"] or 0) > 0 and (stats["working_set"] or 0) > 0,
          f"ContainerStats: CPU time and memory working set ({stats})")
    # a hostNetwork pod: no uts namespace in its config, the host's, its hostname untouched
    out, _, code = cri.exec_sync(c1, ["sh", "-c", "hostname; readlink /proc/self/ns/uts"])
    want = f"{socket.gethostname()}\n{os.readlink('/proc/self/ns/uts')}\n".encode()
    check(code == 0 and out == want, f"host network: the host's uts namespace and hostname "
          f"({out!r})")
    out, _, code = cri.exec_sync(c1, ["sh", "-c", "cat /sys/fs/cgroup/memory/memory.limit_in_bytes"
                                      " /sys/fs/cgroup/cpu/cpu.cfs_quota_us"
                                      " /sys/fs/cgroup/cpu/cpu.cfs_period_us"
                                      " /sys/fs/cgroup/cpu/cpu.shares"])
    check(code == 0 and out.split() == [b"67108864", b"50000", b"100000", b"512"],
          f"the CRI's memory limit, CPU quota, period and shares read back inside ({out!r})")
    host = [open(os.path.join(cgs.get(c, "/nonexistent"), f)).read().strip()
            if os.path.exists(os.path.join(cgs.get(c, "/nonexistent"), f)) else None
            for c, f in (("memory", "memory.limit_in_bytes"), ("cpu", "cpu.cfs_quota_us"))]
    check(host == ["67108864", "50000"], f"... and on the host ({host})")
    # an in-place resize: kubelet's UpdateContainerResources, containerd's `update --resources`
    cri.update_container_resources(c1, {"cpu_period": 100000, "cpu_quota": 30000,
                                        "cpu_shares": 256, "memory_limit_in_bytes": 96 << 20})
    out, _, code = cri.exec_sync(c1, ["sh", "-c", "cat /sys/fs/cgroup/memory/memory.limit_in_bytes"
                                      " /sys/fs/cgroup/cpu/cpu.cfs_quota_us"
                                      " /sys/fs/cgroup/cpu/cpu.shares"])
    check(code == 0 and out.split() == [b"100663296", b"30000", b"256"],
          f"UpdateContainerResources: the new limits read back inside ({out!r})")
    log = os.path.join(log_dir, "app", "0.log")
    end = time.time() + 10
    while time.time() < end and "hello-from-cri" not in (open(log).read()
                                                         if os.path.exists(log) else ""):
        time.sleep(0.1)
    text = open(log).read() if os.path.exists(log) else ""
    check(" stdout F hello-from-cri" in text,
          f"the container's stdout in its CRI log ({text.strip()[-200:]!r})")

    # a container that exits by itself: its exit code in ContainerStatus
    c2 = cri.create_container(sid, container_config("exits", BUSYBOX, ["sh", "-c", "exit 7"],
                                                    log_path="exits/0.log"), pod)
    cri.start_container(c2)
    cs = wait_exited(cri, c2)
    check(cs["state"] == 2 and cs["exit_code"] == 7 and cs["finished_at"] > 0,
          f"ContainerStatus: CONTAINER_EXITED, exit code 7 ({cs})")

    # StopContainer: SIGTERM (lbbox's init passes it on; sleep dies of it), well inside the grace
    t0 = time.time()
    cri.stop_container(c1, 10)
    cs = cri.container_status(c1)
    check(cs["state"] == 2 and cs["exit_code"] == 143 and time.time() - t0 < 8,
          f"StopContainer: exited of SIGTERM before the grace period ({cs['exit_code']} "
          f"{time.time() - t0:.1f}s)")
    cri.remove_container(c1)
    cri.remove_container(c2)
    check(runc_ids(runc_root) == [sid],
          f"RemoveContainer: lbbox-runc's root keeps the sandbox only ({runc_ids(runc_root)})")
    check(not any(os.path.exists(c) for c in cgs.values()),
          "RemoveContainer: the container's cgroups are gone")

    check(socket.gethostname() == HOSTNAME, "the host's hostname is as it was")
    cri.stop_pod_sandbox(sid)
    check(cri.pod_sandbox_status(sid)["state"] == 1, "StopPodSandbox: SANDBOX_NOTREADY")
    cri.remove_pod_sandbox(sid)
    SANDBOXES.remove(sid)
    check(runc_ids(runc_root) == [], f"RemovePodSandbox: lbbox-runc's root is empty "
          f"({runc_ids(runc_root)})")
    check(not any(os.path.exists(c) for c in sandbox_cgs.values()),
          "RemovePodSandbox: the sandbox's cgroups are gone")


def cni_pod_checks(tmp, cri, runc_root, parent):
    """A pod on a CNI network of the test's (bridge, host-local): containerd makes its network
    namespace, the sandbox keeps it, a container joins it (and the sandbox's uts) by path."""
    log_dir = os.path.join(tmp, "pods", "default_p2_uid2")
    os.makedirs(log_dir)
    pod = pod_sandbox_config("p2", "uid2", "default", log_dir, parent + "/poduid2", network=POD,
                             hostname="p2-host")
    make_pod_cgroup(parent + "/poduid2")
    sid = cri.run_pod_sandbox(pod, "lbbox")
    SANDBOXES.append(sid)
    ps = cri.pod_sandbox_status(sid)
    st = runc_state(runc_root, sid)
    check(st.get("status") == "running" and lbbox_init(st.get("pid")) and
          ps["ip"].startswith(SUBNET_PREFIX),
          f"a CNI pod: its sandbox under lbbox-runc, an address of the network ({ps})")
    # volumes as kubelet gives them: a writable hostPath, its termination-log file, a read-only
    # root
    vol, term = os.path.join(tmp, "vol"), os.path.join(tmp, "termination-log")
    os.mkdir(vol)
    open(term, "w").close()
    c = cri.create_container(sid, container_config(
        "app", BUSYBOX, ["sleep", "86400"], log_path="app/0.log", network=POD,
        mounts=[("/data", vol, False), ("/dev/termination-log", term, False)],
        readonly_rootfs=True), pod)
    cri.start_container(c)
    out, err, code = cri.exec_sync(c, ["sh", "-c", "echo in-vol > /data/f && echo done > "
                                       "/dev/termination-log && ! touch /rootfs-file 2>/dev/null && "
                                       "! touch /dev/new-node 2>/dev/null"])
    vf = os.path.join(vol, "f")
    check(code == 0 and open(vf).read() == "in-vol\n" if os.path.exists(vf) else False,
          f"a hostPath volume written from inside, the termination-log file, the root and /dev "
          f"read-only ({code} {err!r})")
    check(open(term).read() == "done\n", "... the termination message reached the host's file")
    out, _, code = cri.exec_sync(c, ["sh", "-c", "hostname; grep -c eth0: /proc/net/dev; "
                                     "grep -F ' %s' /proc/net/fib_trie | head -1; "
                                     "readlink /proc/self/ns/net" % ps["ip"]])
    lines = out.decode().split("\n")
    check(code == 0 and lines[:2] == ["p2-host", "1"] and ps["ip"] in lines[2] and
          st.get("pid") and lines[3] == os.readlink(f"/proc/{st['pid']}/ns/net") and
          lines[3] != os.readlink("/proc/self/ns/net"),
          f"its container: the sandbox's hostname, eth0 with the pod's address, the sandbox's "
          f"network namespace ({out!r})")
    # the "restricted" Pod Security Standard: containerd writes its default seccomp profile
    r = cri.create_container(sid, container_config("restricted", BUSYBOX, ["sleep", "86400"],
                                                   log_path="restricted/0.log", network=POD,
                                                   restricted=True), pod)
    cri.start_container(r)
    out, err, code = cri.exec_sync(r, ["sh", "-c", "id -u; grep -E '^(CapEff|Seccomp|NoNewPrivs)"
                                       ":' /proc/self/status | tr -d '\t'"])
    check(code == 0 and out.decode().split() == ["1000", "CapEff:0000000000000000",
                                                 "NoNewPrivs:1", "Seccomp:2"],
          f"a restricted container: uid 1000, no capability, no new privileges, a seccomp "
          f"filter (containerd's RuntimeDefault profile taken) ({out!r} {err!r})")
    cri.stop_pod_sandbox(sid)  # kubelet's order: the pod's containers are stopped with it
    cs = cri.container_status(c)
    check(cs["state"] == 2, f"StopPodSandbox stops its container ({cs['state']})")
    cri.remove_pod_sandbox(sid)  # and removes them
    SANDBOXES.remove(sid)
    check(runc_ids(runc_root) == [], f"RemovePodSandbox: lbbox-runc's root is empty "
          f"({runc_ids(runc_root)})")


def shared_pid_pod_checks(tmp, cri, runc_root, parent):
    """shareProcessNamespace: true. containerd gives the container the path of the sandbox's
    (pause's) pid namespace; the container sees the pause process, and stopping it ends its own
    processes only."""
    log_dir = os.path.join(tmp, "pods", "default_p3_uid3")
    os.makedirs(log_dir)
    pod = pod_sandbox_config("p3", "uid3", "default", log_dir, parent + "/poduid3", pid=POD)
    make_pod_cgroup(parent + "/poduid3")
    sid = cri.run_pod_sandbox(pod, "lbbox")
    SANDBOXES.append(sid)
    st = runc_state(runc_root, sid)
    c = cri.create_container(sid, container_config(
        "app", BUSYBOX, ["sh", "-c"], ["sleep 86401 & exec sleep 86402"], log_path="app/0.log",
        pid=POD), pod)
    cri.start_container(c)
    cst = runc_state(runc_root, c)
    ns = [os.readlink(f"/proc/{p}/ns/pid") if p else "" for p in (st.get("pid"), cst.get("pid"))]
    check(cst.get("status") == "running" and ns[0] and ns[0] == ns[1],
          f"shareProcessNamespace: the container in the sandbox's pid namespace ({ns})")
    out, _, code = cri.exec_sync(c, ["sh", "-c", "cat /proc/[0-9]*/cmdline | tr '\\0' ' '"])
    check(code == 0 and b"sleep 86400" in out and b"sleep 86402" in out,
          f"... it sees the pause process and its own ({out!r})")
    mine = [p for p in os.listdir("/proc") if p.isdigit() and os.path.exists(f"/proc/{p}/cmdline")
            and open(f"/proc/{p}/cmdline", "rb").read().startswith(b"sleep\x0086401")]
    cri.stop_container(c, 5)
    cs = wait_exited(cri, c)
    gone = lambda: all(not os.path.exists(f"/proc/{p}") or
                       open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"
                       for p in mine)
    end = time.time() + 10
    while not gone() and time.time() < end:
        time.sleep(0.1)
    check(cs["state"] == 2 and len(mine) == 1 and gone() and
          runc_state(runc_root, sid).get("status") == "running",
          f"StopContainer: the container's processes end, the pause runs on ({cs['state']} "
          f"{mine})")
    cri.remove_container(c)
    cri.stop_pod_sandbox(sid)
    cri.remove_pod_sandbox(sid)
    SANDBOXES.remove(sid)
    check(runc_ids(runc_root) == [], f"the shared-pid pod removed: lbbox-runc's root is empty "
          f"({runc_ids(runc_root)})")


def unmount_left(tmp):
    with open("/proc/self/mountinfo") as f:
        points = [l.split()[4] for l in f if tmp in l.split()[4]]
    for m in reversed(points):
        sh(["umount", "-l", m])


def main():
    if os.geteuid() != 0:
        print("SKIP: needs root")
        return 77
    subreaper()
    tmp = tempfile.mkdtemp(prefix="lbbox-cri-")
    d = os.path.join(tmp, "ctd")
    runc_root = os.path.join(tmp, "runc-root")
    parent = f"lbbox-cri-test-{os.getpid()}"
    bridge = f"lbcri{os.getpid() % 100000}"
    had_cni = os.path.exists("/var/lib/cni")  # libcni's cache, made on first use
    try:
        cni_dir = cni_config(tmp, bridge, SUBNET)
        with containerd_host(d, cri=cri_section(runc_root, cni_dir)) as (ctr, ok):
            check(ok, "containerd answers on the test's socket")
            cri = Cri(os.path.join(d, "containerd.sock"))
            try:
                if ok:
                    cri_checks(tmp, cri, ctr, runc_root, "/" + parent)
            except grpc.RpcError as e:
                check(False, f"CRI call: {e.code()} {e.details()}")
            finally:
                for sid in SANDBOXES:  # whatever failed, kubelet's clean-up
                    for call in (cri.stop_pod_sandbox, cri.remove_pod_sandbox):
                        try:
                            call(sid)
                        except grpc.RpcError as e:
                            print(f"note clean-up of {sid}: {e.details()}", flush=True)
                cri.close()
                # what the CRI could not remove: its tasks and containers go through ctr
                k8s = ctr + ["-n", "k8s.io"]
                ctr_remove(k8s, sh(k8s + ["containers", "ls", "-q"]).stdout.split())
    finally:
        log = os.path.join(d, "containerd.log")
        if FAILS and os.path.exists(log):  # containerd's and its CRI plugin's words on it
            with open(log, errors="replace") as f:
                errs = [l.strip() for l in f if "level=error" in l or "level=warn" in l]
            for line in errs[-15:]:
                print("note containerd: " + line[:400], flush=True)
        delete_all(RUNC, [os.path.join(runc_root, "k8s.io")])
        sh(["ip", "link", "del", bridge])
        if not had_cni:
            for sub in ("results", "networks", ""):
                try:
                    os.rmdir(os.path.join("/var/lib/cni", sub))
                except OSError:
                    pass
        left = remove_cgroups(parent)
        check(left == [], f"no cgroup of the test left ({left})")
        host_clean(tmp, bridge, check)
        unmount_left(tmp)  # reported above; not left on the host either
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(FAILS)} failed" if FAILS else "all passed")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
