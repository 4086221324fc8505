#!/usr/bin/env python3
"""lbbox-runc as an OCI runtime, end to end.

Part 1 drives lbbox-runc itself on a bundle (the runtime-spec life cycle: created -> running ->
stopped, state JSON, kill, delete, exec, ps, list, refusals). Part 2 runs podman (Debian 12's
4.3, cgroupfs) with --runtime = lbbox-runc: run --rm, exit codes, -e, -v, --memory,
--pids-limit, --cpus (read back inside), --network none, a network of the test's own (CNI
bridge, joined by netns path), run -d + exec + stop / kill / rm -f, ps. Everything lives under a
temporary directory and the host is checked clean afterwards: no container, process, mount,
cgroup, netns or bridge of the test left.

Part 3 runs containerd (Debian 12's 1.6, its own root, state and socket under the test
directory) with `ctr run --runtime io.containerd.runc.v2 --runc-binary lbbox-runc`: run --rm with
its exit code, run -d + task exec / ps / kill / rm.

Usage: runtimes.py BUILD_DIR ROOTFS  (exit 77 = skipped: not root)
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ocihost import (ULIMITS, containerd_host, ctr_remove, delete_all, host_clean,  # noqa: E402
                     podman_cmd, podman_host, podman_import, sh, subreaper)
from update_checks import (preserve_fds_checks, systemd_path_checks,  # noqa: E402
                           update_checks)

# LBBOX_TEST_ROOTFS first, as the other suites: the ASan build has no image of its own
BUILD = os.path.abspath(sys.argv[1])
ROOTFS = os.path.abspath(os.environ.get("LBBOX_TEST_ROOTFS") or sys.argv[2])
RUNC = os.path.join(BUILD, "lbbox-runc")
FAILS = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        FAILS.append(what)


def wait_exit(pid, timeout=20):
    end = time.time() + timeout
    while time.time() < end:
        try:
            got, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return None
        if got == pid:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    return None


def cgroup_dirs(pid):
    """The host directories of pid's cgroups (v1 controllers and the unified one)."""
    out = []
    with open(f"/proc/{pid}/cgroup") as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            name = ctrls.split(",")[0].replace("name=", "") if ctrls else "unified"
            base = f"/sys/fs/cgroup/{name}"
            if os.path.isdir(base) and path != "/":
                out.append(base + path)
    return out


def create(R, tmp, args):
    """create's stdio becomes the container's (as conmon's pipes): files, not our pipes, which
    would stay open for as long as the container runs."""
    err = os.path.join(tmp, "create.err")
    with open(err, "w") as e:
        r = subprocess.run(R + ["create"] + args, stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=e, timeout=60)
    return r.returncode, open(err).read()


def bundle(tmp, name, args, **extra):
    b = os.path.join(tmp, name)
    os.makedirs(b)
    r = sh([RUNC, "spec", "--bundle", b])
    assert r.returncode == 0, r.stderr
    with open(os.path.join(b, "config.json")) as f:
        cfg = json.load(f)
    cfg["root"] = {"path": ROOTFS, "readonly": True}
    cfg["process"]["args"] = args
    cfg.update(extra)
    with open(os.path.join(b, "config.json"), "w") as f:
        json.dump(cfg, f)
    return b


