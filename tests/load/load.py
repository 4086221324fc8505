#!/usr/bin/env python3
"""Load on lbbox, bounded in count and time, with leak checks after it (as root).

  load.py rpc LBBOX ROOTFS   `lbbox serve` + /rpc/ws: 20 sessions, 1,000 box_exec, 20 in flight
                             at a time, while managed processes are attached and detached over
                             the relay. Every reply must arrive exactly once and be the right
                             one; the server's descriptors and RSS must come back to where they
                             were; nothing may be left (sessions, sandboxes, cgroups, processes).
  load.py run LBBOX ROOTFS   1,000 `lbbox run`, 4 at a time, every tenth with --network on (on a
                             private bridge and subnet): every exit status right, then no state,
                             cgroup, veth, address lease or filter element left.

Prints Criterion-style [PASS]/[FAIL] lines, a Synthesis line and one JSON line of figures
(LOAD {...}): execs/s, p50/p99 latency in ms, the server's fds and RSS before and after.
"""
import glob
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "rpc"))
import wsclient  # noqa: E402

IMAGE = "rockchin/langbot-sandbox:latest"
SESSIONS, IN_FLIGHT = 20, 20
EXECS = int(os.environ.get("LOAD_EXECS", "1000"))
RUNS, RUN_JOBS = 1000, 4
results = {"passed": 0, "failed": 0}


def check(name, fn):
    try:
        fn()
        print("[PASS] load::%s" % name, flush=True)
        results["passed"] += 1
    except Exception as e:  # one failure line, the run goes on to the leak checks
        print("[FAIL] load::%s: %s: %s" % (name, type(e).__name__, e), flush=True)
        results["failed"] += 1


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p / 100))]


def proc_fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def proc_rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def lbbox_cgroups(ids):
    found = []
    for pattern in ("/sys/fs/cgroup/*/lbbox-*", "/sys/fs/cgroup/*/*/lbbox-*",
                    "/sys/fs/cgroup/*/*/*/lbbox-*", "/sys/fs/cgroup/*/*/*/*/lbbox-*"):
        found += [c for c in glob.glob(pattern) if any(c.endswith(i) for i in ids)]
    return found


