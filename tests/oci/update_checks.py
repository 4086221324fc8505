"""lbbox-runc update, exec --cap, --preserve-fds and systemd cgroupsPaths, end to end (called
by runtimes.py with its helpers).

update on a running container: flags and a LinuxResources object on stdin, read back in the
cgroup files from the host and from inside, and in the engine's record; what lbbox cannot apply
is refused with one line and changes nothing; a write the kernel refuses (memory below what is in
use) puts back the ones before it. exec --cap adds a capability of the container's bounding set
to one exec (CapEff), and refuses one outside it.
"""
import json
import os
import subprocess
import time


def cg_value(c, pid, name):
    for d in c.cgroup_dirs(pid):
        p = os.path.join(d, name)
        if os.path.exists(p):
            return open(p).read().strip()
    return None


def values(c, pid, names):
    return [cg_value(c, pid, n) for n in names]


V2 = os.path.exists("/sys/fs/cgroup/cgroup.controllers")
MEM = ["memory.max", "memory.swap.max"] if V2 else ["memory.limit_in_bytes",
                                                     "memory.memsw.limit_in_bytes"]
CPU = ["cpu.max", "cpu.weight"] if V2 else ["cpu.cfs_quota_us", "cpu.cfs_period_us", "cpu.shares"]


def update_checks(c):
    R, check, sh = c.R, c.check, c.sh
    b = c.bundle(c.tmp, "bu", ["sleep", "300"])
    cfg = json.load(open(os.path.join(b, "config.json")))
    cfg["linux"]["resources"] = {"memory": {"limit": 64 << 20}, "pids": {"limit": 50}}
    cfg["process"]["capabilities"]["bounding"].append("CAP_NET_ADMIN")
    json.dump(cfg, open(os.path.join(b, "config.json"), "w"))
    pidfile = os.path.join(c.tmp, "bu.pid")
    rc, err = c.create(R, c.tmp, ["-b", b, "--pid-file", pidfile, "cu"])
    check(rc == 0 and sh(R + ["start", "cu"]).returncode == 0, f"update: container up ({err})")
    pid = int(open(pidfile).read())

    r = sh(R + ["update", "--memory", "128m", "--pids-limit", "77", "--cpu-quota", "50000",
                "--cpu-period", "100000", "--cpu-share", "512", "cu"])
    got = values(c, pid, MEM + ["pids.max"] + CPU)
    want = (["134217728", "0", "77", "50000 100000", "20"] if V2 else
            ["134217728", "134217728", "77", "50000", "100000", "512"])
    check(r.returncode == 0 and got == want,
          f"update flags reach the cgroup, still no swap ({got} {r.stderr.strip()})")
    inside = "/sys/fs/cgroup/memory.max" if V2 else "/sys/fs/cgroup/memory/memory.limit_in_bytes"
    r = sh(R + ["exec", "cu", "cat", inside])
    check(r.stdout.strip() == "134217728", f"the new memory limit seen inside ({r.stdout.strip()})")

    res = {"memory": {"limit": 96 << 20, "swap": 128 << 20}, "pids": {"limit": -1},
           "cpu": {"quota": -1}, "devices": [{"allow": False, "access": "rwm"}]}
    r = sh(R + ["update", "--resources", "-", "cu"], input=json.dumps(res))
    got = values(c, pid, MEM + ["pids.max"])
    want = ["100663296", "33554432" if V2 else "134217728", "max"]
    check(r.returncode == 0 and got == want,
          f"update --resources - (a LinuxResources object on stdin) ({got} {r.stderr.strip()})")
    sb = json.load(open(os.path.join(c.root, "cu", "state.json")))["sandbox"]
    lim = json.load(open(os.path.join(c.root, ".sandboxes", sb, "state.json")))["spec"]["limits"]
    check(lim["memory_bytes"] == 96 << 20 and lim["pids"] == 0,
          f"the engine's record has the new limits ({lim})")

    before = values(c, pid, MEM + ["pids.max"] + CPU)
    bad = [(["--memory", "1m"], None, "32 MiB"),
           (["--memory", "lots"], None, "not a valid value"),
           (["--memory-swap", "256m"], None, "needs memory"),
           (["--cpuset-cpus", "1-0"], None, "cpuset cpus '1-0'"),
           (["--blkio-weight", "500"], None, "not supported"),
           (["--resources", "-"], {"unified": {"memory.high": "1"}}, "unified"),
           (["--resources", "-"], {"hugepageLimits": [{"pageSize": "2MB", "limit": 1}]},
            "hugepageLimits"),
           (["--resources", "-"], {"pids": {"limit": "x"}}, "integer"),
           (["--resources", "-"], "not json", "resources"),
           (["--resources", "-", "--pids-limit", "5"], {"memory": {"kernel": 1}}, "kernel")]
    for args, stdin, word in bad:
        text = stdin if isinstance(stdin, str) else json.dumps(stdin) if stdin else ""
        r = sh(R + ["update"] + args + ["cu"], input=text)
        check(r.returncode == 1 and r.stderr.count("\n") == 1 and word in r.stderr,
              f"update {args} {stdin}: refused with one line ({r.stderr.strip()})")
    check(values(c, pid, MEM + ["pids.max"] + CPU) == before, "the refusals changed nothing")

    # memory + swap unlimited goes first, then memory below what /dev/shm holds: the kernel
    # refuses the second write (EBUSY, no swap to reclaim to) and the first is put back
    r = sh(R + ["exec", "cu", "sh", "-c", "head -c 52428800 /dev/zero > /dev/shm/fill"])
    r = sh(R + ["update", "--memory", "33m", "--memory-swap", "-1", "cu"])
    after = values(c, pid, MEM + ["pids.max"] + CPU)
    check(r.returncode == 1 and r.stderr.count("\n") == 1 and after == before,
          f"a write the kernel refuses undoes the ones before it ({after} {r.stderr.strip()})")

    # exec --cap: within the bounding set only
    r = sh(R + ["exec", "cu", "grep", "CapEff", "/proc/self/status"])
    plain = int(r.stdout.split()[1], 16) if r.returncode == 0 else -1
    r = sh(R + ["exec", "--cap", "CAP_NET_ADMIN", "cu", "grep", "CapEff", "/proc/self/status"])
    added = int(r.stdout.split()[1], 16) if r.returncode == 0 else -1
    check(plain >= 0 and not plain & (1 << 12) and added == plain | (1 << 12),
          f"exec --cap CAP_NET_ADMIN: in that exec's CapEff only ({plain:x} {added:x})")
    r = sh(R + ["exec", "--cap", "CAP_SYS_MODULE", "cu", "true"])
    check(r.returncode != 0 and r.stderr.count("\n") == 1 and "bounding set" in r.stderr,
          f"exec --cap outside the bounding set refused ({r.stderr.strip()})")
    r = sh(R + ["exec", "--cap", "CAP_NOPE", "cu", "true"])
    check(r.returncode != 0 and "not a capability" in r.stderr, "exec --cap of no capability")

    sh(R + ["kill", "cu", "KILL"])
    c.wait_exit(pid)
    r = sh(R + ["update", "--memory", "64m", "cu"])
    check(r.returncode == 1 and "stopped" in r.stderr, "update of a stopped container refused")
    sh(R + ["delete", "--force", "cu"])


