#!/usr/bin/env python3
"""lbbox-runc joining pid and cgroup namespaces by path, end to end (called by runtimes.py with
its helpers; runnable alone: nsjoin_checks.py BUILD_DIR ROOTFS).

A pod that shares its pid namespace (Kubernetes' shareProcessNamespace, podman's --pid
container:X): container A has its own, B joins it by /proc/<A's pid>/ns/pid. B sees A's
processes in its /proc and its execs do too; state names B's pid 1 (not its namespace's init);
ps lists B's processes only; kill --all and delete --force end all of B's and none of A's; what B's
command leaves running when it exits (a background child, a double-forked orphan) and what its
startContainer hook leaves are killed without touching A. A container joining the runtime's
own pid namespace (the host's) keeps to its cgroup the same way. A cgroup namespace joined by path. Refusals
(one line, nothing left in the root, no cgroup): a fifo, a plain file, a namespace of the
wrong type, a joined pid namespace with a new user namespace.
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import types


def edit(b, fn):
    path = os.path.join(b, "config.json")
    cfg = json.load(open(path))
    fn(cfg)
    json.dump(cfg, open(path, "w"))


def with_ns(cfg, kind, path):
    ns = [n for n in cfg["linux"]["namespaces"] if n["type"] != kind]
    cfg["linux"]["namespaces"] = ns + [{"type": kind, "path": path}]


def cmdlines():
    """{pid: cmdline with spaces} of every host process."""
    out = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    out[int(d)] = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            except OSError:
                pass
    return out


def running(text):
    return [p for p, c in cmdlines().items() if c == text]


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# a killed process leaves its cgroup a moment before it turns zombie: "gone" is waited for
def wait_for(cond, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


def reap():
    """As the caller's subreaper does (conmon, the shim): the exited pid 1s of the containers
    that joined A's pid namespace are reaped, which A's own end waits for."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


