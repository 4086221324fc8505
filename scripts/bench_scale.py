#!/usr/bin/env python3
"""bench_scale.py LBBOX ROOT RUNROOT ROOTFS SESSIONS [REPS] — is lbbox flat with scale?

Measures the hot paths with no other session, then again with SESSIONS idle sessions of a Box
runtime alive (and up to 200 managed processes, `sleep`, in as many of them), and prints the
ratio of each median (with / without) and the runtime's RSS per idle session:

  lbbox run --rootfs ROOTFS true; lbbox session create (+ rm, untimed); lbbox session exec;
  lbbox session ls; and over the runtime's stdio: box_exec, box_create_session (+ delete,
  untimed), box_status.

The CLI cases are timed around the process (Python's spawn included, the same in both phases).
Run by scripts/bench.sh with BENCH_SCALE=N; a benchmark, never a test. Everything it made is
removed at the end (the runtime drops its own sessions when its stdin closes).
"""
import json
import os
import subprocess
import sys
import time
from box_stdio import StdioBox  # noqa: E402  (beside this script)

lbbox, root, runroot, rootfs = sys.argv[1:5]
n_sessions = int(sys.argv[5])
reps = int(sys.argv[6]) if len(sys.argv) > 6 else 30
n_procs = min(200, n_sessions)
env = dict(os.environ, LANGBOT_BOX_TRUSTED_INSTANCE_UUID="bench",
           LBBOX_BOX_IMAGE_ALIASES="rockchin/langbot-sandbox:latest=busybox", LBBOX_BOX_PULL="0",
           LBBOX_BOX_MAX_SESSIONS=str(n_sessions + 64),
           LBBOX_BOX_MAX_PROCESSES=str(n_procs + 16))
lb = [lbbox, "--root", root, "--runroot", runroot]
ctx = {"instance_uuid": "bench", "workspace_uuid": "w", "placement_generation": 1}
box = StdioBox(lb + ["box", "-s", "--ws-control-port", "0", "--host", "127.0.0.1"], env, ctx, 600)
p, send, wait = box.p, box.send, box.wait


def call(action, data):
    return wait(send(action, data))


def spec(sid, cmd="", **kw):
    return dict({"cmd": cmd, "session_id": sid, "image": "rockchin/langbot-sandbox:latest"}, **kw)


def cli(*args):
    subprocess.run(lb + list(args), env=env, check=True, stdout=subprocess.DEVNULL)


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def timed(fn, after=None):
    out = []
    for i in range(reps + 3):
        t0 = time.perf_counter()
        fn(i)
        t = (time.perf_counter() - t0) * 1000
        if after:
            after(i)
        if i >= 3:
            out.append(t)
    return median(out)


def rss():
    with open("/proc/%d/status" % p.pid) as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))


def measure(tag):
    m = {}
    m["lbbox run true"] = timed(lambda i: cli("run", "--rootfs", rootfs, "--", "true"))
    m["lbbox session create"] = timed(
        lambda i: cli("session", "create", "%s-c%d" % (tag, i), "--rootfs", rootfs),
        lambda i: cli("session", "rm", "%s-c%d" % (tag, i)))
    m["lbbox session exec"] = timed(lambda i: cli("session", "exec", "cli0", "--", "true"))
    m["lbbox session ls"] = timed(lambda i: cli("session", "ls"))
    m["box_exec"] = timed(lambda i: call("box_exec", spec("b0", "true")))
    m["box_create_session"] = timed(
        lambda i: call("box_create_session", spec("%s-r%d" % (tag, i))),
        lambda i: call("box_delete_session", {"session_id": "%s-r%d" % (tag, i)}))
    m["box_status"] = timed(lambda i: call("box_status", {}))
    return m


try:
    cli("session", "create", "cli0", "--rootfs", rootfs)
    call("box_create_session", spec("b0"))
    time.sleep(0.3)
    rss0 = rss()
    none = measure("a")
    t0 = time.perf_counter()
    for i in range(n_sessions):
        call("box_create_session", spec("idle%d" % i))
    for i in range(n_procs):
        call("box_start_managed_process",
             {"session_id": "idle%d" % i, "spec": {"command": "sleep", "args": ["100000"]}})
    made = time.perf_counter() - t0
    time.sleep(0.5)
    rss1 = rss()
    scaled = measure("b")
    print("\nflat with scale: %d idle sessions and %d managed processes (made in %.0f s), "
          "medians of %d:\n" % (n_sessions, n_procs, made, reps))
    print("| case | none ms | with them ms | ratio |\n| --- | ---: | ---: | ---: |")
    for k in none:
        print("| %s | %.2f | %.2f | %.2f |" % (k, none[k], scaled[k], scaled[k] / none[k]))
    print("| runtime RSS | %d KiB | %d KiB | %.2f KiB per idle session |"
          % (rss0, rss1, (rss1 - rss0) / n_sessions))
    # Figures for bench.sh --json (BENCH_SCALE_JSON: where to write them), in bench.sh's shape.
    if os.environ.get("BENCH_SCALE_JSON"):
        figs = {"scale_sessions": {"median": n_sessions},
                "scale_rss_kib_per_session": {"median": round((rss1 - rss0) / n_sessions, 2)}}
        for k in none:
            key = "scale_" + k.replace("lbbox ", "").replace(" ", "_")
            figs[key] = {"median": round(scaled[k], 2)}
            figs[key + "_ratio"] = {"median": round(scaled[k] / none[k], 3)}
        with open(os.environ["BENCH_SCALE_JSON"], "w") as f:
            json.dump(figs, f)
finally:
    p.stdin.close()
    p.wait(900)
    subprocess.run(lb + ["session", "rm", "cli0"], env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