def allowed_cpus(status_text):
    for line in status_text.splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return line.split(":", 1)[1].strip()
    return None


def cpuset_checks(c):
    """resources.cpu.cpus pins the container (its command and an exec), update --cpuset-cpus
    and --resources move it, bad lists are refused with one line and change nothing, delete
    leaves no cpuset cgroup."""
    R, check, sh = c.R, c.check, c.sh
    usable = open("/sys/fs/cgroup/cpuset/cpuset.effective_cpus" if not V2 else
                  "/sys/fs/cgroup/cpuset.cpus.effective").read().strip()
    other = "0" if usable == "0" else "1"  # a 1-cpu host moves from 0 to 0
    b = c.bundle(c.tmp, "bcs", ["sleep", "300"])
    cfg = json.load(open(os.path.join(b, "config.json")))
    cfg["linux"]["resources"] = {"cpu": {"cpus": "0", "mems": "0"}}
    json.dump(cfg, open(os.path.join(b, "config.json"), "w"))
    pidfile = os.path.join(c.tmp, "bcs.pid")
    rc, err = c.create(R, c.tmp, ["-b", b, "--pid-file", pidfile, "ccs"])
    check(rc == 0 and sh(R + ["start", "ccs"]).returncode == 0, f"cpuset: container up ({err})")
    pid = int(open(pidfile).read())
    dirs = [d for d in c.cgroup_dirs(pid) if "/cpuset/" in d] if not V2 else c.cgroup_dirs(pid)
    host = allowed_cpus(open(f"/proc/{pid}/status").read())
    r = sh(R + ["exec", "ccs", "cat", "/proc/self/status"])
    check(host == "0" and allowed_cpus(r.stdout) == "0" and dirs,
          f"cpu.cpus 0: the command and an exec run on cpu 0 ({host} {allowed_cpus(r.stdout)} {dirs})")

    r = sh(R + ["update", "--cpuset-cpus", other, "ccs"])
    inside = allowed_cpus(sh(R + ["exec", "ccs", "cat", "/proc/self/status"]).stdout)
    host = allowed_cpus(open(f"/proc/{pid}/status").read())
    check(r.returncode == 0 and inside == other and host == other,
          f"update --cpuset-cpus {other}: a new exec and the command ({inside} {host} {r.stderr.strip()})")
    eff = "cpuset.cpus.effective" if V2 else "cpuset.effective_cpus"
    before = cg_value(c, pid, eff)
    for bad in ("9999", "1-0", "a", "7" * 4096, "0-4095"):
        r = sh(R + ["update", "--cpuset-cpus", bad, "ccs"])
        check(r.returncode == 1 and r.stderr.count("\n") == 1 and "cpuset cpus" in r.stderr
              and len(r.stderr) < 300,
              f"update --cpuset-cpus {bad[:12]}: refused with one line ({r.stderr.strip()[:160]})")
    r = sh(R + ["update", "--resources", "-", "ccs"], input=json.dumps({"cpu": {"cpus": "a-b"}}))
    check(r.returncode == 1 and r.stderr.count("\n") == 1, "--resources with a bad list refused")
    check(cg_value(c, pid, eff) == before == other, f"the refusals changed nothing ({before})")
    r = sh(R + ["update", "--resources", "-", "ccs"], input=json.dumps({"cpu": {"cpus": "0"}}))
    host = allowed_cpus(open(f"/proc/{pid}/status").read())
    check(r.returncode == 0 and host == "0", f"update --resources cpu.cpus 0 ({host} {r.stderr.strip()})")
    sb = json.load(open(os.path.join(c.root, "ccs", "state.json")))["sandbox"]
    lim = json.load(open(os.path.join(c.root, ".sandboxes", sb, "state.json")))["spec"]["limits"]
    check(lim.get("cpus") == "0" and lim.get("mems") == "0",
          f"the engine's record has the cpuset ({lim})")

    sh(R + ["delete", "--force", "ccs"])
    left = [d for d in dirs if os.path.exists(d)]
    check(not left, f"delete leaves no cpuset cgroup ({left})")
    if not V2:
        pod_checks(c)


