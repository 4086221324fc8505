"""lbbox-runc's process fields and hooks in a user namespace, end to end (called by runtimes.py
with its helpers).

process.user.umask (runc's 0022 when absent, whatever lbbox-runc's own umask is; an exec gets
the container's, or its process.json's), process.oomScoreAdj (raised here; lowering needs
CAP_SYS_RESOURCE, and without it create fails with one line instead of skipping it; an exec gets
it too, not its caller's, and fails with one line below the caller's floor), security
labels lbbox cannot apply (refused with one line, in config.json and as exec flags; accepted
empty, AppArmor's "unconfined" too). Then all six hook kinds with a
user namespace: the runtime-spec's order, host hooks as the host's root, in-container hooks as
the namespace's root (the host's 100000).
"""
import json
import os
import subprocess
import tempfile

CAP_SYS_RESOURCE = 24


def has_sys_resource():
    for line in open("/proc/self/status"):
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) >> CAP_SYS_RESOURCE & 1)
    return False


def edit(b, fn):
    path = os.path.join(b, "config.json")
    cfg = json.load(open(path))
    fn(cfg)
    json.dump(cfg, open(path, "w"))


def run_umask(c, args, mask, oom=None):
    """c.R + args with lbbox-runc's own umask set to mask (and its oom_score_adj to oom)."""
    def setup():
        os.umask(mask)
        if oom is not None:
            with open("/proc/self/oom_score_adj", "w") as f:
                f.write(str(oom))
    return subprocess.run(c.R + args, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=60, preexec_fn=setup)


def edit_exec_state(root, cid, fn):
    """fn(the "exec" record of container cid's sandbox state.json), written back."""
    sbid = json.load(open(os.path.join(root, cid, "state.json")))["sandbox"]
    path = os.path.join(root, ".sandboxes", sbid, "state.json")
    st = json.load(open(path))
    fn(st["exec"])
    json.dump(st, open(path, "w"))


def exec_cgroups(c, cid):
    """The exec child cgroups left below container cid's."""
    pid = json.loads(c.sh(c.R + ["state", cid]).stdout)["pid"]
    return [n for d in c.cgroup_dirs(pid) for n in os.listdir(d) if n.startswith("oci-exec-")]


