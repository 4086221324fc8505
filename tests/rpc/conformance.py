#!/usr/bin/env python3
"""Conformance of `lbbox box -s` with LangBot's Box RPC over stdio (spec §3, §6).

Speaks the wire protocol with the standard library only (no SDK: spec §10): starts lbbox as
LangBot does (argv `box -s --ws-control-port N`, LANGBOT_BOX_* environment), sends JSON lines
(chunked above 16 KiB as the SDK does), and checks replies, error classes, chunking, concurrency,
tenancy, the seed scenarios and the clean exit. Prints a Criterion-style Synthesis line.

usage: conformance.py LBBOX_BIN BUSYBOX_ROOTFS   (as root; a private runroot is used)
"""
import glob
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

LBBOX = os.path.abspath(sys.argv[1])
ROOTFS = os.path.abspath(os.environ.get("LBBOX_TEST_ROOTFS") or sys.argv[2])
CHUNK = 16384
IMAGE = "rockchin/langbot-sandbox:latest"
CTX = {"instance_uuid": "inst-1", "workspace_uuid": "ws-1", "placement_generation": 1}


def spec(session_id, cmd="", **kw):
    s = {"cmd": cmd, "workdir": "/workspace", "timeout_sec": 30, "network": "off",
         "session_id": session_id, "env": {}, "image": IMAGE, "host_path": None,
         "host_path_mode": "rw", "mount_path": "/workspace", "extra_mounts": [],
         "skill_name": None, "persistent": False, "cpus": 1.0, "memory_mb": 512,
         "pids_limit": 128, "read_only_rootfs": True, "workspace_quota_mb": 0}
    s.update(kw)
    return s