def v1_hierarchies():
    top = "/sys/fs/cgroup"
    return [os.path.join(top, h) for h in sorted(os.listdir(top))
            if h not in ("unified", "systemd") and not os.path.islink(os.path.join(top, h))]


def memory_cgroup(pid):
    for line in open(f"/proc/{pid}/cgroup"):
        _, ctrls, path = line.rstrip("\n").split(":", 2)
        if "memory" in ctrls.split(","):
            return path
    return None


def pod_create(c, b, cid, resources):
    cfg = json.load(open(os.path.join(b, "config.json")))
    cfg["linux"]["resources"] = resources
    json.dump(cfg, open(os.path.join(b, "config.json"), "w"))
    pidfile = os.path.join(c.tmp, f"{cid}.pid")
    rc, err = c.create(c.R, c.tmp, ["-b", b, "--pid-file", pidfile, cid])
    return (int(open(pidfile).read()) if rc == 0 else 0), err


def pod_checks(c):
    """v1, a pod cgroup in every hierarchy but cpuset (a slice systemd made): cpu.cpus below it
    is refused with one line naming it, never placed outside the pod; without cpus the container
    is in the pod with no cpuset cgroup, and update --cpuset-cpus says so. A pod whose cpuset
    cgroup has no cpus (nobody set them) is left so by a container that asks for none."""
    R, check, sh = c.R, c.check, c.sh
    pod = f"/lbboxtest-pod-{os.getpid()}"
    made = []
    try:
        for base in v1_hierarchies():
            if not base.endswith("/cpuset"):
                os.mkdir(base + pod)
                made.append(base + pod)
        b = c.bundle(c.tmp, "bpod", ["sleep", "300"])
        cfg = json.load(open(os.path.join(b, "config.json")))
        cfg["linux"]["cgroupsPath"] = pod + "/cpod"
        json.dump(cfg, open(os.path.join(b, "config.json"), "w"))
        pid, err = pod_create(c, b, "cpod", {"cpu": {"cpus": "0"}})
        inside = [d for d in made if any(e.is_dir() for e in os.scandir(d))]
        check(pid == 0 and err.count("\n") == 1 and pod in err and "cpuset" in err and not inside
              and sh(R + ["state", "cpod"]).returncode != 0,
              f"cpu.cpus below a pod with no cpuset cgroup: refused with one line ({err.strip()})")
        if pid:
            sh(R + ["delete", "--force", "cpod"])

        pid, err = pod_create(c, b, "cpod", {"memory": {"limit": 64 << 20}})
        mem = memory_cgroup(pid) if pid else None
        check(mem == pod + "/cpod", f"no cpus asked: the container is in the pod ({mem} {err.strip()})")
        r = sh(R + ["update", "--cpuset-cpus", "0", "cpod"])
        check(r.returncode == 1 and r.stderr.count("\n") == 1 and "no cpuset cgroup" in r.stderr,
              f"update --cpuset-cpus with no cpuset cgroup: one line ({r.stderr.strip()})")
        sh(R + ["delete", "--force", "cpod"])

        cpuset = "/sys/fs/cgroup/cpuset" + pod
        os.mkdir(cpuset)
        made.append(cpuset)
        files = [os.path.join(cpuset, f) for f in ("cpuset.cpus", "cpuset.mems")]
        before = [open(f).read().strip() for f in files]
        pid, err = pod_create(c, b, "cpod", {})
        mem = memory_cgroup(pid) if pid else None
        sh(R + ["delete", "--force", "cpod"])
        after = [open(f).read().strip() for f in files]
        check(before == ["", ""] and mem == pod + "/cpod" and after == before,
              f"a pod's empty cpuset left empty by create + delete ({before} {after} {mem} "
              f"{err.strip()})")
    finally:
        for d in reversed(made):
            try:
                os.rmdir(d)
            except OSError as e:
                check(False, f"rmdir {d}: {e}")