def proc_field_checks(c):
    R, check, sh = c.R, c.check, c.sh
    probe = ["sh", "-c", "umask; cat /proc/self/oom_score_adj"]
    b = c.bundle(c.tmp, "bproc", probe)

    def given(cfg):
        cfg["process"]["user"]["umask"] = 0o027
        cfg["process"]["oomScoreAdj"] = 500
        cfg["process"]["apparmorProfile"] = ""
        cfg["process"]["selinuxLabel"] = ""
        cfg["linux"]["mountLabel"] = ""
    edit(b, given)
    r = run_umask(c, ["run", "-b", b, "pf1"], 0o077)
    check(r.returncode == 0 and r.stdout.split() == ["0027", "500"],
          f"process.user.umask and oomScoreAdj 500 apply to the command; empty security labels "
          f"accepted ({r.stdout.split()} {r.stderr.strip()})")

    def absent(cfg):
        cfg["process"]["user"].pop("umask", None)
        cfg["process"].pop("oomScoreAdj", None)
    edit(b, absent)
    mine = open("/proc/self/oom_score_adj").read().strip()
    r = run_umask(c, ["run", "-b", b, "pf2"], 0o077)
    check(r.returncode == 0 and r.stdout.split() == ["0022", mine],
          f"no umask: runc's 0022, not lbbox-runc's 0077; no oomScoreAdj: the caller's "
          f"({r.stdout.split()} {r.stderr.strip()})")

    # an exec gets the container's umask and oomScoreAdj (runc's), not its caller's; a
    # process.json umask is its own
    bs = c.bundle(c.tmp, "bproc-exec", ["sleep", "300"])
    edit(bs, lambda cfg: (cfg["process"]["user"].update(umask=0o077),
                          cfg["process"].update(oomScoreAdj=500)))
    rc, err = c.create(R, c.tmp, ["-b", bs, "pf3"])
    check(rc == 0 and sh(R + ["start", "pf3"]).returncode == 0, f"create + start ({err.strip()})")
    pj = os.path.join(c.tmp, "pf3-process.json")
    json.dump({"args": ["sh", "-c", "umask"], "cwd": "/", "env": ["PATH=/bin:/usr/bin"],
               "user": {"uid": 0, "gid": 0, "umask": 0o007}}, open(pj, "w"))
    r = run_umask(c, ["exec", "--process", pj, "pf3"], 0o022)
    check(r.returncode == 0 and r.stdout.split() == ["0007"],
          f"exec --process with user.umask 0007 over the container's 0077 "
          f"({r.stdout.split()} {r.stderr.strip()})")
    r = run_umask(c, ["exec", "pf3"] + probe, 0o000, oom=200)
    check(r.returncode == 0 and r.stdout.split() == ["0077", "500"],
          f"exec from a caller with umask 0000 and oom_score_adj 200: the container's umask "
          f"0077 and oomScoreAdj 500 ({r.stdout.split()} {r.stderr.strip()})")
    # a state recorded before lbbox kept them (or a container without them): the caller's
    edit_exec_state(c.root, "pf3", lambda ex: (ex.pop("umask"), ex.pop("oom_score_adj")))
    r = run_umask(c, ["exec", "pf3"] + probe, 0o002, oom=200)
    check(r.returncode == 0 and r.stdout.split() == ["0002", "200"],
          f"exec into a sandbox whose state has no umask or oom_score_adj keeps the caller's "
          f"({r.stdout.split()} {r.stderr.strip()})")
    # a container's value below the caller's floor (set by a CAP_SYS_RESOURCE holder, as a
    # shim's -998): the exec fails, as runc's, rather than run with another score
    edit_exec_state(c.root, "pf3", lambda ex: ex.update(oom_score_adj=-1000))
    r = sh(R + ["exec", "pf3", "true"])
    if has_sys_resource():
        check(r.returncode == 0, f"exec with oomScoreAdj -1000 and CAP_SYS_RESOURCE "
                                 f"({r.stderr.strip()})")
    else:
        check(r.returncode != 0 and r.stderr.count("\n") == 1
              and "oomScoreAdj -1000" in r.stderr and "CAP_SYS_RESOURCE" in r.stderr
              and exec_cgroups(c, "pf3") == [],
              f"exec below the caller's oom_score_adj floor without CAP_SYS_RESOURCE: fails with "
              f"one line, no exec cgroup left ({r.stderr.strip()})")
    for bad in ({"umask": 0o1000}, {"umask": "077"}, {"oom_score_adj": 1001}):
        edit_exec_state(c.root, "pf3", lambda ex: ex.update(bad))
        r = sh(R + ["exec", "pf3", "true"])
        check(r.returncode != 0 and r.stderr.count("\n") == 1 and "bad exec state" in r.stderr,
              f"a damaged exec state {bad}: refused with one line ({r.stderr.strip()})")
        edit_exec_state(c.root, "pf3", lambda ex: [ex.pop(k) for k in bad])
    for flag, value, what in (("--apparmor", "lbbox-test", "AppArmor"),
                              ("--process-label", "system_u:system_r:container_t:s0", "SELinux")):
        r = sh(R + ["exec", flag, value, "pf3", "true"])
        check(r.returncode == 1 and r.stderr.count("\n") == 1 and what in r.stderr,
              f"exec {flag} {value}: refused with one line ({r.stderr.strip()})")
    r = sh(R + ["exec", "--apparmor", "unconfined", "pf3", "true"])
    check(r.returncode == 0, f"exec --apparmor unconfined: accepted ({r.stderr.strip()})")
    sh(R + ["delete", "--force", "pf3"])

    # lowering oom_score_adj: CAP_SYS_RESOURCE, which these hosts lack
    edit(b, lambda cfg: cfg["process"].update(oomScoreAdj=-500))
    rc, err = c.create(R, c.tmp, ["-b", b, "pf4"])
    if has_sys_resource():
        check(rc == 0, f"oomScoreAdj -500 with CAP_SYS_RESOURCE ({err.strip()})")
        sh(R + ["delete", "--force", "pf4"])
    else:
        check(rc == 1 and err.count("\n") == 1 and "CAP_SYS_RESOURCE" in err
              and sh(R + ["state", "pf4"]).returncode == 1,
              f"oomScoreAdj -500 without CAP_SYS_RESOURCE: create fails with one line, no "
              f"container ({err.strip()})")
    # hostile or unappliable values: one line each
    cases = [(lambda cfg: cfg["process"].update(oomScoreAdj=1001), "oomScoreAdj 1001"),
             (lambda cfg: cfg["process"]["user"].update(umask=0o1000), "umask 512"),
             (lambda cfg: cfg["process"].update(apparmorProfile="lbbox-test"),
              "apparmorProfile is set"),
             (lambda cfg: cfg["process"].update(selinuxLabel="system_u:system_r:container_t:s0"),
              "selinuxLabel is set"),
             (lambda cfg: cfg["linux"].update(mountLabel="system_u:object_r:container_file_t:s0"),
              "mountLabel is set")]
    for fn, what in cases:
        bb = c.bundle(c.tmp, "bproc-" + what.split()[0], ["true"])
        edit(bb, fn)
        rc, err = c.create(R, c.tmp, ["-b", bb, "pf5"])
        check(rc == 1 and err.count("\n") == 1 and what in err,
              f"{what}: refused with one line ({err.strip()})")
    left = [n for n in os.listdir(c.root) if not n.startswith(".")]
    check(left == [] and os.listdir(os.path.join(c.root, ".sandboxes")) == [],
          f"nothing left after the process field cases ({left})")


