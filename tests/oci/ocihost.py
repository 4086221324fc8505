"""Host setup and cleanup for driving podman and containerd with an OCI runtime, shared by
tests/oci/runtimes.py and scripts/bench_oci.py.

podman (Debian 12's 4.3) runs with its own --root/--runroot/storage under a temporary directory,
cgroupfs, and a CNI config of its own; containerd (1.6) with its own root, state and socket. What
they leave on the host whatever their directories (podman's libpod_parent cgroups, libcni's
/var/lib/cni, the shim's /run/containerd) is removed after when it was not there before.
"""
import contextlib
import ctypes
import glob
import json
import os
import shutil
import subprocess
import time

# No CAP_SYS_RESOURCE on these hosts: podman's default nofile/nproc would be above the hard limit.
ULIMITS = ["--ulimit", "nofile=20000:20000", "--ulimit", "nproc=32768:32768"]


def sh(args, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 120)
    return subprocess.run(args, **kw)


def subreaper():
    """As conmon and containerd's shim: the container's pid 1 comes back to us."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


def cni_config(tmp, bridge, subnet="10.213.77.0/24"):
    d = os.path.join(tmp, "cni")
    os.makedirs(d)
    net = {"cniVersion": "0.4.0", "name": "podman", "plugins": [{
        # no gateway and no masquerade: the plugin then leaves the host's forwarding and
        # firewall alone; an address on eth0 is all this test needs to see
        "type": "bridge", "bridge": bridge, "isGateway": False, "ipMasq": False,
        "ipam": {"type": "host-local", "dataDir": os.path.join(tmp, "ipam"),
                 "ranges": [[{"subnet": subnet}]]}}]}
    with open(os.path.join(d, "podman.conflist"), "w") as f:
        json.dump(net, f)
    return d


def podman_cmd(tmp, bridge):
    """podman with everything of its own under tmp; add --runtime WRAPPER per call."""
    return ["podman", "--root", os.path.join(tmp, "storage"), "--runroot",
            os.path.join(tmp, "run"), "--storage-driver", "vfs", "--cgroup-manager", "cgroupfs",
            "--events-backend", "file", "--tmpdir", os.path.join(tmp, "ptmp"),
            "--network-config-dir", cni_config(tmp, bridge)]


def podman_import(P, tmp, rootfs, img):
    tar = os.path.join(tmp, "rootfs.tar")
    sh(["tar", "-C", rootfs, "-cf", tar, "."])
    return sh(P + ["import", tar, img])


@contextlib.contextmanager
def podman_host(P, bridge):
    """Yields a dict; on the way out every container and image goes, the bridge, the
    libpod_parent cgroups and /var/lib/cni that were not there before, and dict["left"] lists
    the libpod_parent cgroups (and /var/lib/cni) that could not be removed."""
    had_cni = os.path.exists("/var/lib/cni")  # libcni's cache, made on first use
    # podman (cgroupfs) puts conmon in /libpod_parent/conmon of every hierarchy
    had_libpod = set(glob.glob("/sys/fs/cgroup/*/libpod_parent"))
    out = {"left": []}
    try:
        yield out
    finally:
        sh(P + ["rm", "-af", "-t", "0"])
        sh(P + ["rmi", "-af"])
        sh(["ip", "link", "del", bridge])
        # a conmon still exiting keeps its cgroup busy for a moment: retried for up to 10 s
        end = time.time() + 10
        while True:
            for d in set(glob.glob("/sys/fs/cgroup/*/libpod_parent")) - had_libpod:
                for sub in ("conmon", ""):
                    try:
                        os.rmdir(os.path.join(d, sub))
                    except OSError:
                        pass
            if not had_cni:  # a cleanup still tearing a network down may hold a result
                for sub in ("results", "networks", ""):
                    try:
                        os.rmdir(os.path.join("/var/lib/cni", sub))
                    except OSError:
                        pass
            out["left"] = sorted(set(glob.glob("/sys/fs/cgroup/*/libpod_parent")) - had_libpod)
            if not had_cni and os.path.exists("/var/lib/cni"):
                out["left"].append("/var/lib/cni")
            if not out["left"] or time.time() > end:
                break
            time.sleep(0.2)


def wait_socket(ctr, proc, timeout=20):
    end = time.time() + timeout
    while time.time() < end and proc.poll() is None:
        if sh(ctr + ["version"], timeout=10).returncode == 0:
            return True
        time.sleep(0.1)
    return False


@contextlib.contextmanager
def containerd_host(d, cri=None):
    """containerd with its root, state and socket under d (made here); yields (ctr, ok): ok is
    whether it answered. The shim keeps sockets and fifos in /run/containerd (s/, fifo/) whatever
    containerd's state directory: removed on the way out when it was not there before. cri: the
    CRI plugin's TOML section (then the plugin runs, serving on the same socket), else it is off."""
    os.makedirs(d)
    had_run = os.path.exists("/run/containerd")
    sock = os.path.join(d, "containerd.sock")
    disabled = ["io.containerd.grpc.v1.cri", "io.containerd.snapshotter.v1.btrfs",
                "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
                "io.containerd.snapshotter.v1.aufs", "io.containerd.internal.v1.tracing",
                "io.containerd.tracing.processor.v1.otlp"]
    if cri is not None:
        disabled.remove("io.containerd.grpc.v1.cri")
    conf = os.path.join(d, "config.toml")
    with open(conf, "w") as f:
        f.write(f'version = 2\nroot = "{d}/root"\nstate = "{d}/state"\n'
                f"disabled_plugins = {json.dumps(disabled)}\n"
                f'[grpc]\n  address = "{sock}"\n[ttrpc]\n  address = "{sock}.ttrpc"\n'
                f'[debug]\n  address = "{d}/debug.sock"\n[metrics]\n  address = ""\n')
        f.write(cri or "")
    log = open(os.path.join(d, "containerd.log"), "w")
    try:
        proc = subprocess.Popen(["containerd", "--config", conf], stdout=log, stderr=log,
                                stdin=subprocess.DEVNULL)
        ctr = ["ctr", "-a", sock]
        try:
            yield ctr, wait_socket(ctr, proc)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    finally:
        log.close()
        if not had_run:
            shutil.rmtree("/run/containerd", ignore_errors=True)