class Box:
    """One `lbbox box -s` child and a JSON-lines client for it (replies matched by seq_id)."""

    def __init__(self, tmp, env=None):
        self.runroot = os.path.join(tmp, "run")
        self.root = os.path.join(tmp, "root")
        os.makedirs(os.path.join(self.root, "images"), exist_ok=True)
        link = os.path.join(self.root, "images", "busybox")
        if not os.path.exists(link):
            os.makedirs(link)
            os.symlink(ROOTFS, os.path.join(link, "rootfs"))
        e = dict(os.environ, LANGBOT_BOX_TRUSTED_INSTANCE_UUID="inst-1",
                 LBBOX_BOX_IMAGE_ALIASES=IMAGE + "=busybox", LBBOX_BOX_PULL="0")
        e.update(env or {})
        self.p = subprocess.Popen([LBBOX, "--root", self.root, "--runroot", self.runroot, "box",
                                   "-s", "--ws-control-port", "5410"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e)
        self.seq = 1000
        self.replies = {}
        self.lines = []  # every raw line received
        self.cv = threading.Condition()
        self.wlock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        chunk = None
        for raw in self.p.stdout:
            line = raw.decode("utf-8")  # strict: the runtime must send valid UTF-8
            with self.cv:
                self.lines.append(line)
            m = json.loads(line)
            if m.get("type") == "chunk_start":
                chunk = []
                continue
            if m.get("type") == "chunk_data":
                assert m["offset"] == sum(len(c.encode()) for c in chunk), "bad offset"
                chunk.append(m["data"])
                continue
            if m.get("type") == "chunk_end":
                m = json.loads("".join(chunk))
                chunk = None
            with self.cv:
                self.replies[m["seq_id"]] = m
                self.cv.notify_all()

    def send_raw(self, text):
        with self.wlock:
            self.p.stdin.write(text.encode())
            self.p.stdin.flush()

    def send(self, action, data, context=CTX):
        self.seq += 1
        m = {"seq_id": self.seq, "action": action, "data": data}
        if context is not None:
            m["context"] = context
        text = json.dumps(m)
        b = text.encode()
        if len(b) <= CHUNK:
            self.send_raw(text + "\n")
        else:  # the SDK's chunking: pieces on character boundaries, byte offsets
            out, off = [json.dumps({"type": "chunk_start", "total_size": len(b)})], 0
            while off < len(b):
                piece = b[off:off + CHUNK].decode("utf-8", "ignore")
                out.append(json.dumps({"type": "chunk_data", "data": piece, "offset": off}))
                off += len(piece.encode())
            out.append(json.dumps({"type": "chunk_end"}))
            self.send_raw("\n".join(out) + "\n")
        return self.seq

    def wait(self, seq, timeout=60):
        with self.cv:
            ok = self.cv.wait_for(lambda: seq in self.replies, timeout)
            assert ok, "no reply to %d" % seq
            return self.replies.pop(seq)

    def call(self, action, data, context=CTX, timeout=60):
        return self.wait(self.send(action, data, context), timeout)

    def ok(self, action, data, context=CTX, timeout=60):
        r = self.call(action, data, context, timeout)
        assert r["code"] == 0, r
        assert set(r) >= {"seq_id", "code", "message", "data", "chunk_status"}, r
        assert r["message"] == "success" and r["chunk_status"] == "continue", r
        return r["data"]

    def err(self, action, data, prefix, context=CTX):
        r = self.call(action, data, context)
        assert r["code"] == 1 and r["data"] == {}, r
        assert r["message"].startswith(prefix), (r["message"], prefix)
        return r["message"]

    def close(self, timeout=10):
        if self.p.poll() is None:
            self.p.stdin.close()
        t0 = time.time()
        rc = self.p.wait(timeout)
        return rc, time.time() - t0


TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


@test
def handshake_ping_and_init(b):
    t0 = time.time()
    assert b.ok("__ping", {}, None) == {}
    assert time.time() - t0 < 1.0, "first __ping took %.2f s" % (time.time() - t0)
    assert b.ok("box_init", {"backend": "local", "limits": {"max_sessions": 64}}, None) == \
        {"initialized": True}
    info = b.ok("box_get_backend_info", {}, None)
    assert info == {"name": "lbbox", "available": True}, info
    health = b.ok("box_health", {}, None)
    assert health["available"] is True, health
    f = health["features"]  # beyond LangBot: what the host really gives
    assert f["namespaces"] is True and f["seccomp"] is True, f
    assert all(f["cgroups"][k] is True for k in ("memory", "pids", "cpu")), f


@test
def simple_exec_and_persistence(b):
    r = b.ok("box_exec", spec("u1", "echo hi > f; cat f; echo err >&2; pwd"))
    assert r["session_id"] == "u1" and r["status"] == "completed" and r["exit_code"] == 0, r
    assert r["stdout"] == "hi\n/workspace" and r["stderr"] == "err", r
    assert r["backend_name"] == "lbbox" and isinstance(r["duration_ms"], int)
    r = b.ok("box_exec", spec("u1", "cat f; exit 3"))
    assert r["stdout"] == "hi" and r["exit_code"] == 3, r
    b.ok("box_delete_session", {"session_id": "u1"})


@test
def timeout_drops_the_session(b):
    b.ok("box_exec", spec("t1", "echo x > /tmp/m"))
    r = b.ok("box_exec", spec("t1", "sleep 1000 & sleep 1000", timeout_sec=1))
    assert r["status"] == "timed_out" and r["exit_code"] is None, r
    assert r["stderr"] == "Command timed out after 1 seconds.", r
    b.err("box_get_session", {"session_id": "t1"}, "BoxSessionNotFoundError: ")
    r = b.ok("box_exec", spec("t1", "cat /tmp/m 2>/dev/null || echo fresh"))
    assert r["stdout"] == "fresh", r
    b.ok("box_delete_session", {"session_id": "t1"})


@test
def network_off(b):
    r = b.ok("box_exec", spec("n1", "cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '"))
    assert r["stdout"] == "lo", r
    b.ok("box_delete_session", {"session_id": "n1"})


@test
def session_shapes_reuse_conflict_and_details(b):
    s = b.ok("box_create_session", spec("c1"))
    keys = ["session_id", "backend_name", "backend_session_id", "image", "network", "host_path",
            "host_path_mode", "mount_path", "persistent", "cpus", "memory_mb", "pids_limit",
            "read_only_rootfs", "workspace_quota_mb", "created_at", "last_used_at"]
    assert list(s) == keys, list(s)
    assert s["session_id"] == "c1" and s["created_at"].endswith("Z"), s
    again = b.ok("box_create_session", spec("c1"))
    assert again["backend_session_id"] == s["backend_session_id"]
    msg = b.err("box_create_session", spec("c1", memory_mb=256), "BoxSessionConflictError: ")
    assert msg.endswith("already exists with memory_mb=512"), msg
    d = b.ok("box_get_session", {"session_id": "c1"})
    assert "managed_processes" not in d
    b.ok("box_start_managed_process", {"session_id": "c1", "spec": {"command": "cat"}})
    d = b.ok("box_get_session", {"session_id": "c1"})
    assert d["managed_process"]["process_id"] == "default", d
    assert d["managed_processes"]["default"]["session_id"] == "c1", d
    assert b.ok("box_delete_session", {"session_id": "c1"}) == {"deleted": "c1"}


@test
def managed_processes(b):
    b.ok("box_create_session", spec("m1"))
    info = b.ok("box_start_managed_process", {"session_id": "m1", "spec": {
        "process_id": "loop", "command": "sh", "args": ["-c", "while true; do sleep 1; done"],
        "env": {"B": "2", "A": "1"}}})
    assert info["status"] == "running" and info["env_keys"] == ["A", "B"], info
    assert info["exit_code"] is None and info["exited_at"] is None, info
    b.ok("box_start_managed_process", {"session_id": "m1", "spec": {
        "process_id": "done", "command": "sh", "args": ["-c", "echo done && exit 0"]}})
    for _ in range(100):
        d = b.ok("box_get_managed_process", {"session_id": "m1", "process_id": "done"})
        if d["status"] == "exited":
            break
        time.sleep(0.05)
    assert d["status"] == "exited" and d["exit_code"] == 0, d
    assert b.ok("box_get_managed_process", {"session_id": "m1", "process_id": "loop"})[
        "status"] == "running"
    assert b.ok("box_stop_managed_process", {"session_id": "m1", "process_id": "loop"}) == \
        {"stopped": "loop"}
    b.err("box_get_managed_process", {"session_id": "m1", "process_id": "loop"},
          "BoxManagedProcessNotFoundError: session ")
    st = b.ok("box_status", {})
    assert st["active_sessions"] == 1 and st["session_ttl_sec"] == 300, st
    assert st["limits"]["max_sessions"] == 64, st
    b.ok("box_delete_session", {"session_id": "m1"})


@test
def error_classes(b):
    b.err("nope", {}, "ValueError: Action nope not found")
    b.err("box_get_session", {}, "KeyError: 'session_id'")
    b.err("box_exec", spec("e1", ""), "BoxValidationError: cmd must not be empty")
    b.err("box_exec", spec("e1", "true", memory_mb=16), "BoxValidationError: memory_mb must be")
    b.err("box_delete_session", {"session_id": "e9"}, "BoxSessionNotFoundError: session ")
    b.err("box_upsert_sandbox_admission_grant", {}, "BoxAdmissionError: Sandbox admission "
          "enforcement is not enabled", None)
    b.err("box_get_sessions", {}, "PermissionError: Box action context does not match",
          dict(CTX, instance_uuid="other"))
    b.err("box_exec", spec("e1", "true", image="nothere:1"), "BoxError: image nothere:1 is not "
          "available")
    b.ok("box_init", {"limits": {"max_sessions": 1}}, None)
    b.ok("box_create_session", spec("cap1"))
    b.err("box_create_session", spec("cap2"), "BoxCapacityExceededError: Box session capacity "
          "reached (1)")
    b.err("box_init", {"limits": {"max_sessions": True}}, "ValueError: box.limits.max_sessions "
          "must be an integer", None)
    b.ok("box_init", {"limits": {"max_sessions": 64}}, None)
    b.ok("box_delete_session", {"session_id": "cap1"})


@test
def chunking_both_ways(b):
    big = "x" * 200000
    r = b.ok("box_exec", spec("k1", "printf %s " + big + " | wc -c"))
    assert r["stdout"] == "200000", r
    n = len(b.lines)
    r = b.ok("box_exec", spec("k1", "head -c 1048576 /dev/zero | tr '\\0' y"))
    assert r["stdout"] == "y" * 1048576
    new = b.lines[n:]
    assert any('"chunk_start"' in l for l in new), "a 1 MiB reply must be chunked"
    assert max(len(l.encode()) for l in new) < 65536, "a line reached 64 KiB"
    b.ok("box_delete_session", {"session_id": "k1"})


@test
def concurrent_execs_with_pings(b):
    seqs = [b.send("box_exec", spec("p%d" % i, "sleep 0.5; echo %d" % i)) for i in range(20)]
    t0 = time.time()
    ping = b.call("__ping", {}, None)
    assert ping["code"] == 0 and time.time() - t0 < 1.0, "ping waited %.2f s" % (time.time() - t0)
    for i, s in enumerate(seqs):
        r = b.wait(s, 120)
        assert r["code"] == 0 and r["data"]["stdout"] == str(i), r
    for i in range(20):
        b.ok("box_delete_session", {"session_id": "p%d" % i})


@test
def tenancy_and_generation_fence(b):
    b.ok("box_create_session", spec("person_test user!"))
    legacy = b.ok("box_get_sessions", {}, None)["sessions"]
    assert [s["session_id"] for s in legacy] == \
        ["ws-9d14934957e7ea8dcfa33291-g1-person_test-user"], legacy
    other = dict(CTX, workspace_uuid="ws-2")
    assert b.ok("box_get_sessions", {}, other)["sessions"] == [], "Workspaces see each other"
    mine = b.ok("box_get_sessions", {})["sessions"]
    assert [s["session_id"] for s in mine] == ["person_test-user"], mine  # prefix stripped
    b.ok("box_create_session", spec("g"), dict(CTX, placement_generation=2))
    b.err("box_get_sessions", {}, "PermissionError: Stale Box placement generation", CTX)
    for _ in range(100):  # older generations' sessions are removed in the background
        left = b.ok("box_get_sessions", {}, None)["sessions"]
        if len(left) == 1:
            break
        time.sleep(0.05)
    assert [s["session_id"] for s in left] == ["ws-9d14934957e7ea8dcfa33291-g2-g"], left
    b.ok("box_delete_session", {"session_id": "g"}, dict(CTX, placement_generation=2))


@test
def legacy_ids_are_verbatim(b):
    r = b.ok("box_exec", spec("person_12345", "echo legacy"), None)
    assert r["session_id"] == "person_12345" and r["stdout"] == "legacy", r
    b.ok("box_delete_session", {"session_id": "person_12345"}, None)


@test
def bad_lines_are_ignored(b):
    b.send_raw("not json\n{broken\n[1, 2]\n\n")
    assert b.ok("__ping", {}, None) == {}


@test
def wrong_shapes_get_errors_not_crashes(b):
    b.send_raw(json.dumps({"seq_id": 1, "action": "box_exec", "data": [1, 2]}) + "\n")
    r = b.wait(1)
    assert r["code"] == 1 and r["message"].startswith("ValueError: data must be an object"), r
    b.err("box_exec", spec(5, "true"), "BoxValidationError: ")  # session_id not a string
    b.err("box_get_managed_process", {"session_id": "nope", "process_id": 3},
          "BoxSessionNotFoundError: ")
    with b.wlock:  # a line that is not UTF-8 is dropped, the connection stays
        b.p.stdin.write(b'{"seq_id": 2, "action": "__ping", "data": {"x": "\xff"}}\n')
        b.p.stdin.flush()
    assert b.ok("__ping", {}, None) == {}, "alive after an invalid line"
    assert 2 not in b.replies, "the invalid line was answered"


def chunk_violation_closes(tmp):
    box = Box(tmp)
    box.ok("box_create_session", spec("v1"))
    box.send_raw(json.dumps({"type": "chunk_start", "total_size": 10}) + "\n" +
                 json.dumps({"type": "chunk_data", "data": "{}", "offset": 5}) + "\n")
    rc = box.p.wait(10)  # the connection is over: the runtime cleans up and exits
    assert rc == 0, rc
    assert not glob.glob(os.path.join(box.runroot, "box", "sessions", "*"))


def disconnect_mid_exec_cleans_up(tmp):
    box = Box(tmp)
    box.ok("box_create_session", spec("d1"))
    box.send("box_exec", spec("d1", "sleep 987659"))
    time.sleep(0.5)
    box.p.stdin.close()  # the client vanishes while the exec runs
    rc = box.p.wait(10)
    assert rc == 0, rc
    assert not glob.glob(os.path.join(box.runroot, "box", "sessions", "*"))
    left = subprocess.run(["pgrep", "-f", "sleep 987659"], capture_output=True).stdout
    assert not left, "the exec's process survived: %s" % left


def check_clean(box):
    left = [d for d in glob.glob(os.path.join(box.runroot, "*")) if not d.endswith("/box")]
    left += glob.glob(os.path.join(box.runroot, "box", "sessions", "*"))
    assert not left, "left behind: %s" % left
    cgs = glob.glob("/sys/fs/cgroup/*/lbbox-*") + glob.glob("/sys/fs/cgroup/*/*/*/lbbox-*")
    ours = [c for c in cgs if any(c.endswith(i) for i in box.ids)]
    assert not ours, "cgroups left: %s" % ours


def run_one(fn, tmp):
    box = Box(tmp)
    box.ids = []
    try:
        fn(box)
        for l in box.lines:
            if '"backend_session_id": "lbbox-' in l:
                box.ids += [l.split('"backend_session_id": "lbbox-')[1][:12]]
        rc, took = box.close()
        assert rc == 0, "exit status %d" % rc
        assert took < 5, "exit took %.1f s" % took
        check_clean(box)
    finally:
        if box.p.poll() is None:
            box.p.kill()
            box.p.wait()


@test
def eof_and_sigterm_drop_every_session(b):
    b.ok("box_create_session", spec("keep", persistent=True))
    b.ok("box_start_managed_process", {"session_id": "keep", "spec": {"command": "cat"}})


def sigterm_exit(tmp):
    box = Box(tmp)
    box.ok("box_create_session", spec("s1"))
    box.p.send_signal(signal.SIGTERM)
    rc = box.p.wait(10)
    assert rc == 0, rc
    assert not glob.glob(os.path.join(box.runroot, "box", "sessions", "*"))


def main():
    passed = failed = 0
    for fn in TESTS + [sigterm_exit, chunk_violation_closes, disconnect_mid_exec_cleans_up]:
        tmp = tempfile.mkdtemp(prefix="lbbox-rpc-")
        t0 = time.time()
        try:
            if fn in (sigterm_exit, chunk_violation_closes, disconnect_mid_exec_cleans_up):
                fn(tmp)
            else:
                run_one(fn, tmp)
            passed += 1
            print("[PASS] rpc::%s: (%.2fs)" % (fn.__name__, time.time() - t0), flush=True)
        except Exception:
            failed += 1
            print("[FAIL] rpc::%s" % fn.__name__, flush=True)
            traceback.print_exc()
        finally:
            subprocess.run([LBBOX, "--runroot", os.path.join(tmp, "run"), "--root",
                            os.path.join(tmp, "root"), "session", "gc", "--ttl", "1"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            shutil.rmtree(tmp, ignore_errors=True)
    print("[====] Synthesis: Tested: %d | Passing: %d | Failing: %d | Crashing: 0"
          % (passed + failed, passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