SYSCTLS = {"net.ipv4.ping_group_range": "0 0", "net.ipv4.ip_unprivileged_port_start":
           "80", "kernel.shmmni": "1234", "fs.mqueue.msg_max": "20"}


def sysctl_checks(c):
    """linux.sysctl: net.* in the container's network namespace, the IPC ones in its IPC
    namespace, also with a user namespace of its own; the host's unchanged. Refused with one
    line: a net.* sysctl with the host's network namespace (absent, or joined by path), an IPC
    one with the host's IPC namespace joined, one outside any namespace, a name that would leave
    /proc/sys, a control character in the value."""
    R, check = c.R, c.check
    files = ["/proc/sys/" + k.replace(".", "/") for k in SYSCTLS]
    host = [open(f).read().split() for f in files]
    probe = "; ".join(f"echo $(cat {f})" for f in files)
    for userns in (False, True):
        if userns:
            b = c.userns_bundle(c.tmp, "bsysctl-u", ["sh", "-c", probe])
        else:
            b = c.bundle(c.tmp, "bsysctl", ["sh", "-c", probe])
        edit(b, lambda cfg: cfg["linux"].update(sysctl=SYSCTLS))
        r = c.sh(R + ["run", "-b", b, "sy1"], stdin=subprocess.DEVNULL)
        check(r.returncode == 0 and r.stdout.splitlines() == list(SYSCTLS.values()),
              f"sysctls written in the container's namespaces{' (user namespace)' * userns} "
              f"({r.stdout.splitlines()} {r.stderr.strip()})")
    check([open(f).read().split() for f in files] == host, "the host's sysctls unchanged")
    hostnet = lambda cfg: cfg["linux"].update(namespaces=[  # noqa: E731
        n for n in cfg["linux"]["namespaces"] if n["type"] != "network"])
    joinhost = lambda kind, path: lambda cfg: cfg["linux"].update(namespaces=[  # noqa: E731
        n for n in cfg["linux"]["namespaces"] if n["type"] != kind] + [
        {"type": kind, "path": path}])
    cases = [({"net.ipv4.ip_forward": "1"}, hostnet, "not the host's"),
             ({"net.ipv4.ip_forward": "1"}, joinhost("network", "/proc/self/ns/net"),
              "not the host's"),
             ({"kernel.shmmni": "1"}, joinhost("ipc", "/proc/self/ns/ipc"), "not the host's"),
             ({"kernel.domainname": "x"}, None, "is not supported"),
             ({"vm.overcommit_memory": "1"}, None, "is not supported"),
             ({"net.ipv4/../../kernel/core_pattern": "|/x"}, None, "not a sysctl name"),
             ({"net.ipv4.ip_forward": "1\n0"}, None, "control character")]
    for sysctl, more, what in cases:
        b = c.bundle(c.tmp, f"bsysctl-bad-{len(os.listdir(c.tmp))}", ["true"])
        edit(b, lambda cfg: (cfg["linux"].update(sysctl=sysctl), more and more(cfg)))
        rc, err = c.create(R, c.tmp, ["-b", b, "sy2"])
        check(rc == 1 and err.count("\n") == 1 and what in err,
              f"sysctl {list(sysctl)[0]!r}: refused with one line ({err.strip()})")
    check([open(f).read().split() for f in files] == host and
          open("/proc/sys/net/ipv4/ip_forward").read() != "" and
          [n for n in os.listdir(c.root) if not n.startswith(".")] == [],
          "nothing left, the host's sysctls unchanged after the refusals")