def part_runtime(tmp):
    root = os.path.join(tmp, "runc-root")
    R = [RUNC, "--root", root]

    def state(cid):
        r = sh(R + ["state", cid])
        return json.loads(r.stdout) if r.returncode == 0 else None

    cg_name = f"lbbox-oci-test-{os.getpid()}"
    b = bundle(tmp, "b1", ["sh", "-c", "echo out; exit 7"])
    cfg = json.load(open(os.path.join(b, "config.json")))
    cfg["linux"]["cgroupsPath"] = "/" + cg_name
    json.dump(cfg, open(os.path.join(b, "config.json"), "w"))
    pidfile = os.path.join(tmp, "b1.pid")
    rc, err = create(R, tmp, ["--bundle", b, "--pid-file", pidfile, "c1"])
    check(rc == 0, f"create ({err.strip()})")
    st = state("c1")
    pid = int(open(pidfile).read())
    check(st and st["status"] == "created" and st["pid"] == pid and st["id"] == "c1"
          and st["bundle"] == b and st["ociVersion"].startswith("1."), f"state created {st}")
    exe = os.readlink(f"/proc/{pid}/exe")
    check(exe.startswith("/memfd:lbbox-sealed"),
          f"pid 1 runs from a sealed copy, not the host binary an image could reach ({exe})")
    cgs = cgroup_dirs(pid)
    check(len(cgs) > 0 and all(os.path.isdir(c) and c.endswith("/" + cg_name) for c in cgs),
          f"the container's cgroups are at its cgroupsPath ({cgs[:1]})")
    r = sh(R + ["create", "--bundle", b, "c1"])
    check(r.returncode == 1 and "already exists" in r.stderr and r.stderr.count("\n") == 1,
          "create of an existing id: one line")
    r = sh(R + ["start", "c1"])
    check(r.returncode == 0, "start")
    code = wait_exit(pid)
    check(code == 7, f"pid 1 exits with the command's status (7, got {code})")
    st = state("c1")
    check(st and st["status"] == "stopped" and "pid" not in st, f"state stopped {st}")
    r = sh(R + ["start", "c1"])
    check(r.returncode == 1 and "not created" in r.stderr, "start of a stopped container")
    r = sh(R + ["delete", "c1"])
    check(r.returncode == 0, f"delete ({r.stderr.strip()})")
    check(not any(os.path.exists(c) for c in cgs), "delete removed the cgroups")
    r = sh(R + ["state", "c1"])
    check(r.returncode == 1 and "does not exist" in r.stderr, "state after delete")

    # running: kill, exec, ps, list, delete without and with --force
    b2 = bundle(tmp, "b2", ["sleep", "300"])
    create(R, tmp, ["-b", b2, "--pid-file", pidfile, "c2"])
    pid = int(open(pidfile).read())
    sh(R + ["start", "c2"])
    st = state("c2")
    check(st and st["status"] == "running", "state running")
    r = sh(R + ["exec", "--env", "X=from-exec", "c2", "sh", "-c", "echo $X; exit 5"])
    check(r.returncode == 5 and r.stdout.strip() == "from-exec", f"exec output and status ({r})")
    proc = os.path.join(tmp, "process.json")
    with open(proc, "w") as f:
        json.dump({"args": ["sh", "-c", "pwd"], "cwd": "/tmp", "env": ["PATH=/bin"],
                   "user": {"uid": 0, "gid": 0}}, f)
    r = sh(R + ["exec", "--process", proc, "c2"])
    check(r.returncode == 0 and r.stdout.strip() == "/tmp", "exec --process")
    r = sh(R + ["exec", "--user", "1000:1001", "c2", "sh", "-c",
                "id -u; id -g; grep CapEff /proc/self/status"])
    check(r.stdout.split() == ["1000", "1001", "CapEff:", "0000000000000000"],
          f"exec --user: that identity, no capabilities ({r.stdout.split()})")
    r = sh(R + ["ps", "--format", "json", "c2"])
    pids = json.loads(r.stdout) if r.returncode == 0 else []
    check(pid in pids and len(pids) >= 2, f"ps --format json {pids}")
    r = sh(R + ["list", "--format", "json"])
    check(r.returncode == 0 and [c["id"] for c in json.loads(r.stdout)] == ["c2"], "list")
    r = sh(R + ["delete", "c2"])
    check(r.returncode == 1 and "running" in r.stderr, "delete of a running container refused")
    r = sh(R + ["pause", "c2"])
    st = state("c2")
    frozen = [open(os.path.join(c, "freezer.state")).read().strip() for c in cgroup_dirs(pid)
              if os.path.exists(os.path.join(c, "freezer.state"))]
    check(r.returncode == 0 and st["status"] == "paused" and frozen == ["FROZEN"],
          f"pause: the freezer holds it ({st['status']} {frozen})")
    r = sh(R + ["exec", "c2", "true"])
    check(r.returncode != 0 and "paused" in r.stderr, "exec into a paused container refused")
    r = sh(R + ["resume", "c2"])
    check(r.returncode == 0 and state("c2")["status"] == "running", "resume")
    r = sh(R + ["kill", "c2", "KILL"])
    check(r.returncode == 0 and wait_exit(pid) == -9, "kill KILL")
    r = sh(R + ["kill", "c2"])
    check(r.returncode == 1 and "not running" in r.stderr, "kill of a stopped container")
    r = sh(R + ["delete", "--force", "c2"])
    check(r.returncode == 0, "delete --force")
    r = sh(R + ["delete", "--force", "c2"])
    check(r.returncode == 0, "delete --force of a container already gone")
    r = sh(R + ["delete", "c2"])
    check(r.returncode == 1 and "does not exist" in r.stderr, "delete of an unknown container")

    # what config.json says, seen from inside: user, hostname, env, cwd, rlimits, capabilities,
    # a read-only root, a tmpfs and a read-only bind; hooks run with the state on stdin
    data = os.path.join(tmp, "data")
    os.makedirs(data)
    open(os.path.join(data, "f"), "w").write("bound\n")
    hook_out = os.path.join(tmp, "hooks.log")
    hook = os.path.join(tmp, "hook.sh")
    with open(hook, "w") as f:
        f.write(f"#!/bin/sh\n{{ echo \"$1\"; cat; echo; }} >> {hook_out}\n")
    os.chmod(hook, 0o755)
    probe = ("id -u; id -g; hostname; echo $GREETING; pwd; ulimit -n; "
             "grep CapEff /proc/self/status; touch /x 2>/dev/null || echo ro-root; "
             "echo t > /scratch/t && cat /scratch/t; cat /data/f; "
             "touch /data/g 2>/dev/null || echo ro-bind")
    bc = bundle(tmp, "bc", ["sh", "-c", probe])
    cfg = json.load(open(os.path.join(bc, "config.json")))
    cfg["process"].update({"user": {"uid": 1000, "gid": 1001}, "cwd": "/tmp",
                           "env": ["PATH=/bin:/usr/bin", "GREETING=hello"],
                           "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 512, "soft": 256}]})
    cfg["hostname"] = "oci-box"
    cfg["mounts"] += [{"destination": "/scratch", "type": "tmpfs", "source": "tmpfs",
                       "options": ["size=1m", "mode=1777"]},
                      {"destination": "/data", "type": "bind", "source": data,
                       "options": ["rbind", "ro"]}]
    cfg["hooks"] = {k: [{"path": hook, "args": ["hook.sh", k]}]
                    for k in ("createRuntime", "prestart", "poststart", "poststop")}
    json.dump(cfg, open(os.path.join(bc, "config.json"), "w"))
    r = sh(R + ["run", "-b", bc, "cc"], stdin=subprocess.DEVNULL)
    want = ["1000", "1001", "oci-box", "hello", "/tmp", "256", "CapEff:\t0000000000000000",
            "ro-root", "t", "bound", "ro-bind"]
    check(r.returncode == 0 and r.stdout.splitlines() == want,
          f"config.json seen from inside ({r.stdout.splitlines()} {r.stderr.strip()})")
    logged = open(hook_out).read().split("\n") if os.path.exists(hook_out) else []
    kinds = logged[0::2]
    states = [json.loads(x) for x in logged[1::2] if x]
    check(kinds[:4] == ["createRuntime", "prestart", "poststart", "poststop"]
          and [x["status"] for x in states] == ["created", "created", "running", "stopped"]
          and all(x["id"] == "cc" for x in states), f"hooks, with the state on stdin ({kinds})")

    # a hook that reads nothing and does not exit, given a state larger than a pipe holds: its
    # timeout still ends it, and create fails with one line, leaving nothing
    bt = bundle(tmp, "bhook", ["true"], annotations={"big": "x" * 200000})
    cfg = json.load(open(os.path.join(bt, "config.json")))
    cfg["hooks"] = {"prestart": [{"path": "/bin/sleep", "args": ["sleep", "30"], "timeout": 1}]}
    json.dump(cfg, open(os.path.join(bt, "config.json"), "w"))
    t0 = time.time()
    rc, err = create(R, tmp, ["-b", bt, "ct"])
    took = time.time() - t0
    check(rc != 0 and "timed out" in err and err.count("\n") == 1 and took < 15,
          f"a hook's timeout holds while its state is written ({rc} {took:.1f}s {err.strip()})")
    check(state("ct") is None, "the timed-out create left no container")

    # a pod: B joins A's network, ipc and uts namespaces by path (Kubernetes' sandbox pattern)
    ba = bundle(tmp, "pod-a", ["sleep", "300"], hostname="pod-a")
    create(R, tmp, ["-b", ba, "--pid-file", pidfile, "pa"])
    pa = int(open(pidfile).read())
    sh(R + ["start", "pa"])
    bb = bundle(tmp, "pod-b", ["sh", "-c", "hostname; sleep 300"])
    cfg = json.load(open(os.path.join(bb, "config.json")))
    cfg.pop("hostname", None)
    cfg["linux"]["namespaces"] = [{"type": t} for t in ("pid", "mount")] + [
        {"type": t, "path": f"/proc/{pa}/ns/{n}"}
        for t, n in (("ipc", "ipc"), ("uts", "uts"), ("network", "net"))]
    json.dump(cfg, open(os.path.join(bb, "config.json"), "w"))
    out = os.path.join(tmp, "pod-b.out")
    with open(out, "w") as o:
        r = subprocess.run(R + ["create", "-b", bb, "--pid-file", pidfile, "pb"],
                           stdin=subprocess.DEVNULL, stdout=o, stderr=o, timeout=60)
    pb = int(open(pidfile).read()) if r.returncode == 0 else 0
    sh(R + ["start", "pb"])
    time.sleep(0.3)
    same = pb and all(os.readlink(f"/proc/{pa}/ns/{n}") == os.readlink(f"/proc/{pb}/ns/{n}")
                      for n in ("ipc", "uts", "net"))
    other = pb and os.readlink(f"/proc/{pa}/ns/pid") != os.readlink(f"/proc/{pb}/ns/pid")
    check(r.returncode == 0 and same and other and open(out).read() == "pod-a\n",
          f"a pod: ipc, uts and network joined by path, its own pid namespace "
          f"({open(out).read()!r})")
    for c in ("pb", "pa"):
        sh(R + ["delete", "--force", c])

    # process.terminal: the pty's master comes over the console socket (SCM_RIGHTS); the
    # command has the slave, of the sandbox's own devpts, as stdio and controlling terminal
    bt = bundle(tmp, "bt", ["sh", "-c", "tty; [ $(cut -d' ' -f7 /proc/$$/stat) != 0 ] && echo ctty"])
    cfg = json.load(open(os.path.join(bt, "config.json")))
    cfg["process"]["terminal"] = True
    json.dump(cfg, open(os.path.join(bt, "config.json"), "w"))
    sock_path = os.path.join(tmp, "console.sock")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(sock_path)
    srv.listen(1)
    srv.settimeout(20)
    rc, err = create(R, tmp, ["-b", bt, "--console-socket", sock_path, "--pid-file", pidfile,
                              "ct"])
    check(rc == 0, f"create with a terminal ({err.strip()})")
    conn, _ = srv.accept()
    msg, fds, _, _ = socket.recv_fds(conn, 64, 1)
    conn.close()
    srv.close()
    check(len(fds) == 1 and os.isatty(fds[0]), f"the pty's master over the console socket ({msg})")
    pid = int(open(pidfile).read())
    sh(R + ["start", "ct"])
    out = b""
    while True:
        try:
            chunk = os.read(fds[0], 4096)
        except OSError:  # EIO: every slave closed
            break
        if not chunk:
            break
        out += chunk
    os.close(fds[0])
    check(wait_exit(pid) == 0 and b"/dev/pts/0" in out and b"ctty" in out,
          f"the command's stdio is the pty, its controlling terminal ({out!r})")
    sh(R + ["delete", "ct"])
    r = sh(R + ["create", "-b", bt, "ct2"])
    check(r.returncode == 1 and "--console-socket" in r.stderr, "terminal without a console socket")

    # update (flags and --resources), exec --cap, --preserve-fds, a systemd cgroupsPath
    ctx = types.SimpleNamespace(R=R, root=root, tmp=tmp, check=check, sh=sh, bundle=bundle,
                                create=create, cgroup_dirs=cgroup_dirs, wait_exit=wait_exit)
    update_checks(ctx)
    preserve_fds_checks(ctx)
    systemd_path_checks(ctx)

    # refusals: one line each, nothing left in the root
    bad = bundle(tmp, "bad", ["true"])
    cfg = json.load(open(os.path.join(bad, "config.json")))
    cfg["linux"]["namespaces"].append({"type": "user"})
    json.dump(cfg, open(os.path.join(bad, "config.json"), "w"))
    r = sh(R + ["create", "-b", bad, "c3"])
    check(r.returncode == 1 and r.stderr.count("\n") == 1 and "user namespaces" in r.stderr,
          f"hostile config refused with one line ({r.stderr.strip()})")
    fifo = os.path.join(tmp, "not-a-netns")
    os.mkfifo(fifo)
    badns = bundle(tmp, "badns", ["true"])
    cfg = json.load(open(os.path.join(badns, "config.json")))
    cfg["linux"]["namespaces"] = [n for n in cfg["linux"]["namespaces"]
                                  if n["type"] != "network"]
    cfg["linux"]["namespaces"].append({"type": "network", "path": fifo})
    json.dump(cfg, open(os.path.join(badns, "config.json"), "w"))
    rc, err = create(R, tmp, ["-b", badns, "c4"])
    check(rc == 1 and err.count("\n") == 1 and "network namespace" in err,
          f"a network namespace path that is a fifo: refused, no hang ({err.strip()})")
    log = os.path.join(tmp, "log.json")
    r = sh([RUNC, "--root", root, "--log", log, "--log-format", "json", "create", "-b", bad, "c3"])
    entry = json.loads(open(log).read().splitlines()[-1])
    check(entry["level"] == "error" and "user namespaces" in entry["msg"], "--log-format json")
    r = sh(R + ["create", "-b", b2, "../x"])
    check(r.returncode == 1 and "invalid container id" in r.stderr, "hostile id refused")
    r = sh([RUNC, "--systemd-cgroup", "--root", root, "list"])
    check(r.returncode == 1 and "systemd" in r.stderr, "--systemd-cgroup refused")
    open_root = os.path.join(tmp, "open-root")
    os.makedirs(open_root)
    os.chmod(open_root, 0o777)
    open(os.path.join(open_root, "planted"), "w").close()
    r = sh([RUNC, "--root", open_root, "list"])
    check(r.returncode == 1 and "open to other users" in r.stderr,
          "a --root others may write to is refused")
    left = [n for n in os.listdir(root) if not n.startswith(".")]
    check(left == [] and os.listdir(os.path.join(root, ".sandboxes")) == [],
          f"nothing left in the root ({left})")
    r = sh([RUNC, "features"])
    check(r.returncode == 0 and json.loads(r.stdout)["ociVersionMin"] == "1.0.0", "features")


def part_podman(tmp):
    root = os.path.join(tmp, "podman-runc")
    # conmon's cleanup (podman container cleanup) does not pass --runtime-flag on: a wrapper
    # keeps every call of this test under its own --root
    wrap = os.path.join(tmp, "lbbox-runc")
    with open(wrap, "w") as f:
        f.write(f"#!/bin/sh\nexec {RUNC} --root {root} \"$@\"\n")
    os.chmod(wrap, 0o755)
    bridge = f"lbt{os.getpid() % 100000}"
    P = podman_cmd(tmp, bridge) + ["--runtime", wrap]
    U = ULIMITS
    img = "localhost/lbbox-test:1"
    run = P + ["run", "--rm"] + U
    with podman_host(P, bridge) as cleaned:
        r = podman_import(P, tmp, ROOTFS, img)
        check(r.returncode == 0, f"podman import ({r.stderr.strip()[-200:]})")
        podman_checks(P, U, img, run, tmp, root)
    check(not cleaned["left"],
          f"podman's cgroups and /var/lib/cni removed ({cleaned['left'][:2]})")
    return bridge


def podman_checks(P, U, img, run, tmp, root):
    r = sh(run + ["--network", "none", img, "echo", "hi"])
    check(r.returncode == 0 and r.stdout == "hi\n", f"podman run --rm echo hi ({r.stderr.strip()})")
    r = sh(run + ["--network", "none", img, "sh", "-c", "exit 3"])
    check(r.returncode == 3, f"exit code 3 ({r.returncode})")
    r = sh(run + ["--network", "none", img, "nonexistent-cmd"])
    check(r.returncode == 127, f"command not found: 127 ({r.returncode})")
    vol = os.path.join(tmp, "vol")
    os.makedirs(vol)
    open(os.path.join(vol, "in"), "w").write("from-host\n")
    r = sh(run + ["--network", "none", "-e", "FOO=bar", "-v", f"{vol}:/data", img, "sh", "-c",
                  "echo $FOO; cat /data/in; echo from-box > /data/out"])
    check(r.returncode == 0 and r.stdout == "bar\nfrom-host\n"
          and open(os.path.join(vol, "out")).read() == "from-box\n", "-e and -v")
    r = sh(run + ["--network", "none", "--memory", "64m", "--pids-limit", "33", "--cpus",
                  "0.5", img, "sh", "-c",
                  "cat /sys/fs/cgroup/memory/memory.limit_in_bytes "
                  "/sys/fs/cgroup/pids/pids.max /sys/fs/cgroup/cpu/cpu.cfs_quota_us"])
    check(r.stdout.split() == ["67108864", "33", "50000"],
          f"--memory, --pids-limit, --cpus in the cgroup ({r.stdout.split()} {r.stderr.strip()})")
    # -t: conmon's console socket; script(1) gives podman a terminal of its own
    cmd = " ".join(run + ["-t", "--network", "none", img, "sh", "-c", "'tty; exit 4'"])
    r = sh(["script", "-qec", cmd, "/dev/null"], stdin=subprocess.DEVNULL)
    check(r.returncode == 4 and "/dev/pts/0" in r.stdout,
          f"podman run -t: a terminal inside, exit code ({r.returncode} {r.stdout!r})")
    r = sh(run + ["--network", "none", img, "sh", "-c", "ls /sys/class/net"])
    check(r.returncode == 0 and r.stdout.split() == ["lo"],
          f"--network none: lo only ({r.stdout.split()} {r.stderr.strip()[-200:]})")
    r = sh(run + [img, "sh", "-c", "ip -4 -o addr show eth0"])
    check(r.returncode == 0 and "10.213.77." in r.stdout,
          f"default network (the test's CNI bridge, netns joined by path) ({r.stdout.strip()} {r.stderr.strip()})")

    # detached: ps, exec, runtime state, stop
    r = sh(P + ["run", "-d", "--name", "lbt-d1", "--network", "none"] + U + [img, "sleep", "300"])
    check(r.returncode == 0, f"run -d ({r.stderr.strip()})")
    cid = r.stdout.strip()
    r = sh(P + ["ps", "--format", "{{.Names}} {{.Status}}"])
    check(r.stdout.startswith("lbt-d1 Up"), f"podman ps ({r.stdout.strip()})")
    cpid = sh(P + ["inspect", "--format", "{{.State.Pid}}", "lbt-d1"]).stdout.strip()
    # the hierarchies lbbox uses (the others keep conmon's cgroup)
    cgs = [c for c in (cgroup_dirs(int(cpid)) if cpid.isdigit() else [])
           if c.split("/")[4] in ("memory", "pids", "cpu,cpuacct", "cpu")]
    check(cgs and all(c.endswith(f"/libpod_parent/libpod-{cid}") for c in cgs),
          f"the container's cgroup is podman's cgroupsPath ({cgs[:1]})")
    st = json.loads(sh([RUNC, "--root", root, "state", cid]).stdout or "{}")
    check(st.get("status") == "running", "the runtime's state: running")
    r = sh(P + ["pause", "lbt-d1"])
    st = sh(P + ["inspect", "--format", "{{.State.Status}}", "lbt-d1"]).stdout.strip()
    check(r.returncode == 0 and st == "paused", f"podman pause ({st} {r.stderr.strip()})")
    r = sh(P + ["unpause", "lbt-d1"])
    st = sh(P + ["inspect", "--format", "{{.State.Status}}", "lbt-d1"]).stdout.strip()
    check(r.returncode == 0 and st == "running", f"podman unpause ({st})")
    cmd = " ".join(P + ["exec", "-t", "lbt-d1", "sh", "-c",
                        "'tty; [ $(cut -d\\  -f7 /proc/$$/stat) != 0 ] && echo ctty; exit 2'"])
    r = sh(["script", "-qec", cmd, "/dev/null"], stdin=subprocess.DEVNULL)
    check(r.returncode == 2 and "/dev/pts/" in r.stdout and "ctty" in r.stdout,
          f"podman exec -t: a pty of the container, its terminal ({r.returncode} {r.stdout!r})")
    # podman update: the runtime's update --resources FILE, read back inside
    r = sh(P + ["update", "--memory", "96m", "--cpu-quota", "40000", "lbt-d1"])
    got = sh(P + ["exec", "lbt-d1", "cat", "/sys/fs/cgroup/memory/memory.limit_in_bytes",
                  "/sys/fs/cgroup/cpu/cpu.cfs_quota_us"]).stdout.split()
    check(r.returncode == 0 and got == ["100663296", "40000"],
          f"podman update --memory --cpu-quota ({got} {r.stderr.strip()[-300:]})")
    r = sh(P + ["exec", "--user", "1234:5678", "lbt-d1", "sh", "-c", "id -u; id -g"])
    check(r.stdout.split() == ["1234", "5678"], f"podman exec --user ({r.stdout.split()})")
    r = sh(P + ["exec", "-e", "E=1", "lbt-d1", "sh", "-c", "echo exec$E; exit 4"])
    check(r.returncode == 4 and r.stdout == "exec1\n", f"podman exec ({r.returncode} {r.stdout!r} {r.stderr.strip()})")
    t0 = time.time()
    r = sh(P + ["stop", "-t", "5", "lbt-d1"])
    check(r.returncode == 0 and time.time() - t0 < 4, "podman stop (SIGTERM reaches the command)")
    r = sh(P + ["inspect", "--format", "{{.State.ExitCode}}", "lbt-d1"])
    check(r.stdout.strip() == "143", f"stopped by SIGTERM: 143 ({r.stdout.strip()})")
    r = sh([RUNC, "--root", root, "state", cid])
    st = json.loads(r.stdout) if r.returncode == 0 else {}
    # podman's cleanup may have deleted it from the runtime already
    check(st.get("status") == "stopped" or "does not exist" in r.stderr,
          f"the runtime's state: stopped or deleted ({st or r.stderr.strip()})")
    check(sh(P + ["rm", "lbt-d1"]).returncode == 0, "podman rm")

    r = sh(P + ["run", "-d", "--name", "lbt-d2", "--network", "none"] + U + [img, "sleep", "300"])
    r = sh(P + ["kill", "lbt-d2"])
    code = sh(P + ["wait", "lbt-d2"]).stdout.strip()
    check(r.returncode == 0 and code == "137", f"podman kill: 137 ({code})")
    check(sh(P + ["rm", "lbt-d2"]).returncode == 0, "podman rm after kill")
    r = sh(P + ["run", "-d", "--name", "lbt-d3"] + U + [img, "sleep", "300"])
    r = sh(P + ["rm", "-f", "lbt-d3"])
    check(r.returncode == 0, "podman rm -f of a running container")
    r = sh(P + ["ps", "-a", "-q"])
    check(r.stdout.strip() == "", f"no container left ({r.stdout.strip()})")
    left = [n for n in os.listdir(root) if not n.startswith(".")]
    check(left == [] and os.listdir(os.path.join(root, ".sandboxes")) == [],
          f"the runtime's root is empty ({left})")


def part_containerd(tmp):
    d = os.path.join(tmp, "ctd")
    with containerd_host(d) as (ctr, ok):
        containerd_checks(d, ctr, ok)


def containerd_checks(d, ctr, ok):
    rootfs = os.path.join(d, "rootfs")  # a copy: ctr --rootfs gives the runtime a writable root
    sh(["cp", "-a", ROOTFS, rootfs])
    runc_root = os.path.join(d, "runc-root")
    rt = ["--runtime", "io.containerd.runc.v2", "--runc-binary", RUNC, "--runc-root", runc_root,
          "--rootfs", rootfs]
    try:
        check(ok, "containerd answers on the test's socket")
        r = sh(ctr + ["run", "--rm"] + rt + ["t1", "sh", "-c", "echo hi-from-ctr; exit 5"])
        check(r.returncode == 5 and r.stdout == "hi-from-ctr\n",
              f"ctr run --rm: output and exit code 5 ({r.returncode} {r.stderr.strip()[-200:]})")
        r = sh(ctr + ["run", "-d"] + rt + ["t2", "sleep", "300"])
        check(r.returncode == 0, f"ctr run -d ({r.stderr.strip()[-200:]})")
        r = sh(ctr + ["task", "ls"])
        check(any(l.split()[:1] == ["t2"] and "RUNNING" in l for l in r.stdout.splitlines()),
              "ctr task ls: RUNNING")
        r = sh(ctr + ["task", "exec", "--exec-id", "e1", "t2", "sh", "-c", "echo in-exec; exit 6"])
        check(r.returncode == 6 and r.stdout == "in-exec\n", f"ctr task exec ({r.returncode})")
        r = sh(ctr + ["task", "ps", "t2"])
        check(len(r.stdout.splitlines()) >= 2, "ctr task ps")
        r = sh(ctr + ["task", "kill", "t2"])
        end = time.time() + 10
        while time.time() < end and "STOPPED" not in sh(ctr + ["task", "ls"]).stdout:
            time.sleep(0.1)
        check(r.returncode == 0 and "STOPPED" in sh(ctr + ["task", "ls"]).stdout,
              "ctr task kill: SIGTERM stops it")
        check(sh(ctr + ["task", "rm", "t2"]).returncode == 0, "ctr task rm")
        check(sh(ctr + ["container", "rm", "t2"]).returncode == 0, "ctr container rm")
        left = [n for n in os.listdir(os.path.join(runc_root, "default"))
                if not n.startswith(".")] if os.path.isdir(runc_root) else []
        check(left == [], f"the runtime's root is empty ({left})")
    finally:
        ctr_remove(ctr, ("t1", "t2"))


def main():
    if os.geteuid() != 0:
        print("SKIP: needs root")
        return 77
    subreaper()
    tmp = tempfile.mkdtemp(prefix="lbbox-oci-")
    bridge = "none"
    try:
        part_runtime(tmp)
        if shutil.which("podman") and shutil.which("conmon"):
            bridge = part_podman(tmp)
        else:
            check(False, "podman and conmon are installed (scripts/setup.sh)")
        if shutil.which("containerd") and shutil.which("ctr"):
            part_containerd(tmp)
        else:
            check(False, "containerd and ctr are installed (scripts/setup.sh)")
    finally:
        delete_all(RUNC, [os.path.join(tmp, r)
                          for r in ("runc-root", "podman-runc", "ctd/runc-root/default")])
        host_clean(tmp, bridge, check)
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(FAILS)} failed" if FAILS else "all passed")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
