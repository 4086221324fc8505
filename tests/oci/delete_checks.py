"""lbbox-runc delete --force on a running container whose records do not open or whose end is
held up (called by runtimes.py with its helpers): it kills everything of the container and
removes it, or fails with one line and keeps it. A state naming a cgroup that is not the
container's own (another service's) is refused: nothing killed, the records kept. Each case is a fault forced on purpose: the
container's state.json gone, the engine's state damaged two ways (pid 1 not the recorded
process; not JSON at all, so only the cgroup list written before pid 1 is left), pid 1 held in
the kernel by a process of its namespace that its parent outside does not reap, and a cgroup
that cannot be removed.
"""
import json
import os
import subprocess


def running(c, cid):
    """A started `sleep 300` container: (pid 1, its state directory, its cgroups)."""
    b = c.bundle(c.tmp, f"b{cid}", ["sleep", "300"])
    pidfile = os.path.join(c.tmp, f"{cid}.pid")
    rc, err = c.create(c.R, c.tmp, ["-b", b, "--pid-file", pidfile, cid])
    c.check(rc == 0, f"create {cid} ({err.strip()})")
    c.check(c.sh(c.R + ["start", cid]).returncode == 0, f"start {cid}")
    pid = int(open(pidfile).read())
    sb = json.load(open(os.path.join(c.root, cid, "state.json")))["sandbox"]
    return pid, os.path.join(c.root, ".sandboxes", sb), c.cgroup_dirs(pid)