def rlimit_raise_checks(c):
    """process.rlimits with a hard limit above lbbox-runc's own, which the command could not
    raise without the host's CAP_SYS_RESOURCE (these hosts lack it; a user namespace of the
    container's own never has it): refused by create with one line, nothing left, instead of an
    exit status 125 without a word once started (podman's default nofile of 1048576 for a
    pod's infra container did that here)."""
    import resource
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard == resource.RLIM_INFINITY:
        return
    want = [{"type": "RLIMIT_NOFILE", "hard": hard + 1, "soft": hard + 1}]
    for userns in (False, True):
        if userns:
            b = c.userns_bundle(c.tmp, "brl-u", ["true"])
        else:
            b = c.bundle(c.tmp, "brl", ["true"])
        edit(b, lambda cfg: cfg["process"].update(rlimits=want))
        rc, err = c.create(c.R, c.tmp, ["-b", b, "rl1"])
        if has_sys_resource() and not userns:
            c.check(rc == 0, f"nofile above lbbox-runc's hard limit, with CAP_SYS_RESOURCE "
                    f"({err.strip()})")
            c.sh(c.R + ["delete", "--force", "rl1"])
            continue
        c.check(rc == 1 and err.count("\n") == 1 and "needs CAP_SYS_RESOURCE" in err,
                f"nofile above lbbox-runc's hard limit{' (user namespace)' * userns}: refused "
                f"by create with one line ({err.strip()})")
    left = [n for n in os.listdir(c.root) if not n.startswith(".")]
    c.check(left == [], f"nothing left after the rlimit cases ({left})")


