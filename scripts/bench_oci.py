#!/usr/bin/env python3
"""bench_oci.py — lbbox-runc vs runc under podman and containerd, on the same busybox image.

usage: scripts/bench_oci.py [-n N] [--warmup W] BUILD_DIR ROOTFS
       (N: env BENCH_OCI_N, else 30; W: env BENCH_OCI_WARMUP, else 3)

Times, in one run, `podman run --rm IMG /bin/true` with --runtime = lbbox-runc and = runc, and
`ctr run --rm --runtime io.containerd.runc.v2 --runc-binary X` with X = lbbox-runc and = runc:
W warm-ups, then N timed runs of each, interleaved (A B, then B A, ...) to spread drift evenly.
podman runs with --network none (no CNI bridge: the runtime, not the network plugin, is timed).
The setup and cleanup are tests/oci/runtimes.py's (tests/oci/ocihost.py): podman with its own
storage and cgroupfs, containerd with its own root, state and socket, all under a temporary
directory, and the host left as it was (containers, cgroups, mounts, /run/containerd, /var/lib/cni).

Every runtime binary, lbbox-runc and runc alike, is called through the same bash wrapper that logs
the wall time of each invocation ($EPOCHREALTIME around the call) with its arguments. From that
log: the runtime's own share, the median per container of create + start + delete, and the number
of runtime invocations per container (containerd's shim calls delete twice for `run --rm`: both
are in the sum). The wrapper (one bash start per runtime call) is in both
columns of the end-to-end figures equally.

crun is not measured: it refuses these hybrid (cgroup v1 + v2) hosts; when installed, one podman
run with it is tried and what it said is printed.

A benchmark, not a test: no figure is asserted; it exits 1 only when a run fails (or the host is
not left clean), 77 without root. BENCH_OCI_JSON=FILE writes the figures (ms) for bench.sh --json.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "oci"))
from ocihost import (ULIMITS, containerd_host, ctr_remove, delete_all, host_clean,  # noqa: E402
                     podman_cmd, podman_host, podman_import, sh, subreaper)

IMG = "localhost/lbbox-bench:1"
# runc's global options that take a value, and the verbs' (as conmon and containerd's shim call)
VALUE_OPTS = {"--root", "--log", "--log-format", "--criu", "--rootless", "--bundle", "-b",
              "--pid-file", "--console-socket", "--preserve-fds", "--process", "-p", "--format",
              "-f"}
VERBS = {"create", "start", "delete", "kill", "state", "run", "exec", "ps", "list", "pause",
         "resume", "update", "features", "spec", "events", "checkpoint", "restore"}
FAILS = []
NOTES = []


def check(cond, what):
    if not cond:
        print("FAIL " + what, file=sys.stderr, flush=True)
        FAILS.append(what)


def wrapper(path, binary, extra, log):
    """A bash wrapper for binary that logs "start end arg..." (tab-separated) per call."""
    with open(path, "w") as f:
        f.write("#!/bin/bash\n"
                "t0=$EPOCHREALTIME\n"
                f"{binary} {' '.join(extra)} \"$@\"\n"
                "rc=$?\n"
                "t1=$EPOCHREALTIME\n"
                "IFS=$'\\t'\n"
                f"printf '%s\\t%s\\t%s\\n' \"$t0\" \"$t1\" \"$*\" >> {log}\n"
                "exit $rc\n")
    os.chmod(path, 0o755)


def parse_log(log):
    """[(verb, container id or None, ms)] of each logged runtime call."""
    calls = []
    if not os.path.exists(log):
        return calls
    for line in open(log):
        parts = line.rstrip("\n").split("\t")
        if len(parts) < 2:
            continue
        t0, t1, args = float(parts[0]), float(parts[1]), parts[2:]
        verb, cid, i = None, None, 0
        while i < len(args):
            a = args[i]
            if verb is None and a in VERBS:
                verb = a
            elif a.startswith("-"):
                if a in VALUE_OPTS:
                    i += 1
            elif verb is not None:
                cid = a
                break
            i += 1
        calls.append((verb or "?", cid, (t1 - t0) * 1000))
    return calls


def timed(cmd):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, timeout=120)
    return (time.perf_counter() - t0) * 1000, r


def p90(xs):
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(0.9 * (len(s) - 1))))]


def main():
    ap = argparse.ArgumentParser(description="lbbox-runc vs runc under podman and containerd")
    ap.add_argument("build")
    ap.add_argument("rootfs")
    ap.add_argument("-n", type=int, default=int(os.environ.get("BENCH_OCI_N", 30)))
    ap.add_argument("--warmup", type=int, default=int(os.environ.get("BENCH_OCI_WARMUP", 3)))
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("SKIP: needs root")
        return 77
    lbbox_runc = os.path.join(os.path.abspath(a.build), "lbbox-runc")
    runc = shutil.which("runc")
    rootfs = os.path.realpath(a.rootfs)  # cp -a of a link would copy the link
    missing = [t for t in ("podman", "conmon", "containerd", "ctr") if not shutil.which(t)]
    if missing or not runc or not os.access(lbbox_runc, os.X_OK):
        print(f"SKIP: missing {missing + ([] if runc else ['runc'])} or {lbbox_runc}")
        return 77
    subreaper()
    tmp = tempfile.mkdtemp(prefix="lbbox-bench-oci-")
    runtimes = {"lbbox-runc": lbbox_runc, "runc": runc}
    logs = {(e, rt): os.path.join(tmp, f"calls-{e}-{rt}.log")
            for e in ("podman", "ctr") for rt in runtimes}
    bridge = f"lbo{os.getpid() % 100000}"
    times = {k: [] for k in logs}
    ids = {k: [] for k in logs}  # the timed runs' names (podman's runtime sees its ids instead)
    try:
        run_podman(tmp, runtimes, logs, bridge, a, times, ids, rootfs)
        run_ctr(tmp, runtimes, logs, a, times, ids, rootfs)
    finally:
        for rt, binary in runtimes.items():
            delete_all(binary, [os.path.join(tmp, f"podman-root-{rt}"),
                                os.path.join(tmp, f"ctr-root-{rt}", "default")])
        host_clean(tmp, bridge, check)
        calls = {k: parse_log(log) for k, log in logs.items()}
        shutil.rmtree(tmp, ignore_errors=True)
    report(runtimes, calls, times, ids, a)
    return 1 if FAILS else 0


def run_podman(tmp, runtimes, logs, bridge, a, times, ids, rootfs):
    P = podman_cmd(tmp, bridge)
    wraps = {}
    for rt, binary in runtimes.items():
        # conmon's cleanup does not pass --runtime-flag on: the wrapper carries the --root
        wraps[rt] = os.path.join(tmp, f"podman-{rt}")
        wrapper(wraps[rt], binary, ["--root", os.path.join(tmp, f"podman-root-{rt}")],
                logs[("podman", rt)])
    with podman_host(P, bridge) as cleaned:
        r = podman_import(P, tmp, rootfs, IMG)
        check(r.returncode == 0, f"podman import ({r.stderr.strip()[-200:]})")
        if r.returncode == 0 and shutil.which("crun"):
            cw = os.path.join(tmp, "podman-crun")
            with open(cw, "w") as f:
                f.write(f"#!/bin/sh\nexec {shutil.which('crun')} --root {tmp}/crun-root \"$@\"\n")
            os.chmod(cw, 0o755)
            c = sh(P + ["--runtime", cw, "run", "--rm", "--network", "none"] + ULIMITS +
                   [IMG, "/bin/true"])
            NOTES.append("crun: not measured; one podman run with it: " +
                         ("it ran" if c.returncode == 0 else
                          f"exit {c.returncode}, {c.stderr.strip().splitlines()[-1:]}"))
        if r.returncode == 0:
            loop("podman", list(runtimes), a, times, ids, lambda rt, name: (
                P + ["--runtime", wraps[rt], "run", "--rm", "--name", name, "--network", "none"]
                + ULIMITS + [IMG, "/bin/true"]))
    check(not cleaned["left"],
          f"podman's cgroups and /var/lib/cni removed ({cleaned['left'][:2]})")


def run_ctr(tmp, runtimes, logs, a, times, ids, rootfs):
    d = os.path.join(tmp, "ctd")
    with containerd_host(d) as (ctr, ok):
        check(ok, "containerd answers on the benchmark's socket")
        if not ok:
            return
        copy = os.path.join(d, "rootfs")  # ctr --rootfs gives the runtime a writable root
        sh(["cp", "-a", rootfs, copy])
        wraps = {}
        for rt, binary in runtimes.items():
            wraps[rt] = os.path.join(tmp, f"ctr-{rt}")
            wrapper(wraps[rt], binary, [], logs[("ctr", rt)])
        names = []
        try:
            loop("ctr", list(runtimes), a, times, ids, lambda rt, name: (
                names.append(name) or
                ctr + ["run", "--rm", "--runtime", "io.containerd.runc.v2", "--runc-binary",
                       wraps[rt], "--runc-root", os.path.join(tmp, f"ctr-root-{rt}"),
                       "--rootfs", copy, name, "/bin/true"]))
        finally:
            ctr_remove(ctr, names)


def loop(engine, rts, a, times, ids, cmd):
    for i in range(a.warmup + a.n):
        order = rts if i % 2 == 0 else rts[::-1]
        for rt in order:
            name = f"bo-{rt}-{i}"
            ms, r = timed(cmd(rt, name))
            check(r.returncode == 0,
                  f"{engine} run with {rt} (run {i}): {r.returncode} {r.stderr.strip()[-300:]}")
            if r.returncode != 0:
                return
            if i >= a.warmup:
                times[(engine, rt)].append(ms)
                ids[(engine, rt)].append(name)


def share(calls, wanted_n, engine, names):
    """Per timed container: the sum of create + start + delete (ms) and the number of calls."""
    by_id = {}
    order = []  # container ids in the order of their create
    for verb, cid, ms in calls:
        if cid is None:
            continue
        if cid not in by_id:
            by_id[cid] = []
            if verb == "create":
                order.append(cid)
        by_id[cid].append((verb, ms))
    if engine == "podman":  # the runtime sees ids, not names: the timed runs are the last creates
        cids = order[-wanted_n:] if wanted_n else []
    else:
        cids = [n for n in names if n in by_id]
    sums, counts, verbs = [], [], {}
    for cid in cids:
        cs = by_id[cid]
        sums.append(sum(ms for v, ms in cs if v in ("create", "start", "delete")))
        counts.append(len(cs))
        for v, _ in cs:
            verbs[v] = verbs.get(v, 0) + 1
    return sums, counts, verbs, len(cids)


def report(runtimes, calls, times, ids, a):
    print(f"\n## OCI runtimes: podman / containerd, /bin/true in busybox, N={a.n} "
          f"(after {a.warmup} warm-ups, interleaved)\n")
    print(f"load: {open('/proc/loadavg').read().split()[:3]} ({os.cpu_count()} CPUs)\n")
    print("| engine | runtime | median ms | p90 ms | lbbox-runc / runc (median) |")
    print("| --- | --- | ---: | ---: | ---: |")
    figs = {}
    for e in ("podman", "ctr"):
        base = statistics.median(times[(e, "runc")]) if times[(e, "runc")] else None
        for rt in runtimes:
            xs = times[(e, rt)]
            if not xs:
                print(f"| {e} | {rt} | - | - | - |")
                continue
            med, q = statistics.median(xs), p90(xs)
            ratio = f"{med / base:.2f}" if base and rt == "lbbox-runc" else ""
            print(f"| {e} | {rt} | {med:.1f} | {q:.1f} | {ratio} |")
            figs[f"oci_{e}_{rt}"] = {"median": round(med, 1), "p90": round(q, 1)}
    print("\nThe runtime's own share: wall time inside the runtime binary (logged by a wrapper "
          "around it, the same for both), per container.\n")
    print("| engine | runtime | create+start+delete median ms | p90 ms | calls per container "
          "(median) | calls by verb (all timed containers) |")
    print("| --- | --- | ---: | ---: | ---: | --- |")
    for e in ("podman", "ctr"):
        for rt in runtimes:
            sums, counts, verbs, n = share(calls[(e, rt)], len(times[(e, rt)]), e,
                                           ids[(e, rt)])
            if not sums:
                print(f"| {e} | {rt} | - | - | - | - |")
                continue
            med = statistics.median(sums)
            vs = ", ".join(f"{v} {c}" for v, c in sorted(verbs.items(), key=lambda x: -x[1]))
            print(f"| {e} | {rt} | {med:.1f} | {p90(sums):.1f} | "
                  f"{statistics.median(counts):g} | {vs} ({n} containers) |")
            figs[f"oci_{e}_{rt}_runtime_csd"] = {"median": round(med, 1),
                                                 "p90": round(p90(sums), 1)}
    print("\nThe wrapper's bash start is in every end-to-end figure, for both runtimes alike; "
          "podman runs with --network none.")
    for n in NOTES or ["crun: not measured (not installed; it refuses hybrid cgroup hosts)"]:
        print(n)
    if os.environ.get("BENCH_OCI_JSON"):
        import json
        with open(os.environ["BENCH_OCI_JSON"], "w") as f:
            json.dump(figs, f)


if __name__ == "__main__":
    sys.exit(main())