def ppid(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except OSError:
        return 0


def nspid(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("NSpid:"):
            return line.split()[1:]
    return []


def run_create(c, args, out):
    with open(out, "w") as o:
        r = subprocess.run(c.R + ["create"] + args, stdin=subprocess.DEVNULL, stdout=o,
                           stderr=o, timeout=60)
    return r.returncode


def container(c, name, args, pidns=None, pidfile=None, **kw):
    """create + start a container whose stdout goes to tmp/name.out; its pid 1's pid."""
    b = c.bundle(c.tmp, "nsj-" + name, args)
    edit(b, lambda cfg: cfg.pop("hostname", None))
    if pidns:
        edit(b, lambda cfg: with_ns(cfg, "pid", pidns))
    if kw.get("hooks"):
        edit(b, lambda cfg: cfg.update(hooks=kw["hooks"]))
    pidfile = os.path.join(c.tmp, name + ".pid")
    rc = run_create(c, ["-b", b, "--pid-file", pidfile, name], os.path.join(c.tmp, name + ".out"))
    if rc != 0:
        return 0
    r = c.sh(c.R + ["start", name])
    return int(open(pidfile).read()) if r.returncode == 0 else 0


def output(c, name):
    return open(os.path.join(c.tmp, name + ".out")).read()


def ps_pids(c, name):
    r = c.sh(c.R + ["ps", "--format", "json", name])
    return json.loads(r.stdout) if r.returncode == 0 else None


def pid_join_checks(c, check):
    pa = container(c, "nsa", ["sleep", "91300"])
    check(pa > 0 and nspid(pa)[-1] == "1", "A: a pid namespace of its own")
    wait_for(lambda: running("sleep 91300"))
    a_cmd = [p for p in running("sleep 91300") if ppid(p) == pa]
    check(len(a_cmd) == 1, f"A's command, a child of A's pid 1 ({a_cmd})")
    ns_a = f"/proc/{pa}/ns/pid"
    pb = container(c, "nsb", ["sh", "-c", "cat /proc/[0-9]*/cmdline | tr '\\0' ' '; echo;"
                              " sleep 91301 & (sleep 91302 &); sleep 91303"], pidns=ns_a)
    check(pb > 0 and wait_for(lambda: running("sleep 91303")),
          f"B created and started in A's pid namespace ({output(c, 'nsb').strip()[:200]})")
    if not pb:
        c.sh(c.R + ["delete", "--force", "nsa"])
        return
    check(os.readlink(f"/proc/{pb}/ns/pid") == os.readlink(ns_a) and nspid(pb)[-1] != "1",
          f"B's pid 1 is in A's pid namespace, not its init (NSpid {nspid(pb)})")
    wait_for(lambda: "sleep 91300" in output(c, "nsb"))
    check("sleep 91300" in output(c, "nsb"), "B's command sees A's processes in its /proc")
    st = json.loads(c.sh(c.R + ["state", "nsb"]).stdout)
    check(st["pid"] == pb and st["status"] == "running", f"state of B: B's pid ({st})")
    r = c.sh(c.R + ["exec", "nsb", "sh", "-c",
                    "readlink /proc/self/ns/pid; cat /proc/[0-9]*/cmdline | tr '\\0' ' '"])
    check(r.returncode == 0 and r.stdout.split("\n")[0] == os.readlink(ns_a)
          and "sleep 91300" in r.stdout, f"an exec into B joins the shared pid namespace ({r})")
    ps = ps_pids(c, "nsb") or []
    b_cmds = running("sleep 91301") + running("sleep 91302") + running("sleep 91303")
    check(pb in ps and all(p in ps for p in b_cmds) and pa not in ps
          and not any(p in ps for p in a_cmd) and len(b_cmds) == 3,
          f"ps of B: B's processes, none of A's ({ps} {b_cmds} {pa} {a_cmd})")
    r = c.sh(c.R + ["kill", "--all", "nsb", "KILL"])
    check(r.returncode == 0 and wait_for(lambda: not any(alive(p) for p in b_cmds + [pb])),
          f"kill --all B: every process of B ended, the orphan of B's command too ({r.stderr})")
    check(alive(pa) and all(alive(p) for p in a_cmd), "... and A runs on")
    check(wait_for(lambda: json.loads(c.sh(c.R + ["state", "nsb"]).stdout)["status"]
                   == "stopped"), "B stopped")
    c.sh(c.R + ["delete", "nsb"])

    # delete --force: the same, with an exec of B's still running
    pb = container(c, "nsb2", ["sleep", "91311"], pidns=ns_a)
    r = subprocess.Popen(c.R + ["exec", "nsb2", "sleep", "91312"], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for(lambda: running("sleep 91312"))
    mine = running("sleep 91311") + running("sleep 91312")
    r2 = c.sh(c.R + ["delete", "--force", "nsb2"])
    r.wait(timeout=20)
    check(pb > 0 and len(mine) == 2 and r2.returncode == 0
          and wait_for(lambda: not any(alive(p) for p in mine + [pb]), 5),
          f"delete --force B: its command and its exec ended ({mine} {r2.stderr})")
    check(alive(pa) and all(alive(p) for p in a_cmd), "... and A runs on")

    # B's command exits: what it left (a background child, a double-forked orphan reparented
    # to B's pid 1 as its subreaper) ends with it, before any delete
    pb = container(c, "nsb3", ["sh", "-c", "sleep 91321 & (sleep 91322 &); exit 3"], pidns=ns_a)
    check(pb > 0 and c.wait_exit(pb) == 3, "B's pid 1 exits with its command's status")
    left = running("sleep 91321") + running("sleep 91322")
    check(left == [] and alive(pa), f"what B's command left is killed, A runs on ({left})")
    c.sh(c.R + ["delete", "nsb3"])

    # B's pid 1 killed from outside (the OOM killer, a kill of the host): B is stopped, and its
    # delete ends what its command left
    pb = container(c, "nsb5", ["sh", "-c", "sleep 91341 & sleep 91342"], pidns=ns_a)
    wait_for(lambda: running("sleep 91342"))
    mine = running("sleep 91341") + running("sleep 91342")
    os.kill(pb, 9)
    c.wait_exit(pb)
    stopped = json.loads(c.sh(c.R + ["state", "nsb5"]).stdout)["status"] == "stopped"
    r = c.sh(c.R + ["delete", "nsb5"])
    check(pb > 0 and len(mine) == 2 and stopped and r.returncode == 0
          and wait_for(lambda: not any(alive(p) for p in mine), 5) and alive(pa),
          f"B's pid 1 killed: delete of the stopped B ends its command ({mine} {stopped} "
          f"{[p for p in mine if alive(p)]} {r.stderr.strip()})")

    # a bundle that masks /proc itself: pid 1 cannot find what its command left, gives up on it
    # within a bound instead of waiting for it for ever, and delete ends it
    b = c.bundle(c.tmp, "nsj-nsb6", ["sh", "-c", "sleep 91343 & exit 4"])
    edit(b, lambda cfg: (cfg.pop("hostname", None), with_ns(cfg, "pid", ns_a),
                         cfg["linux"].update(maskedPaths=["/proc"])))
    pidfile = os.path.join(c.tmp, "nsb6.pid")
    rc = run_create(c, ["-b", b, "--pid-file", pidfile, "nsb6"], os.path.join(c.tmp, "nsb6.out"))
    pb = int(open(pidfile).read()) if rc == 0 else 0
    c.sh(c.R + ["start", "nsb6"])
    wait_for(lambda: running("sleep 91343"))
    left = running("sleep 91343")
    code = c.wait_exit(pb, 10) if pb else None
    r = c.sh(c.R + ["delete", "nsb6"])
    check(pb > 0 and code == 4 and len(left) == 1 and r.returncode == 0
          and wait_for(lambda: not any(alive(p) for p in left), 5) and alive(pa),
          f"/proc masked: pid 1 still exits, delete ends the leftover ({code} {left} "
          f"{r.stderr.strip()} {output(c, 'nsb6').strip()})")

    # a startContainer hook leaves a process: killed, and only it (kill(-1) there would end
    # A and every other process of the shared namespace)
    hook = {"startContainer": [{"path": "/bin/sh", "args": ["sh", "-c", "sleep 91331 &"]}]}
    pb = container(c, "nsb4", ["sleep", "91332"], pidns=ns_a, hooks=hook)
    check(pb > 0 and wait_for(lambda: running("sleep 91332")) and running("sleep 91331") == []
          and alive(pa) and all(alive(p) for p in a_cmd),
          "a startContainer hook's leftover killed, A untouched")
    c.sh(c.R + ["delete", "--force", "nsb4"])

    # the runtime's own pid namespace (the host's): still only the container's processes
    ph = container(c, "nsh", ["sleep", "91351"], pidns="/proc/self/ns/pid")
    wait_for(lambda: running("sleep 91351"))
    host = running("sleep 91351")
    ps = ps_pids(c, "nsh") or []
    check(ph > 0 and nspid(ph) == [str(ph)] and sorted(ps) == sorted([ph] + host)
          and len(host) == 1, f"the host's pid namespace joined; ps lists its own ({ps})")
    r = c.sh(c.R + ["kill", "--all", "nsh", "TERM"])
    check(r.returncode == 0 and wait_for(lambda: not alive(ph) and not running("sleep 91351"))
          and alive(pa) and os.getpid() > 0, f"kill --all TERM reaches its processes only")
    c.sh(c.R + ["delete", "--force", "nsh"])
    reap()
    r = c.sh(c.R + ["delete", "--force", "nsa"])
    check(r.returncode == 0 and not alive(pa), f"A deleted after ({r.stderr.strip()})")


def cgroup_join_checks(c, check):
    pa = container(c, "nsca", ["sleep", "91355"])
    pb = 0
    if pa:
        b = c.bundle(c.tmp, "nsj-ncb", ["sleep", "91356"])
        edit(b, lambda cfg: with_ns(cfg, "cgroup", f"/proc/{pa}/ns/cgroup"))
        pidfile = os.path.join(c.tmp, "ncb.pid")
        rc = run_create(c, ["-b", b, "--pid-file", pidfile, "ncb"],
                        os.path.join(c.tmp, "ncb.out"))
        pb = int(open(pidfile).read()) if rc == 0 else 0
    own = pa and os.readlink(f"/proc/{pa}/ns/cgroup") != os.readlink("/proc/self/ns/cgroup")
    check(pb > 0 and own and os.readlink(f"/proc/{pb}/ns/cgroup")
          == os.readlink(f"/proc/{pa}/ns/cgroup"),
          f"a cgroup namespace joined by path ({output(c, 'ncb').strip() if pa else ''})")
    for cid in ("ncb", "nsca"):
        c.sh(c.R + ["delete", "--force", cid])


def refusal_checks(c, check):
    pa = container(c, "nsra", ["sleep", "91360"])
    fifo = os.path.join(c.tmp, "nsj-fifo")
    os.mkfifo(fifo)
    plain = os.path.join(c.tmp, "nsj-plain")
    open(plain, "w").close()
    cg_name = f"lbbox-nsj-test-{os.getpid()}"
    cases = [("pid", fifo, "pid namespace"), ("pid", plain, "pid namespace"),
             ("pid", f"/proc/{pa}/ns/net", "pid namespace"),
             ("cgroup", f"/proc/{pa}/ns/pid", "cgroup namespace"),
             ("pid", "relative/path", "not absolute")]
    for kind, path, said in cases:
        b = c.bundle(c.tmp, f"nsj-bad-{len(os.listdir(c.tmp))}", ["true"])
        edit(b, lambda cfg: (with_ns(cfg, kind, path),
                             cfg["linux"].update(cgroupsPath="/" + cg_name)))
        t0 = time.time()
        rc, err = c.create(c.R, c.tmp, ["-b", b, "nsbad"])
        check(rc == 1 and err.count("\n") == 1 and said in err and time.time() - t0 < 10,
              f"{kind} namespace {os.path.basename(path)}: one line ({err.strip()})")
    b = c.bundle(c.tmp, "nsj-bad-userns", ["true"])

    def userns(cfg):
        with_ns(cfg, "pid", f"/proc/{pa}/ns/pid")
        cfg["linux"]["namespaces"].append({"type": "user"})
        m = [{"containerID": 0, "hostID": 100000, "size": 65536}]
        cfg["linux"].update(uidMappings=m, gidMappings=m)
    edit(b, userns)
    rc, err = c.create(c.R, c.tmp, ["-b", b, "nsbad"])
    check(rc == 1 and err.count("\n") == 1 and "new user namespace" in err,
          f"a joined pid namespace with a new user namespace: one line ({err.strip()})")
    # a pid namespace whose init is gone, kept by a handle of ours: one line, not ENOMEM's
    fd = os.open(f"/proc/{pa}/ns/pid", os.O_RDONLY)
    c.sh(c.R + ["delete", "--force", "nsra"])
    reap()
    b = c.bundle(c.tmp, "nsj-bad-dead", ["true"])
    edit(b, lambda cfg: (with_ns(cfg, "pid", f"/proc/{os.getpid()}/fd/{fd}"),
                         cfg["linux"].update(cgroupsPath="/" + cg_name)))
    rc, err = c.create(c.R, c.tmp, ["-b", b, "nsbad"])
    os.close(fd)
    check(rc == 1 and err.count("\n") == 1 and "its init has exited" in err,
          f"a pid namespace whose init exited: one line ({err.strip()})")
    left = [n for n in os.listdir(c.root) if not n.startswith(".")]
    sbx = os.listdir(os.path.join(c.root, ".sandboxes"))
    cgs = [d for d in os.listdir("/sys/fs/cgroup") if os.path.exists(
        os.path.join("/sys/fs/cgroup", d, cg_name))]
    check(left == [] and sbx == [] and cgs == [],
          f"nothing left by the refusals: root, sandboxes, cgroups ({left} {sbx} {cgs})")


def kill_all_checks(c, check):
    """kill --all of a container in its own pid namespace: every process of it gets the signal
    through its cgroup (a pidfd per process, checked against a second read of cgroup.procs), not
    pid 1 alone, which forwards it to the command only."""
    # the child starts before the trap: an ignored signal would be inherited
    p = container(c, "nsk", ["sh", "-c", "sleep 91361 & trap '' TERM; while :; do sleep 1; done"])
    check(p > 0 and wait_for(lambda: running("sleep 91361")), "kill --all: the container runs")
    r = c.sh(c.R + ["kill", "nsk", "TERM"])
    time.sleep(0.3)
    check(r.returncode == 0 and running("sleep 91361") != [],
          "kill TERM (without --all) reaches the command only: its child lives")
    r = c.sh(c.R + ["kill", "--all", "nsk", "TERM"])
    check(r.returncode == 0 and wait_for(lambda: not running("sleep 91361")) and alive(p),
          f"kill --all TERM reaches the command's child; the command ignores it ({r.stderr})")
    c.sh(c.R + ["delete", "--force", "nsk"])
    reap()


def nsjoin_checks(c):
    kill_all_checks(c, c.check)
    pid_join_checks(c, c.check)
    cgroup_join_checks(c, c.check)
    refusal_checks(c, c.check)


def run_alone(checks, prefix):
    """checks(c) with a root of its own in a temporary directory, everything in it deleted
    after; the exit status (77: skipped without root)."""
    sys.argv[1:] = sys.argv[1:] or ["build", ""]
    import runtimes as rt
    from ocihost import delete_all, subreaper
    if os.geteuid() != 0:
        print("SKIP: needs root")
        return 77
    subreaper()
    tmp = tempfile.mkdtemp(prefix=prefix)
    root = os.path.join(tmp, "runc-root")
    c = types.SimpleNamespace(R=[rt.RUNC, "--root", root], root=root, tmp=tmp, check=rt.check,
                              sh=rt.sh, bundle=rt.bundle, create=rt.create,
                              wait_exit=rt.wait_exit)
    try:
        checks(c)
    finally:
        delete_all(rt.RUNC, [root])
        subprocess.run(["rm", "-rf", tmp])
    print(f"{len(rt.FAILS)} failed" if rt.FAILS else "all passed")
    return 1 if rt.FAILS else 0


def main():
    """Alone: a root of its own in a temporary directory, the host checked clean after."""
    return run_alone(nsjoin_checks, "lbbox-nsj-")


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.exit(main())