def sigchld_ignored_checks(c):
    """A caller that leaves SIGCHLD ignored (inherited across exec): lbbox-runc run and lbbox run
    still see their command end and give its status, instead of waiting for ever."""
    import signal
    lbbox = os.path.join(os.path.dirname(c.R[0]), "lbbox")
    b = c.bundle(c.tmp, "bsigchld", ["sh", "-c", "exit 7"])
    ign = lambda: signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # noqa: E731
    runs = [("lbbox-runc run", c.R + ["run", "-b", b, "sigchld"]),
            ("lbbox run", [lbbox, "--root", os.path.join(c.tmp, "sigchld-root"), "--runroot",
                           os.path.join(c.tmp, "sigchld-run"), "run", "--rootfs",
                           json.load(open(os.path.join(b, "config.json")))["root"]["path"],
                           "--", "sh", "-c", "exit 7"])]
    for what, argv in runs:
        try:
            r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                               timeout=30, preexec_fn=ign)
            rc, err = r.returncode, r.stderr.strip()
        except subprocess.TimeoutExpired:
            rc, err = None, "hung"
        c.check(rc == 7, f"{what} with SIGCHLD ignored by its caller: the command's status "
                f"({rc} {err})")
    c.sh(c.R + ["delete", "--force", "sigchld"])


HOOK = ('#!/bin/sh\nstate=$(cat)\n'
        'map=$(head -n 1 /proc/self/uid_map | tr -s " " | sed "s/^ //")\n'
        'printf "%s %s %s %s\\n" "$1" "$state" "$(id -u)" "$map" >> "$2"\n')


def hooks_userns_checks(c):
    """Every hook kind with linux.uidMappings: the host's hooks (prestart, createRuntime,
    poststart, poststop) as the host's root in its user namespace; createContainer and
    startContainer in the container's, as its root (the host's 100000)."""
    R, check = c.R, c.check
    # the in-namespace hooks run as the host's 100000: their script and log must be reachable
    # by it, which the test's 0700 directory is not
    pub = tempfile.mkdtemp(prefix="lbbox-hooks-userns-")
    try:
        os.chmod(pub, 0o755)
        hd = os.path.join(pub, "hooks")
        os.makedirs(hd)
        os.chmod(hd, 0o777)
        script, log = os.path.join(hd, "h.sh"), os.path.join(hd, "log")
        open(script, "w").write(HOOK)
        os.chmod(script, 0o755)
        open(log, "w").close()
        os.chmod(log, 0o666)
        b = c.userns_bundle(c.tmp, "bhk-userns",
                            ["sh", "-c", "id -u > /hooks/cmd; head -n 1 /proc/self/uid_map "
                                         ">> /hooks/cmd"])

        def hooks(cfg):
            h = {k: [{"path": script, "args": ["h.sh", k, log]}]
                 for k in ("prestart", "createRuntime", "createContainer", "poststart",
                           "poststop")}
            h["startContainer"] = [{"path": "/hooks/h.sh",
                                    "args": ["h.sh", "startContainer", "/hooks/log"]}]
            cfg["hooks"] = h
            cfg["mounts"].append({"destination": "/hooks", "type": "bind", "source": hd,
                                  "options": ["rbind"]})
        edit(b, hooks)
        r = subprocess.run(R + ["run", "-b", b, "hku"], stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=60)
        got = [(k, s.get("status"), x.split(" ", 1)) for k, s, x in c.hook_log(log)]
        host, inner = ["0", "0 0 4294967295"], ["0", "0 100000 65536"]
        want = [("prestart", "creating", host), ("createRuntime", "creating", host),
                ("createContainer", "creating", inner), ("startContainer", "created", inner),
                ("poststart", "running", host), ("poststop", "stopped", host)]
        check(r.returncode == 0 and got == want,
              f"hooks with a user namespace: the runtime-spec's order, host hooks as the "
              f"host's root, createContainer and startContainer as the namespace's root "
              f"({got} {r.stderr.strip()})")
        cmd = os.path.join(hd, "cmd")
        seen = open(cmd).read().split() if os.path.exists(cmd) else []
        check(seen == ["0", "0", "100000", "65536"] and os.stat(cmd).st_uid == 100000,
              f"... and the command ran as the namespace's root, the host's 100000 ({seen})")
    finally:
        subprocess.run(c.R + ["delete", "--force", "hku"], capture_output=True)
        subprocess.run(["rm", "-rf", pub])