def preserve_fds_checks(c):
    """--preserve-fds N: fds 3 .. 3+N-1 of the runtime arrive in the container's command (run)
    and in an exec, at the same numbers; the next one does not, nor does anything of lbbox's."""
    R, check, sh = c.R, c.check, c.sh
    files = []
    for n in (3, 4, 5):
        p = os.path.join(c.tmp, f"fd{n}")
        open(p, "w").write(f"content-{n}\n")
        files.append(p)
    redirs = " ".join(f"{n}<{p}" for n, p in zip((3, 4, 5), files))
    probe = "cat <&3; cat <&4; cat <&5 2>/dev/null || echo no-5; ls /proc/$$/fd; true"
    b = c.bundle(c.tmp, "bfd", ["sh", "-c", probe])
    runc = " ".join(R)
    r = sh(["sh", "-c", f"exec {runc} run --preserve-fds 2 -b {b} cfd {redirs}"],
           stdin=subprocess.DEVNULL)
    out = r.stdout.split()
    check(r.returncode == 0 and out == ["content-3", "content-4", "no-5", "0", "1", "2", "3", "4"],
          f"run --preserve-fds 2: fds 3 and 4 inside, 5 and nothing else not ({out} {r.stderr.strip()})")

    # socket activation: LISTEN_FDS meant for the runtime (LISTEN_PID) come first, announced
    # with the command's own pid; --preserve-fds follow them
    act = "echo $LISTEN_FDS $LISTEN_PID $$; cat <&3; cat <&4; cat <&5 2>/dev/null || echo no-5"
    b = c.bundle(c.tmp, "bact", ["sh", "-c", act])
    r = sh(["sh", "-c", f"export LISTEN_FDS=1 LISTEN_PID=$$; "
                        f"exec {runc} run --preserve-fds 1 -b {b} cact {redirs}"],
           stdin=subprocess.DEVNULL)
    out = r.stdout.split()
    check(r.returncode == 0 and len(out) == 6 and out[0] == "1" and out[1] == out[2]
          and out[3:] == ["content-3", "content-4", "no-5"],
          f"LISTEN_FDS: fd 3 announced to the command (LISTEN_PID its pid), then fd 4 of "
          f"--preserve-fds ({out} {r.stderr.strip()})")
    r = sh(["sh", "-c", f"export LISTEN_FDS=4 LISTEN_PID=$$; exec {runc} run -b {b} cact {redirs}"])
    check(r.returncode == 1 and "fd 6 is not open" in r.stderr,
          f"LISTEN_FDS past the open descriptors refused ({r.stderr.strip()})")

    # create: pid 1 hands them to the command and keeps none itself
    b = c.bundle(c.tmp, "bfd2", ["sleep", "300"])
    pidfile = os.path.join(c.tmp, "bfd2.pid")
    r = sh(["sh", "-c", f"exec {runc} create --preserve-fds 2 -b {b} --pid-file {pidfile} cfd2"
                        f" {redirs} </dev/null >/dev/null 2>&1"])
    sh(R + ["start", "cfd2"])
    pid = int(open(pidfile).read())
    kids = []
    for _ in range(250):  # until the command has exec'd (before, it is pid 1's copy)
        kids = open(f"/proc/{pid}/task/{pid}/children").read().split()
        if kids and "busybox" in os.readlink(f"/proc/{kids[0]}/exe"):
            break
        time.sleep(0.02)

    def held(p):
        return sorted(files.index(os.readlink(f"/proc/{p}/fd/{fd}")) + 3
                      for fd in os.listdir(f"/proc/{p}/fd")
                      if os.readlink(f"/proc/{p}/fd/{fd}") in files)
    got = ([f for f in held(pid) if f in (3, 4)], held(int(kids[0])) if kids else None)
    check(r.returncode == 0 and got == ([], [3, 4]),
          f"create --preserve-fds 2: the command holds fds 3 and 4, pid 1 none ({got})")
    inner = probe.replace("$", "\\$")
    r = sh(["sh", "-c", f"exec {runc} exec --preserve-fds 1 cfd2 sh -c \"{inner}\" {redirs}"])
    out = r.stdout.split()
    check(r.returncode == 0 and out == ["content-3", "no-5", "0", "1", "2", "3"],
          f"exec --preserve-fds 1: fd 3 only ({out} {r.stderr.strip()})")
    r = sh(["sh", "-c", f"exec {runc} exec --preserve-fds 4 cfd2 true {redirs}"])
    check(r.returncode == 1 and r.stderr.count("\n") == 1 and "fd 6 is not open" in r.stderr,
          f"--preserve-fds past the open descriptors refused ({r.stderr.strip()})")
    r = sh(R + ["exec", "--preserve-fds", "many", "cfd2", "true"])
    check(r.returncode == 1 and "not a count" in r.stderr, "--preserve-fds of no count refused")
    r = sh(R + ["delete", "--force", "cfd2"])
    check(r.returncode == 0, f"delete --force of the running one ({r.stderr.strip()})")