def delete_reaping(c, cid, pid):
    """delete --force while we reap pid 1 as soon as it ends (as conmon or the shim would)."""
    p = subprocess.Popen(c.R + ["delete", "--force", cid], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    code = c.wait_exit(pid, 10)
    out, err = p.communicate(timeout=30)
    return p.returncode, err, code


def gone(c, cid, sdir, cgs):
    return (not os.path.exists(os.path.join(c.root, cid)) and not os.path.exists(sdir)
            and not any(os.path.exists(d) for d in cgs))


def rewrite(path, fn):
    text = open(path).read()
    with open(path, "w") as f:
        f.write(fn(text))


def foreign_cgroup_checks(c):
    """state.json, then the early list (state.json truncated), naming a cgroup lbbox did not make
    for the container, with a process in it: delete --force refuses in one line and kills no one
    (pid 1 included); the records restored, it deletes as usual."""
    check, sh = c.check, c.sh
    pid, sdir, cgs = running(c, "dforeign")
    foreign = os.path.join(os.path.dirname(cgs[0]), f"lbt-foreign-{os.getpid()}")
    os.makedirs(foreign)
    sleeper = subprocess.Popen(["sleep", "300"])
    try:
        with open(os.path.join(foreign, "cgroup.procs"), "w") as f:
            f.write(str(sleeper.pid))
        state, early = os.path.join(sdir, "state.json"), os.path.join(sdir, "cgroups")
        saved = {p: open(p).read() for p in (state, early)}
        cases = [("state.json", state, lambda t: t.replace(cgs[0] + '"', foreign + '"')),
                 ("the early list", early, lambda t: t.replace(cgs[0] + "\n", foreign + "\n"))]
        for what, path, fn in cases:
            rewrite(path, fn)
            if path == early:
                rewrite(state, lambda t: t[: len(t) // 2])
            r = sh(c.R + ["delete", "--force", "dforeign"])
            refused = (r.returncode == 1 and r.stderr.count("\n") == 1
                       and "not a cgroup of its own" in r.stderr and sleeper.poll() is None
                       and c.wait_exit(pid, 0.2) is None and os.path.exists(sdir))
            check(refused, f"delete --force with {what} naming a foreign cgroup refuses, kills "
                  f"no one ({r.returncode} {r.stderr.strip()} {sleeper.poll()})")
            if not refused:
                return
            for p, text in saved.items():
                rewrite(p, lambda _, text=text: text)
        rc, err, code = delete_reaping(c, "dforeign", pid)
        check(rc == 0 and code == -9 and gone(c, "dforeign", sdir, cgs) and sleeper.poll() is None,
              f"then delete --force removes it ({rc} {err.strip()} {code})")
    finally:
        sleeper.kill()
        sleeper.wait()
        if os.path.isdir(foreign):
            os.rmdir(foreign)
        sh(c.R + ["delete", "--force", "dforeign"])


def delete_force_checks(c):
    R, check, sh = c.R, c.check, c.sh
    foreign_cgroup_checks(c)
    # the container's own record gone: its sandbox is found by its tag (the id) and killed
    pid, sdir, cgs = running(c, "dnostate")
    os.unlink(os.path.join(c.root, "dnostate", "state.json"))
    rc, err, code = delete_reaping(c, "dnostate", pid)
    check(rc == 0 and code == -9 and gone(c, "dnostate", sdir, cgs),
          f"delete --force without the container's state.json kills and removes it "
          f"({rc} {err.strip()} pid 1: {code})")

    # the engine's state does not open (pid 1 is not the recorded process): killed by cgroup
    pid, sdir, cgs = running(c, "dstart")
    st = json.load(open(os.path.join(sdir, "state.json")))
    st["pid_start"] += 1
    rewrite(os.path.join(sdir, "state.json"), lambda _: json.dumps(st))
    rc, err, code = delete_reaping(c, "dstart", pid)
    check(rc == 0 and code == -9 and gone(c, "dstart", sdir, cgs),
          f"delete --force with a state whose pid 1 does not match ({rc} {err.strip()} {code})")

    # nor parses: the cgroups noted before pid 1 started are what is left to kill by
    pid, sdir, cgs = running(c, "djunk")
    rewrite(os.path.join(sdir, "state.json"), lambda t: t[: len(t) // 2])
    rc, err, code = delete_reaping(c, "djunk", pid)
    check(rc == 0 and code == -9 and gone(c, "djunk", sdir, cgs),
          f"delete --force with a truncated engine state ({rc} {err.strip()} {code})")

    # an exec -d reparented to us and not reaped while delete runs: pid 1 closed its files and
    # left its cgroups, then waits in the kernel for that zombie; delete is done regardless
    pid, sdir, cgs = running(c, "dexec")
    xpidfile = os.path.join(c.tmp, "dexec.xpid")
    # (its stdio not our pipes, which it would hold open)
    r = subprocess.run(R + ["exec", "-d", "--pid-file", xpidfile, "dexec", "sleep", "300"],
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=60)
    xpid = int(open(xpidfile).read()) if r.returncode == 0 else 0
    r = sh(R + ["delete", "--force", "dexec"])
    check(r.returncode == 0 and xpid > 0 and gone(c, "dexec", sdir, cgs),
          f"delete --force with an unreaped exec -d in the container ({r.stderr.strip()})")
    codes = (c.wait_exit(xpid, 10) if xpid else None, c.wait_exit(pid, 10))
    check(codes == (-9, -9), f"the exec and pid 1 were killed ({codes})")

    # a cgroup that will not go (a mount on a directory in it): one line, nonzero, the
    # container's records kept; once it can go, delete --force finishes the job
    pid, sdir, cgs = running(c, "dheld")
    held, empty = os.path.join(cgs[0], "held"), os.path.join(c.tmp, "empty")
    os.makedirs(held)
    os.makedirs(empty)
    mounted = sh(["mount", "--bind", empty, held]).returncode == 0
    try:
        rc, err, code = delete_reaping(c, "dheld", pid)
    finally:
        if mounted:
            sh(["umount", held])
    check(mounted and rc == 1 and err.count("\n") == 1 and "could not be removed" in err
          and code == -9 and os.path.exists(os.path.join(c.root, "dheld"))
          and os.path.exists(sdir),
          f"delete --force that cannot remove a cgroup fails with one line ({rc} {err.strip()})")
    r = sh(R + ["delete", "--force", "dheld"])
    check(r.returncode == 0 and gone(c, "dheld", sdir, cgs),
          f"then it can be deleted ({r.stderr.strip()})")