def ctr_remove(ctr, names):
    """Whatever state they are in, these tasks and containers go."""
    for t in names:
        sh(ctr + ["task", "kill", "-s", "KILL", t])
        sh(ctr + ["task", "rm", "-f", t])
        sh(ctr + ["container", "rm", t])


def cpuset_dirs():
    """Every cgroup of the v1 cpuset hierarchy (none on a pure v2 host): lbbox makes one there
    only for a container, which host_clean checks is gone with it."""
    out = set()
    for d, subs, _ in os.walk("/sys/fs/cgroup/cpuset"):
        out.update(os.path.join(d, s) for s in subs)
    return out


def host_clean(tmp, bridge, check, cpusets=None):
    """check(cond, what) for each thing that must not be left: mounts, processes, the bridge,
    empty cni netns, and (given the cpuset_dirs() of before the test) an empty cpuset cgroup
    made meanwhile (podman's libpod_parent is podman_host's, the slices systemd_path_checks
    makes its own)."""
    if cpusets is not None:
        new = [d for d in cpuset_dirs() - cpusets
               if "/libpod_parent" not in d and "/lbboxtest.slice" not in d]
        left = [d for d in new if not open(os.path.join(d, "cgroup.procs")).read().strip()]
        check(left == [], f"no cpuset cgroup left ({left[:2]})")
    with open("/proc/self/mountinfo") as f:
        mounts = [l for l in f if tmp in l]
    check(mounts == [], f"no mount left under the test directory ({mounts[:2]})")
    procs = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            # conmon names the test's paths; a sandbox's pid 1 (its command line wiped) holds
            # its state directory's lock open
            if tmp.encode() in open(f"/proc/{p}/cmdline", "rb").read():
                procs.append(p)
                continue
            for fd in os.listdir(f"/proc/{p}/fd"):
                if os.readlink(f"/proc/{p}/fd/{fd}").startswith(tmp):
                    procs.append(p)
                    break
        except OSError:
            pass
    check(procs == [], f"no process of the test left ({procs})")
    check(not os.path.exists(f"/sys/class/net/{bridge}"), "the test's bridge is gone")
    netns = os.listdir("/run/netns") if os.path.isdir("/run/netns") else []
    mine = [n for n in netns if n.startswith("cni-") and
            sh(["ip", "netns", "pids", n]).stdout.strip() == ""]
    check(mine == [], f"no empty cni netns left ({mine})")


def delete_all(runc, roots):
    """Whatever failed, the containers go: delete --force every one left in these roots."""
    for d in roots:
        for cid in os.listdir(d) if os.path.isdir(d) else []:
            if not cid.startswith("."):
                sh([runc, "--root", d, "delete", "--force", cid])