def processes_naming(text):
    left = []
    for d in glob.glob("/proc/[0-9]*"):
        try:
            with open(d + "/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if text in cmd and int(d[6:]) != os.getpid():
            left.append(cmd[:120])
    return left


class Conn:
    """One /rpc/ws connection: requests in flight matched to replies by seq_id."""

    def __init__(self, port):
        self.ws = wsclient.connect("127.0.0.1", port, "/rpc/ws",
                                   {"X-LangBot-Instance-Id": "inst-load"})
        self.seq = 0
        self.lock = threading.Lock()
        self.waiting = {}
        self.seen = {}
        self.reader = threading.Thread(target=self.read, daemon=True)
        self.reader.start()

    def read(self):
        while True:
            try:
                ev = self.ws.recv(None, pings=False)
            except OSError:  # closed by abort() at the end
                return
            if ev[0] != "text":
                return
            m = json.loads(ev[1])
            with self.lock:
                self.seen[m["seq_id"]] = self.seen.get(m["seq_id"], 0) + 1
                q = self.waiting.pop(m["seq_id"], None)
            if q:
                q.put(m)

    def send(self, action, data):
        q = queue.Queue()
        with self.lock:
            self.seq += 1
            seq = self.seq
            self.waiting[seq] = q
        self.ws.send_text(json.dumps({"seq_id": seq, "action": action, "data": data}))
        return seq, q

    def call(self, action, data, timeout=120):
        _, q = self.send(action, data)
        m = q.get(timeout=timeout)
        assert m["code"] == 0, m
        return m["data"]


def spec(sid, cmd=""):
    return {"session_id": sid, "cmd": cmd, "image": IMAGE, "workdir": "/workspace",
            "timeout_sec": 30, "network": "off", "host_path": None}


def relay_cycles(port, sid, n, errors):
    """Attach to sid's managed process, one line there and back, detach; n times."""
    try:
        for i in range(n):
            ws = wsclient.connect("127.0.0.1", port,
                                  "/v1/sessions/%s/managed-process/default/ws" % sid,
                                  {"X-LangBot-Instance-Id": "inst-load"}, ["mcp"])
            ws.send_text("line-%d" % i)
            got = ws.recv_text(30)
            assert got == "line-%d" % i, got
            ws.close()
    except Exception as e:
        errors.append("relay %s: %s: %s" % (sid, type(e).__name__, e))


def rpc(lbbox, rootfs):
    tmp = tempfile.mkdtemp(prefix="lbbox-load-")
    os.chmod(tmp, 0o755)
    root, run = os.path.join(tmp, "root"), os.path.join(tmp, "run")
    os.makedirs(os.path.join(root, "images", "busybox"))
    os.symlink(rootfs, os.path.join(root, "images", "busybox", "rootfs"))
    env = dict(os.environ, LBBOX_BOX_IMAGE_ALIASES=IMAGE + "=busybox", LBBOX_BOX_PULL="0",
               LANGBOT_BOX_TRUSTED_INSTANCE_UUID="inst-load")
    env.pop("LANGBOT_BOX_CONTROL_TOKEN", None)
    port = free_port()
    p = subprocess.Popen([lbbox, "--root", root, "--runroot", run, "serve", "--listen",
                          "127.0.0.1:%d" % port], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, env=env)
    ids = []
    figures = {}
    try:
        for _ in range(200):
            try:
                c = Conn(port)
                break
            except OSError:
                time.sleep(0.05)
        sids = ["load%02d" % i for i in range(SESSIONS)]

        def create():
            for sid in sids:
                info = c.call("box_create_session", spec(sid))
                ids.append(info["backend_session_id"][6:18])
            for sid in sids[:5]:
                c.call("box_start_managed_process",
                       {"session_id": sid, "spec": {"command": "cat"}})
            for sid in sids:  # one exec each: the server's steady state
                c.call("box_exec", spec(sid, "true"))

        check("create_sessions_and_processes", create)
        fds0, rss0 = proc_fds(p.pid), proc_rss_kib(p.pid)
        lat = []

        def execs():
            errors = []
            relays = [threading.Thread(target=relay_cycles, args=(port, sid, 40, errors))
                      for sid in sids[:5]]
            for t in relays:
                t.start()
            t0 = time.time()
            pending = []
            for i in range(EXECS):
                if len(pending) == IN_FLIGHT:
                    collect(pending.pop(0))
                sid = sids[i % SESSIONS]
                seq, q = c.send("box_exec", spec(sid, "echo %d" % i))
                pending.append((i, seq, q, time.time()))
            while pending:
                collect(pending.pop(0))
            figures["execs_per_s"] = round(EXECS / (time.time() - t0), 1)
            for t in relays:
                t.join(120)
            assert not errors, errors
            with c.lock:
                dup = [s for s, n in c.seen.items() if n != 1]
            assert not dup, "replies seen more than once: %s" % dup[:5]

        def collect(item):
            i, seq, q, t = item
            m = q.get(timeout=120)
            lat.append((time.time() - t) * 1000)
            assert m["seq_id"] == seq and m["code"] == 0, m
            assert m["data"]["stdout"] == str(i) and m["data"]["exit_code"] == 0, m

        check("1000_execs_20_in_flight_with_relays", execs)
        time.sleep(1)  # jobs' pipes and reaped children settle
        fds1, rss1 = proc_fds(p.pid), proc_rss_kib(p.pid)
        figures.update(p50_ms=round(pct(lat, 50), 2) if lat else None,
                       p99_ms=round(pct(lat, 99), 2) if lat else None,
                       fds_before=fds0, fds_after=fds1, rss_kib_before=rss0,
                       rss_kib_after=rss1)

        def steady():
            assert fds1 <= fds0, "descriptors %d -> %d" % (fds0, fds1)
            assert rss1 - rss0 <= 1024, "RSS %d -> %d KiB" % (rss0, rss1)

        check("server_fds_and_rss_steady", steady)

        def delete():
            for sid in sids:
                c.call("box_delete_session", {"session_id": sid})

        check("delete_sessions", delete)
        c.ws.abort()
    finally:
        p.send_signal(signal.SIGTERM)
        rc = p.wait(30)

    def clean():
        assert rc == 0, "serve exit status %d" % rc
        left = [d for d in glob.glob(os.path.join(run, "*")) if not d.endswith(("/box", "/net"))]
        left += glob.glob(os.path.join(run, "box", "sessions", "*"))
        assert not left, left
        assert not lbbox_cgroups(ids), lbbox_cgroups(ids)
        time.sleep(0.5)
        assert not processes_naming(tmp), processes_naming(tmp)

    check("nothing_left_after_rpc_load", clean)
    shutil.rmtree(tmp, ignore_errors=True)
    print("LOAD " + json.dumps(dict(kind="rpc", **figures)), flush=True)


def run_load(lbbox, rootfs):
    tmp = tempfile.mkdtemp(prefix="lbbox-load-")
    os.chmod(tmp, 0o755)
    bridge = "lbtl%d" % (os.getpid() % 100000)
    env = dict(os.environ, LBBOX_NET_BRIDGE=bridge, LBBOX_NET_SUBNET="10.232.0.0/24")
    base = [lbbox, "--root", os.path.join(tmp, "root"), "--runroot", os.path.join(tmp, "run")]
    lat = []
    failures = []

    def one(i):
        net = ["--network", "on"] if i % 10 == 0 else []
        t = time.time()
        r = subprocess.run(base + ["run", "--rootfs", rootfs] + net +
                           ["--", "sh", "-c", "echo %d" % i], capture_output=True, env=env,
                           timeout=120)
        lat.append((time.time() - t) * 1000)
        if r.returncode != 0 or r.stdout.decode().strip() != str(i):
            failures.append("run %d: %d %r %r" % (i, r.returncode, r.stdout, r.stderr[-200:]))

    def runs():
        t0 = time.time()
        work = queue.Queue()
        for i in range(RUNS):
            work.put(i)

        def worker():
            while True:
                try:
                    one(work.get_nowait())
                except queue.Empty:
                    return

        ts = [threading.Thread(target=worker) for _ in range(RUN_JOBS)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        figures["runs_per_s"] = round(RUNS / (time.time() - t0), 1)
        assert not failures, failures[:3]

    figures = {}
    check("1000_runs_a_tenth_with_network_on", runs)
    figures.update(p50_ms=round(pct(lat, 50), 2), p99_ms=round(pct(lat, 99), 2))

    def clean():
        run = os.path.join(tmp, "run")
        left = [d for d in glob.glob(os.path.join(run, "*")) if not d.endswith(("/net", "/box"))]
        assert not left, left
        leases = json.load(open(os.path.join(run, "net", bridge + ".json")))
        assert not leases.get("leases"), leases
        # a veth goes with its sandbox's network namespace, which the kernel tears down in the
        # background after the sandbox ended: give it a moment
        for _ in range(100):
            veths = subprocess.run(["ip", "-o", "link", "show", "master", bridge],
                                   capture_output=True).stdout.decode()
            if not veths.strip():
                break
            time.sleep(0.1)
        assert not veths.strip(), veths
        # no sandbox address in the filter's sets (only --allow-host adds any)
        nft = subprocess.run(["nft", "list", "table", "inet", bridge],
                             capture_output=True).stdout.decode()
        assert "10.232.0." not in nft.replace("10.232.0.0/24", ""), nft
        assert not processes_naming(tmp), processes_naming(tmp)

    check("nothing_left_after_runs", clean)

    def prune():
        r = subprocess.run(base + ["network", "prune"], capture_output=True, env=env)
        assert r.returncode == 0, r.stderr
        gone = subprocess.run(["ip", "link", "show", bridge], capture_output=True)
        assert gone.returncode != 0, "bridge %s left" % bridge

    check("network_pruned", prune)
    shutil.rmtree(tmp, ignore_errors=True)
    print("LOAD " + json.dumps(dict(kind="run", **figures)), flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("rpc", "run"):
        sys.exit(__doc__)
    lbbox, rootfs = os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
    (rpc if sys.argv[1] == "rpc" else run_load)(lbbox, rootfs)
    print("[====] Synthesis: Tested: %d | Passing: %d | Failing: %d | Crashing: 0" % (
        results["passed"] + results["failed"], results["passed"], results["failed"]))
    sys.exit(1 if results["failed"] else 0)