def systemd_path_checks(c):
    """A systemd cgroupsPath, slice:prefix:name, is created where runc's systemd driver puts
    the unit: the nested slices, then prefix-name.scope (parents made here, as systemd would)."""
    R, check, sh = c.R, c.check, c.sh
    top = "lbboxtest.slice"
    sub = f"lbboxtest-{os.getpid()}.slice"
    if os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
        bases = ["/sys/fs/cgroup"]
    else:
        bases = [os.path.join("/sys/fs/cgroup", h) for h in os.listdir("/sys/fs/cgroup")
                 if h not in ("unified", "systemd") and not os.path.islink(
                     os.path.join("/sys/fs/cgroup", h))]
    made = []
    try:
        for base in bases:
            for d in (os.path.join(base, top), os.path.join(base, top, sub)):
                if not os.path.isdir(d):
                    os.mkdir(d)
                    made.append(d)
        b = c.bundle(c.tmp, "bsd", ["sleep", "300"])
        cfg = json.load(open(os.path.join(b, "config.json")))
        cfg["linux"]["cgroupsPath"] = f"{sub}:lbt:csd"
        json.dump(cfg, open(os.path.join(b, "config.json"), "w"))
        pidfile = os.path.join(c.tmp, "bsd.pid")
        rc, err = c.create(R, c.tmp, ["-b", b, "--pid-file", pidfile, "csd"])
        pid = int(open(pidfile).read()) if rc == 0 else 0
        want = f"/{top}/{sub}/lbt-csd.scope"
        cgs = c.cgroup_dirs(pid) if pid else []
        ours = [d for d in cgs if d.endswith(want)]
        check(rc == 0 and len(ours) >= 3,
              f"cgroupsPath {sub}:lbt:csd is the cgroup {want} ({err.strip()} {cgs[:2]})")
        sh(R + ["delete", "--force", "csd"])
        check(not any(os.path.exists(d) for d in ours), "delete removed the scope's cgroups")
        for bad, word in ((f"{sub}:lbt:../x", "no usable unit"), ("a--b.slice:p:x", "slice name"),
                          ("x.slice:p", "slice:prefix:name")):
            cfg["linux"]["cgroupsPath"] = bad
            json.dump(cfg, open(os.path.join(b, "config.json"), "w"))
            r = sh(R + ["create", "-b", b, "csd2"])
            check(r.returncode == 1 and r.stderr.count("\n") == 1 and word in r.stderr,
                  f"cgroupsPath {bad} refused with one line ({r.stderr.strip()})")
    finally:
        for d in reversed(made):
            try:
                os.rmdir(d)
            except OSError:
                pass
