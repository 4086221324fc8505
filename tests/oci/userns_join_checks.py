#!/usr/bin/env python3
"""lbbox-runc joining a user namespace by path, end to end (called by runtimes.py with its
helpers; runnable alone: userns_join_checks.py BUILD_DIR ROOTFS).

A Kubernetes pod whose containers run in user namespaces: the pod's sandbox container A gets a
new user namespace (uidMappings 0 -> host 100000), and each container B joins A's user, network,
ipc and uts namespaces by path, with the same maps in its config (as containerd writes them).
B's pid 1 is born in A's user namespace and B's new mount, pid and cgroup namespaces belong to
it (else B's root would own nothing of its own world); B's root is the host's 100000, in its
files and its processes; exec joins the same namespace; B may join A's pid namespace too.
Refusals (one line, nothing left in the root, no cgroup): maps that are not the namespace's
(as lbbox sees them: a nested namespace's maps read from inside would hide the host's root), a
namespace that maps the host's root unless the bundle's maps say so, a path to a namespace of
another type, a user namespace that belongs to another user (its owner would hold every
capability over the container), one that does not map the container's root, and lbbox's own.
"""
import ctypes
import fcntl
import json
import os
import subprocess
import sys
import time

from nsjoin_checks import edit, with_ns, reap, run_create, output

MAP = [{"containerID": 0, "hostID": 100000, "size": 65536}]
NS_GET_USERNS = 0xb701  # _IO(0xb7, 0x1), linux/nsfs.h


def ns_id(pid, kind):
    return os.readlink(f"/proc/{pid}/ns/{kind}")


def owner_of(pid, kind):
    """The user namespace that owns pid's namespace of this kind, as "user:[inode]"."""
    fd = os.open(f"/proc/{pid}/ns/{kind}", os.O_RDONLY)
    try:
        owner = fcntl.ioctl(fd, NS_GET_USERNS)
        try:
            return f"user:[{os.fstat(owner).st_ino}]"
        finally:
            os.close(owner)
    finally:
        os.close(fd)


def host_ids(pid):
    st = open(f"/proc/{pid}/status").read().split("\n")
    ids = {l.split(":")[0]: int(l.split()[1]) for l in st if l.startswith(("Uid:", "Gid:"))}
    return ids["Uid"], ids["Gid"]


def start(c, name, b):
    """create + start; pid 1's pid (0 on failure, create's words in tmp/name.out)."""
    pidfile = os.path.join(c.tmp, name + ".pid")
    if run_create(c, ["-b", b, "--pid-file", pidfile, name],
                  os.path.join(c.tmp, name + ".out")) != 0:
        return 0
    return int(open(pidfile).read()) if c.sh(c.R + ["start", name]).returncode == 0 else 0


def pod(c, name):
    """The pod's sandbox: a user namespace of its own, mapping 0-65535 to the host's 100000."""
    b = c.bundle(c.tmp, "uj-" + name, ["sleep", "91380"])
    edit(b, lambda cfg: (cfg.pop("hostname", None),
                         cfg["linux"]["namespaces"].append({"type": "user"}),
                         cfg["linux"].update(uidMappings=MAP, gidMappings=MAP)))
    return start(c, name, b)


def member(c, name, pa, args, maps=MAP, kinds=("user", "network", "ipc", "uts"), path=None):
    """A bundle that joins pa's namespaces of kinds (the user one at path, if given), with
    these uid and gid maps (None: none)."""
    b = c.bundle(c.tmp, f"uj-{name}-{len(os.listdir(c.tmp))}", args)

    def fn(cfg):
        cfg.pop("hostname", None)
        for kind in kinds:
            with_ns(cfg, kind, f"/proc/{pa}/ns/{'net' if kind == 'network' else kind}")
        if path:
            with_ns(cfg, "user", path)
        if maps:
            cfg["linux"].update(uidMappings=maps, gidMappings=maps)
    edit(b, fn)
    return b


