#!/usr/bin/env python3
"""bench_rpc.py LBBOX ROOT RUNROOT [N] — LangBot's Box RPC, measured from a client.

Over stdio: box_exec of `true` on an existing session (N runs: median, p90), the same on a
session with a writable root (read_only_rootfs false), 20 box_execs at once on 20 sessions (wall time), and the memory of the server with 64 idle sessions (its own
RSS, and the sessions' pid 1s). Over `lbbox serve` + /rpc/ws: box_exec of `true` (N runs).
Prints markdown. Run by scripts/bench.sh; a benchmark, not a test.
"""
import json
import os
import subprocess
import sys
import time

lbbox, root, runroot = sys.argv[1:4]
n = int(sys.argv[4]) if len(sys.argv) > 4 else 200
env = dict(os.environ, LANGBOT_BOX_TRUSTED_INSTANCE_UUID="bench",
           LBBOX_BOX_IMAGE_ALIASES="rockchin/langbot-sandbox:latest=busybox", LBBOX_BOX_PULL="0")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "rpc"))
import wsclient  # noqa: E402  (the tests' RFC 6455 client)
from box_stdio import StdioBox  # noqa: E402

ctx = {"instance_uuid": "bench", "workspace_uuid": "w", "placement_generation": 1}
box = StdioBox([lbbox, "--root", root, "--runroot", runroot, "box", "-s", "--ws-control-port",
                "0", "--host", "127.0.0.1"], env, ctx, 300)
p, send, wait = box.p, box.send, box.wait


def spec(sid, cmd="", **kw):
    return dict({"cmd": cmd, "session_id": sid, "image": "rockchin/langbot-sandbox:latest"}, **kw)


def stats(v):
    v = sorted(v)
    med = v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2
    return med, v[min(len(v) - 1, int(0.9 * len(v) + 0.999) - 1)]


def exec_series(sid, **kw):
    """n box_execs of `true` one after another on a new session sid, after 10 warm-ups."""
    wait(send("box_create_session", spec(sid, **kw)))
    times = []
    for i in range(n + 10):
        t0 = time.perf_counter()
        wait(send("box_exec", spec(sid, "true", **kw)))
        if i >= 10:
            times.append((time.perf_counter() - t0) * 1000)
    return stats(times)


med, p90 = exec_series("b0")
rw_med, rw_p90 = exec_series("rw0", read_only_rootfs=False)
for i in range(1, 21):
    wait(send("box_create_session", spec("c%d" % i)))
t0 = time.perf_counter()
for s in [send("box_exec", spec("c%d" % i, "true")) for i in range(1, 21)]:
    wait(s)
wall = (time.perf_counter() - t0) * 1000
for i in range(21, 63):  # 64 in all, with b0 and rw0: the default maximum
    wait(send("box_create_session", spec("c%d" % i)))
time.sleep(0.5)


def kib(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


server_rss = kib(p.pid, "VmRSS")
inits = []
for d in os.listdir(runroot):
    st = os.path.join(runroot, d, "state.json")
    if os.path.exists(st):
        inits.append(kib(json.load(open(st))["pid"], "VmRSS"))
p.stdin.close()
p.wait(30)


def ws_bench():
    """box_exec over `lbbox serve` + /rpc/ws, one request at a time."""
    srv = subprocess.Popen([lbbox, "--root", root, "--runroot", runroot, "serve", "--listen",
                            "127.0.0.1:0"], stderr=subprocess.PIPE, env=env)
    port = None
    for line in srv.stderr:
        if b"listening on" in line:
            port = int(line.split(b":")[-1])
            break
    ws = wsclient.connect("127.0.0.1", port, "/rpc/ws", headers={"X-LangBot-Instance-Id": "bench"})

    def call(i, action, data):
        ws.send_text(json.dumps({"seq_id": i, "action": action, "data": data, "context": ctx}))
        r = json.loads(ws.recv_msg(300)[1])
        assert r["seq_id"] == i and r["code"] == 0, r
    call(1, "box_create_session", spec("w0"))
    out = []
    for i in range(n + 10):
        t0 = time.perf_counter()
        call(i + 2, "box_exec", spec("w0", "true"))
        if i >= 10:
            out.append((time.perf_counter() - t0) * 1000)
    ws.close()
    srv.terminate()
    srv.wait(30)
    return stats(out)


ws_med, ws_p90 = ws_bench()
print("\nBox RPC over stdio (%d box_exec of `true` on one session):\n" % n)
print("| case | value |\n| --- | ---: |")
print("| box_exec median | %.2f ms |" % med)
print("| box_exec p90 | %.2f ms |" % p90)
print("| box_exec on a writable-root session, median | %.2f ms |" % rw_med)
print("| box_exec on a writable-root session, p90 | %.2f ms |" % rw_p90)
print("| 20 box_exec at once on 20 sessions (wall) | %.1f ms |" % wall)
print("| server RSS with %d idle sessions | %d KiB |" % (len(inits), server_rss))
print("| the sessions' pid 1s, RSS each (mean) | %d KiB |" % (sum(inits) // max(1, len(inits))))
print("| box_exec over `lbbox serve` + /rpc/ws, median | %.2f ms |" % ws_med)
print("| box_exec over `lbbox serve` + /rpc/ws, p90 | %.2f ms |" % ws_p90)

# Figures for bench.sh --json (BENCH_RPC_JSON: where to write them), in ms / KiB.
if os.environ.get("BENCH_RPC_JSON"):
    with open(os.environ["BENCH_RPC_JSON"], "w") as f:
        json.dump({"box_exec": {"median": round(med, 2), "p90": round(p90, 2)},
                   "box_exec_rw": {"median": round(rw_med, 2), "p90": round(rw_p90, 2)},
                   "box_exec_20_at_once_wall": {"median": round(wall, 1)},
                   "box_exec_ws": {"median": round(ws_med, 2), "p90": round(ws_p90, 2)},
                   "server_rss_kib": {"median": server_rss}}, f)