def joined_checks(c, check, pa, data):
    probe = ("id -u; id -g; touch /data/by-b && echo made; grep CapEff /proc/self/status; "
             "sleep 91381")
    b = member(c, "b", pa, ["sh", "-c", probe])
    edit(b, lambda cfg: cfg["mounts"].append(
        {"destination": "/data", "type": "bind", "source": data, "options": ["rbind"]}))
    pb = start(c, "ujb", b)
    check(pb > 0, f"B joins A's user namespace ({output(c, 'ujb').strip()})")
    if not pb:
        return
    end = time.time() + 10
    while time.time() < end and "CapEff" not in output(c, "ujb"):
        time.sleep(0.05)
    same = [k for k in ("user", "net", "ipc", "uts") if ns_id(pb, k) == ns_id(pa, k)]
    check(same == ["user", "net", "ipc", "uts"], f"B is in A's user, net, ipc, uts ({same})")
    mine = [k for k in ("mnt", "pid", "cgroup") if ns_id(pb, k) != ns_id(pa, k)]
    owners = [owner_of(pb, k) for k in ("mnt", "pid", "cgroup")]
    check(mine == ["mnt", "pid", "cgroup"] and owners == [ns_id(pa, "user")] * 3,
          f"B's own mount, pid and cgroup namespaces belong to A's user namespace ({mine} "
          f"{owners} {ns_id(pa, 'user')})")
    lines = [" ".join(l.split()) for l in output(c, "ujb").splitlines()]
    check(lines == ["0", "0", "made", "CapEff: 0000000020000420"] and
          host_ids(pb) == (100000, 100000),
          f"inside B: root of A's namespace with the bundle's capabilities, the host's 100000 "
          f"({lines} {host_ids(pb)})")
    st = os.stat(os.path.join(data, "by-b")) if "made" in lines else None
    check(st and (st.st_uid, st.st_gid) == (100000, 100000),
          f"a file B made is the host's 100000's ({st and (st.st_uid, st.st_gid)})")
    r = c.sh(c.R + ["exec", "ujb", "sh", "-c", "id -u; readlink /proc/self/ns/user"])
    check(r.returncode == 0 and r.stdout.split() == ["0", ns_id(pa, "user")],
          f"exec joins the same user namespace ({r.stdout.split()} {r.stderr.strip()})")
    r = c.sh(c.R + ["exec", "--user", "1000:1000", "ujb", "sh", "-c", "touch /data/by-1000"])
    st = os.stat(os.path.join(data, "by-1000")) if r.returncode == 0 else None
    check(st and (st.st_uid, st.st_gid) == (101000, 101000),
          f"exec --user 1000 in B: the host's 101000 ({r.stderr.strip()})")
    c.sh(c.R + ["delete", "--force", "ujb"])
    # without maps (they are optional with a path), and with A's pid namespace too: B's /proc
    # is of A's pid namespace, which A's user namespace owns, so it can be mounted
    b = member(c, "c", pa, ["sh", "-c", "id -u; ps -o comm= | sort -u | tr '\\n' ' '"],
               maps=None, kinds=("user", "network", "ipc", "uts", "pid"))
    r = c.sh(c.R + ["run", "-b", b, "ujc"], stdin=subprocess.DEVNULL)
    check(r.returncode == 0 and r.stdout.split()[0] == "0" and "sleep" in r.stdout.split(),
          f"no maps, A's pid namespace joined too: A's sleep in B's /proc ({r.stdout.split()} "
          f"{r.stderr.strip()})")
    reap()
    # 130 ranges (more than a page of the kernel's text), the same in the bundle
    many = Holder("".join(f"{i} {300000 + i} 1\n" for i in range(130)))
    try:
        m = [{"containerID": i, "hostID": 300000 + i, "size": 1} for i in range(130)]
        b = member(c, "many", pa, ["true"], maps=m, path=f"/proc/{many.pid}/ns/user")
        r = c.sh(c.R + ["run", "-b", b, "ujmany"], stdin=subprocess.DEVNULL)
        check(r.returncode == 0, f"a namespace of 130 ranges, the bundle's the same "
              f"({r.stderr.strip()})")
    finally:
        many.close()


CLONE_NEWUSER = 0x10000000
LIBC = ctypes.CDLL(None, use_errno=True)


class Holder:
    """A process in a user namespace made here, with these maps written by root ("inside
    outside count" lines); nested: in a second namespace made inside the first, whose maps
    (written from the first, in its ids) are nested_maps. Killed by close()."""

    def __init__(self, maps, nested_maps=None):
        self.pids = []
        r, w = os.pipe()
        go_r, go_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            os.close(go_w)
            if LIBC.unshare(CLONE_NEWUSER) != 0:
                os._exit(1)
            os.write(w, b"1")
            os.read(go_r, 1)  # maps written
            if nested_maps:
                self._nest(nested_maps, w)
            time.sleep(600)
            os._exit(0)
        os.close(w)
        os.close(go_r)
        self.pids.append(pid)
        os.read(r, 1)
        for kind in ("uid", "gid"):
            with open(f"/proc/{pid}/{kind}_map", "w") as f:
                f.write(maps)
        os.write(go_w, b"1")
        self.pid = pid
        if nested_maps:
            self.pid = int(os.read(r, 16))
            self.pids.append(self.pid)
        os.close(r)
        os.close(go_w)

    @staticmethod
    def _nest(maps, report):
        """In the first namespace: a child makes the second, this one writes its maps."""
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            LIBC.unshare(CLONE_NEWUSER)
            os.write(w, b"1")
            time.sleep(600)
            os._exit(0)
        os.read(r, 1)
        for kind in ("uid", "gid"):
            with open(f"/proc/{pid}/{kind}_map", "w") as f:
                f.write(maps)
        os.write(report, str(pid).encode())

    def close(self):
        for pid in reversed(self.pids):
            try:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass


def holder(args):
    """A process in a user namespace made by args (unshare), alive until killed."""
    p = subprocess.Popen(args + ["sleep", "91382"])
    end = time.time() + 10
    while time.time() < end and ns_id(p.pid, "user") == ns_id(os.getpid(), "user"):
        time.sleep(0.02)
    return p


def refusal_checks(c, check, pa):
    cg_name = f"lbbox-uj-test-{os.getpid()}"
    wrong = [{"containerID": 0, "hostID": 200000, "size": 65536}]
    nobody = holder(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
                     "unshare", "-U"])
    unmapped = Holder("1000 300000 1\n")  # root-made, no 0: the container's root is unmapped
    hostroot = Holder("0 0 1\n1000 1000 1\n")  # root-made, mapping the host's root as its own
    # a namespace inside one that maps its 100000 to the host's 0: maps that look harmless from
    # inside (0 -> 100000) are the host's root seen from lbbox
    nested = Holder("0 200000 65536\n100000 0 1\n", nested_maps="0 100000 1\n1 1 65535\n")
    seen_inside = [{"containerID": 0, "hostID": 100000, "size": 1},
                   {"containerID": 1, "hostID": 1, "size": 65535}]
    cases = [("maps not the namespace's", None, wrong, "not those of user namespace"),
             ("the host's root mapped, no maps given", f"/proc/{hostroot.pid}/ns/user", None,
              "maps the host's root (uid 0)"),
             ("nested, its maps as seen from inside", f"/proc/{nested.pid}/ns/user",
              seen_inside, "not those of user namespace"),
             ("nested, no maps given", f"/proc/{nested.pid}/ns/user", None,
              "maps the host's root (uid 0)"),
             ("a network namespace", f"/proc/{pa}/ns/net", None, "another type"),
             ("a plain file", os.path.join(c.tmp, "uj-plain"), None, "not a namespace"),
             ("another user's", f"/proc/{nobody.pid}/ns/user", None,
              "belongs to uid 65534"),
             ("no uid 0", f"/proc/{unmapped.pid}/ns/user", None, "does not map uid 0"),
             ("lbbox's own", "/proc/self/ns/user", None, "lbbox's own")]
    open(os.path.join(c.tmp, "uj-plain"), "w").close()
    try:
        for what, path, maps, said in cases:
            b = member(c, "bad", pa, ["true"], maps=maps, path=path)
            edit(b, lambda cfg: cfg["linux"].update(cgroupsPath="/" + cg_name))
            t0 = time.time()
            rc, err = c.create(c.R, c.tmp, ["-b", b, "ujbad"])
            check(rc == 1 and err.count("\n") == 1 and said in err and time.time() - t0 < 10,
                  f"user namespace: {what}: one line ({err.strip()})")
        # the host's root mapped, and the bundle says so (as with its own hostID 0): accepted
        m = [{"containerID": 0, "hostID": 0, "size": 1},
             {"containerID": 1000, "hostID": 1000, "size": 1}]
        b = member(c, "hostroot", pa, ["true"], maps=m, path=f"/proc/{hostroot.pid}/ns/user")
        r = c.sh(c.R + ["run", "-b", b, "ujroot"], stdin=subprocess.DEVNULL)
        check(r.returncode == 0, f"the host's root mapped, with maps that say so: accepted "
              f"({r.stderr.strip()})")
    finally:
        nobody.kill()
        nobody.wait()
        for h in (unmapped, hostroot, nested):
            h.close()
    left = [n for n in os.listdir(c.root) if not n.startswith(".") and n != "uja"]
    cgs = [d for d in os.listdir("/sys/fs/cgroup") if os.path.exists(
        os.path.join("/sys/fs/cgroup", d, cg_name))]
    check(left == [] and cgs == [], f"nothing left by the refusals: root, cgroups ({left} {cgs})")


def userns_join_checks(c):
    data = os.path.join(c.tmp, "uj-data")
    os.makedirs(data)
    os.chown(data, 100000, 100000)
    os.chmod(data, 0o777)  # exec --user 1000 writes there too
    pa = pod(c, "uja")
    c.check(pa > 0 and ns_id(pa, "user") != ns_id(os.getpid(), "user"),
            f"A: a user namespace of its own ({output(c, 'uja').strip()})")
    if not pa:
        return
    try:
        joined_checks(c, c.check, pa, data)
        refusal_checks(c, c.check, pa)
    finally:
        c.sh(c.R + ["delete", "--force", "uja"])
        reap()


def main():
    """Alone: a root of its own in a temporary directory, the host checked clean after."""
    from nsjoin_checks import run_alone
    return run_alone(userns_join_checks, "lbbox-uj-")


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.exit(main())
