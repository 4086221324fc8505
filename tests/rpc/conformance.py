#!/usr/bin/env python3
"""Conformance of lbbox with LangBot's Box RPC over stdio and WebSocket (spec §3, §6).

Speaks the wire protocol with the standard library only (no SDK: spec §10):
- stdio: starts `lbbox box -s --ws-control-port N --host 127.0.0.1` as LangBot does (LANGBOT_BOX_*
  environment), sends JSON lines (chunked above 16 KiB as the SDK does) and checks replies, error
  classes, chunking, concurrency, tenancy, the seed scenarios and the clean exit;
- WebSocket: the same tests against `lbbox serve --listen 127.0.0.1:N` over `GET /rpc/ws`
  (one JSON per text message, large ones fragmented), plus the HTTP side of both modes: /healthz,
  /readyz, the control token and instance headers (§6.8) and the managed-process relay (§6.9).
After every test the server is ended (stdin EOF or SIGTERM) and nothing may be left: no session
directory, no cgroup, no process. Prints Criterion-style [PASS]/[FAIL] lines and a Synthesis line.

usage: conformance.py LBBOX_BIN BUSYBOX_ROOTFS   (as root; private roots and free ports are used)
       LBBOX_RPC_FILTER='http_*::relay*' runs only the tests whose label matches (fnmatch).
"""
import base64
import ctypes
import fnmatch
import glob
import hashlib
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wsclient  # noqa: E402
from wsclient import HandshakeError  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
from sealed_exe import sealed_form  # noqa: E402

LBBOX = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else None
ROOTFS = os.path.abspath(os.environ.get("LBBOX_TEST_ROOTFS") or sys.argv[2]) \
    if len(sys.argv) > 2 or os.environ.get("LBBOX_TEST_ROOTFS") else None
CHUNK = 16384
WS_FRAGMENT = 16384  # our client sends messages over 64 KiB as fragments of this size
IMAGE = "rockchin/langbot-sandbox:latest"
CTX = {"instance_uuid": "inst-1", "workspace_uuid": "ws-1", "placement_generation": 1}
TOKEN = "lbbox-test-token-" + "0123456789abcdef" * 3  # >= 32 chars, no whitespace
HOST = "127.0.0.1"


def spec(session_id, cmd="", **kw):
    s = {"cmd": cmd, "workdir": "/workspace", "timeout_sec": 30, "network": "off",
         "session_id": session_id, "env": {}, "image": IMAGE, "host_path": None,
         "host_path_mode": "rw", "mount_path": "/workspace", "extra_mounts": [],
         "skill_name": None, "persistent": False, "cpus": 1.0, "memory_mb": 512,
         "pids_limit": 128, "read_only_rootfs": True, "workspace_quota_mb": 0}
    s.update(kw)
    return s


def namespace(instance, workspace):
    """§6.7: "ws-" + sha256(instance + "\\0" + workspace)[:24]."""
    return "ws-" + hashlib.sha256((instance + "\0" + workspace).encode()).hexdigest()[:24]


def physical(logical, ctx=CTX):
    """The physical session id of a (simple, already sanitised) logical id."""
    return "%s-g%d-%s" % (namespace(ctx["instance_uuid"], ctx["workspace_uuid"]),
                          ctx["placement_generation"], logical)


def free_port():
    s = socket.socket()
    s.bind((HOST, 0))
    port = s.getsockname()[1]
    s.close()
    return port


def poll(fn, timeout=5.0, step=0.05):
    """fn() until it is truthy or timeout; returns its last value."""
    deadline = time.time() + timeout
    while True:
        v = fn()
        if v or time.time() > deadline:
            return v
        time.sleep(step)


def collect_ids(obj, ids):
    """Every backend_session_id "lbbox-<id>" in a reply (for the cgroup check)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == "backend_session_id" and isinstance(v, str) and v.startswith("lbbox-"):
                if v[6:18] not in ids:
                    ids.append(v[6:18])
            else:
                collect_ids(v, ids)
    elif isinstance(obj, list):
        for v in obj:
            collect_ids(v, ids)


# -- RPC clients ---------------------------------------------------------------------------------
class Rpc:
    """Request/reply correlation by seq_id. Subclasses provide send_message(text) and a reader
    that calls _deliver(message) for each reply and _die(reason) when the connection ends."""

    def _init_rpc(self, ids):
        self.seq = 1000
        self.replies = {}
        self.lines = []  # every raw line (stdio) or text message (WebSocket) received
        self.cv = threading.Condition()
        self.dead = None
        self.ids = ids

    def _deliver(self, m):
        if not isinstance(m, dict) or "seq_id" not in m:
            return
        collect_ids(m, self.ids)
        with self.cv:
            self.replies[m["seq_id"]] = m
            self.cv.notify_all()

    def _die(self, reason):
        with self.cv:
            if self.dead is None:
                self.dead = reason
            self.cv.notify_all()

    def send(self, action, data, context=CTX):
        self.seq += 1
        m = {"seq_id": self.seq, "action": action, "data": data}
        if context is not None:
            m["context"] = context
        self.send_json(json.dumps(m))
        return self.seq

    def wait(self, seq, timeout=60):
        with self.cv:
            self.cv.wait_for(lambda: seq in self.replies or self.dead is not None, timeout)
            assert seq in self.replies, "no reply to %d (connection: %s)" % (
                seq, self.dead or "open")
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


class WsRpc(Rpc):
    """The RPC over one /rpc/ws WebSocket (one JSON per text message, §6.3)."""

    def __init__(self, ws, ids):
        self._init_rpc(ids)
        self.ws = ws
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        try:
            while True:
                ev = self.ws.recv(None, pings=False)
                if ev[0] == "close":
                    self._die(ev)
                    return
                if ev[0] == "binary":
                    self._die(("error", "the server sent a binary message"))
                    return
                with self.cv:
                    self.lines.append(ev[1])
                try:
                    m = json.loads(ev[1])
                except ValueError:
                    self._die(("error", "the server sent invalid JSON %r" % ev[1][:200]))
                    return
                self._deliver(m)
        except Exception as e:  # protocol violations, socket errors
            self._die(("error", "%s: %s" % (type(e).__name__, e)))

    def send_json(self, text):
        self.send_message(text)
        return json.loads(text)["seq_id"]

    def send_message(self, text):
        """One text message, fragmented above 64 KiB as the Python client does (§6.3)."""
        self.ws.send_text(text, WS_FRAGMENT if len(text.encode()) > 65536 else None)

    def close(self, timeout=5):
        """Close handshake; returns the server's close event (None if it never answered)."""
        if self.dead is None:
            try:
                self.ws.send_frame(wsclient.OP_CLOSE, b"\x03\xe8")
                self.ws.close_sent = True
            except OSError:
                pass
            self.reader.join(timeout)
        self.ws.abort()
        self.reader.join(1)
        return self.dead if self.dead and self.dead[0] == "close" else None

    def wait_closed(self, timeout=5):
        with self.cv:
            self.cv.wait_for(lambda: self.dead is not None, timeout)
            return self.dead


def prepare_root(root):
    """An lbbox root whose image "busybox" is the test rootfs."""
    os.makedirs(os.path.join(root, "images"), exist_ok=True)
    link = os.path.join(root, "images", "busybox")
    if not os.path.exists(link):
        os.makedirs(link)
        os.symlink(ROOTFS, os.path.join(link, "rootfs"))


class Server:
    """One lbbox process (stdio `box -s` or `serve`) with its private root, runroot and port."""

    kind = None

    def _setup(self, tmp, env, token, trusted, port, host=HOST, root=None):
        """root: an lbbox root to use instead of a fresh one in tmp (its images kept)."""
        self.tmp = tmp
        self.runroot = os.path.join(tmp, "run")
        self.root = root or os.path.join(tmp, "root")
        prepare_root(self.root)
        e = dict(os.environ, LBBOX_BOX_IMAGE_ALIASES=IMAGE + "=busybox", LBBOX_BOX_PULL="0")
        for k in ("LANGBOT_BOX_CONTROL_TOKEN", "LANGBOT_BOX_TRUSTED_INSTANCE_UUID",
                  "LBBOX_BOX_WS_PING_SEC", "LANGBOT_BOX_CONFIG"):
            e.pop(k, None)
        if trusted is not None:
            e["LANGBOT_BOX_TRUSTED_INSTANCE_UUID"] = trusted
        if token is not None:
            e["LANGBOT_BOX_CONTROL_TOKEN"] = token
        for k, v in (env or {}).items():
            if v is None:
                e.pop(k, None)
            else:
                e[k] = v
        self.env = e
        self.token = token
        self.trusted = trusted
        self.host = host
        self.port = port or free_port()
        self.ids = []
        self.stderr_lines = []
        self.sockets = []  # every WebSocket opened to this server (aborted at the end)
        self.conns = []  # every WsRpc opened to this server
        self.exited_ok = False  # the test ended the server itself and checked its exit

    def _start_stderr(self):
        self.stderr_done = threading.Event()  # set at EOF: every line is in stderr_lines

        def drain():
            for raw in self.p.stderr:
                self.stderr_lines.append(raw.decode("utf-8", "replace").rstrip("\n"))
            self.stderr_done.set()

        threading.Thread(target=drain, daemon=True).start()

    def stderr_text(self):
        return "\n".join(self.stderr_lines)

    # -- HTTP / WebSocket side -----------------------------------------------------------------
    def http_get(self, path, headers=None):
        self.wait_http()
        return wsclient.http_get(self.host, self.port, path, headers)

    def wait_http(self, timeout=5):
        """Until the HTTP side accepts connections."""
        deadline = time.time() + timeout
        while True:
            try:
                s = socket.create_connection((self.host, self.port), timeout=1)
                s.close()
                return
            except OSError:
                assert self.p.poll() is None, "lbbox exited (%s): %s" % (
                    self.p.returncode, self.stderr_text())
                assert time.time() < deadline, "nothing listens on %s:%d after %d s" % (
                    self.host, self.port, timeout)
                time.sleep(0.05)

    def ws(self, path, headers=None, subprotocols=None):
        self.wait_http()
        ws = wsclient.connect(self.host, self.port, path, headers, subprotocols)
        self.sockets.append(ws)
        return ws

    def refused(self, path, headers=None, subprotocols=None):
        """The HandshakeError of an upgrade the server must refuse."""
        self.wait_http()
        try:
            ws = wsclient.connect(self.host, self.port, path, headers, subprotocols)
        except HandshakeError as e:
            return e
        ws.abort()
        raise AssertionError("GET %s %r was upgraded" % (path, headers))

    def auth_headers(self, instance="inst-1", token=True):
        h = {}
        if token is True:
            token = self.token
        if token:
            h["X-LangBot-Box-Control-Token"] = token
        if instance:
            h["X-LangBot-Instance-Id"] = instance
        return h

    def connect_rpc(self, headers=None):
        """A new /rpc/ws RPC connection (default headers: the instance, the token if any)."""
        ws = self.ws("/rpc/ws", self.auth_headers() if headers is None else headers)
        c = WsRpc(ws, self.ids)
        self.conns.append(c)
        return c

    def relay_headers(self, ctx=CTX, token=True):
        h = self.auth_headers(ctx["instance_uuid"], token)
        h["X-LangBot-Workspace-Id"] = ctx["workspace_uuid"]
        h["X-LangBot-Placement-Generation"] = str(ctx["placement_generation"])
        return h

    def relay(self, logical, pid="default", ctx=CTX, headers=None):
        """Attach to a managed process as LangBot 0.5 does (physical id, headers, mcp)."""
        ws = self.ws(relay_path(physical(logical, ctx), pid),
                     self.relay_headers(ctx) if headers is None else headers, ["mcp"])
        assert ws.subprotocol == "mcp", "relay answered subprotocol %r" % ws.subprotocol
        return ws

    def kill(self):
        """After a failed test: SIGTERM first, so the runtime ends its actions' processes and
        sandboxes itself; SIGKILL only if it does not exit."""
        for ws in self.sockets:
            ws.abort()
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()


def relay_path(physical_id, pid="default"):
    if pid is None:  # the legacy route: process "default"
        return "/v1/sessions/%s/managed-process/ws" % physical_id
    return "/v1/sessions/%s/managed-process/%s/ws" % (physical_id, pid)


class Box(Server, Rpc):
    """One `lbbox box -s` child and a JSON-lines client for it (replies matched by seq_id).
    Its HTTP side (health, /rpc/ws, relay) listens on 127.0.0.1:<a free port>."""

    kind = "stdio"

    def __init__(self, tmp, env=None, token=None, trusted="inst-1", port=None, prefix=(),
                 host=HOST, cwd=None, root=None):
        self._setup(tmp, env, token, trusted, port, host, root)
        self._init_rpc(self.ids)
        # prefix: e.g. setpriv, to run the runtime as another user
        self.p = subprocess.Popen(list(prefix) + [LBBOX, "--root", self.root, "--runroot", self.runroot, "box",
                                   "-s", "--ws-control-port", str(self.port), "--host", self.host],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=self.env, cwd=cwd)
        self.wlock = threading.Lock()
        self._start_stderr()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        chunk = None
        try:
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
                self._deliver(m)
            self._die("EOF on stdout")
        except Exception as e:
            self._die("reader: %s: %s" % (type(e).__name__, e))

    def send_raw(self, text):
        with self.wlock:
            self.p.stdin.write(text.encode())
            self.p.stdin.flush()

    def send_message(self, text):
        self.send_raw(text + "\n")

    def send_json(self, text):
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
        return json.loads(text)["seq_id"]

    def close(self, timeout=10):
        """stdin EOF: the runtime drops every session and exits. (rc, seconds it took)"""
        if self.p.poll() is None:
            self.p.stdin.close()
        t0 = time.time()
        rc = self.p.wait(timeout)
        return rc, time.time() - t0


class WsBox(Server):
    """One `lbbox serve --listen 127.0.0.1:PORT` and an RPC connection to its /rpc/ws; offers the
    same send/wait/call/ok/err/lines API as Box (delegated to that connection)."""

    kind = "serve"

    def __init__(self, tmp, env=None, token=None, trusted="inst-1", port=None, connect=True,
                 listen_host=HOST, cwd=None, root=None):
        self._setup(tmp, env, token, trusted, port, root=root)
        self.p = subprocess.Popen([LBBOX, "--root", self.root, "--runroot", self.runroot, "serve",
                                   "--listen", "%s:%d" % (listen_host, self.port)],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=self.env, cwd=cwd)
        self._start_stderr()
        threading.Thread(target=lambda: self.p.stdout.read(), daemon=True).start()
        self.rpc = self.connect_rpc() if connect else None

    def __getattr__(self, name):  # send, wait, call, ok, err, send_message, lines, replies
        if name in ("send", "wait", "call", "ok", "err", "send_message", "send_json", "lines",
                    "replies", "seq", "dead"):
            return getattr(self.__dict__["rpc"], name)
        raise AttributeError(name)

    def close(self, timeout=10):
        """Closes its connections, then SIGTERM: exit 0 after dropping every session."""
        for c in self.conns:
            c.close(2)
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
        t0 = time.time()
        rc = self.p.wait(timeout)
        return rc, time.time() - t0


# -- cleanliness ---------------------------------------------------------------------------------
def leftover_processes(tmp):
    """Processes whose command line names this test's directory."""
    left = []
    for d in glob.glob("/proc/[0-9]*"):
        try:
            with open(d + "/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if tmp in cmd and int(d[6:]) != os.getpid():
            left.append("%s: %s" % (d[6:], cmd))
    return left


def check_clean(box):
    left = [d for d in glob.glob(os.path.join(box.runroot, "*")) if not d.endswith("/box")]
    for sub in ("sessions", "live", "running", "exited"):  # the records and their indexes
        left += glob.glob(os.path.join(box.runroot, "box", sub, "*"))
    assert not left, "left behind: %s" % left
    cgs = (glob.glob("/sys/fs/cgroup/*/lbbox-*") + glob.glob("/sys/fs/cgroup/*/*/lbbox-*") +
           glob.glob("/sys/fs/cgroup/*/*/*/lbbox-*"))
    ours = [c for c in cgs if any(c.endswith(i) for i in box.ids)]
    assert not ours, "cgroups left: %s" % ours
    with open("/proc/self/mountinfo") as f:  # a workspace's tmpfs lives in its sandbox alone
        mounts = [ln for ln in f if box.tmp in ln]
    assert not mounts, "mounts left: %s" % mounts
    poll(lambda: not leftover_processes(box.tmp), 2.0)  # (processes just exiting)
    procs = leftover_processes(box.tmp)
    assert not procs, "processes left: %s" % procs


class Harness:
    """The servers of one test; finish() ends each (EOF / SIGTERM) and checks it left nothing."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.servers = []
        self.cleanups = []  # run after every server of the test ended, pass or fail

    def start(self, kind, **kw):
        cls = Box if kind == "stdio" else WsBox
        s = cls(self.tmp, **kw)
        self.servers.append(s)
        return s

    def finish(self):
        """Every server ended first (several may share a directory), then each checked."""
        for s in self.servers:
            if not s.exited_ok:
                assert s.p.poll() is None, "lbbox died during the test (status %s)" % (
                    s.p.returncode,)
                rc, took = s.close()
                assert rc == 0, "exit status %d" % rc
                assert took < 5, "exit took %.1f s" % took
            for ws in s.sockets:
                ws.abort()
        for s in self.servers:
            check_clean(s)

    def kill(self):
        for s in self.servers:
            s.kill()

    def stderr_tails(self):
        out = []
        for s in self.servers:
            if s.stderr_lines:
                out.append("--- lbbox %s stderr (last 30 lines) ---\n%s" % (
                    s.kind, "\n".join(s.stderr_lines[-30:])))
        return "\n".join(out)


# -- tests over both RPC transports (b: a Box or a WsBox) ----------------------------------------
def registry():
    """A list of test functions and the decorator that adds to it."""
    fns = []

    def add(fn):
        fns.append(fn)
        return fn
    return fns, add


TESTS, test = registry()


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


def children(pid):
    """{child pid: (comm, state)} of the process pid."""
    out = {}
    for d in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(d) as f:
                st = f.read()
        except OSError:
            continue
        rest = st[st.rindex(")") + 2:].split()
        if int(rest[1]) == pid:
            out[int(d.split("/")[2])] = (st[st.index("(") + 1:st.rindex(")")], rest[0])
    return out


@test
def session_processes_come_back_to_the_runtime(b):
    """The runtime is its sessions' subreaper: a session's pid 1 outlives the job that made it
    and becomes the runtime's child, so when the session goes it is reaped at once, never left a
    zombie for the host's init (which may reap late, or never, as pid 1 of a container)."""
    b.ok("box_exec", spec("z1", "true"))

    def inits_now():
        return [c for c, (comm, _) in children(b.p.pid).items() if comm == "lbbox-init"]
    # the reply may come before the job that made the session has exited (jobs.c), and pid 1
    # becomes the runtime's child only then
    assert poll(lambda: len(inits_now()) == 1, 5.0), (
        "the session's pid 1 is not the runtime's child: %s" % (children(b.p.pid),))
    inits = inits_now()
    b.ok("box_delete_session", {"session_id": "z1"})
    assert poll(lambda: inits[0] not in children(b.p.pid), 5.0), (
        "the session's pid 1 was not reaped: %s" % (children(b.p.pid),))


@test
def jobs_are_reaped_after_their_replies(b):
    """A job's reply goes out once complete, before the job has exited (the teardown of its
    memory); a job still exiting then is reaped with the next SIGCHLD, never left a zombie."""
    for _ in range(10):
        b.ok("box_exec", spec("r1", "true"))
    for s in [b.send("box_exec", spec("r1", "true")) for _ in range(10)]:
        r = b.wait(s, 60)
        assert r["code"] == 0, r

    def no_zombie():
        return all(state != "Z" for _, state in children(b.p.pid).values())
    assert poll(no_zombie, 5.0), "jobs left zombies: %s" % (children(b.p.pid),)
    b.ok("box_delete_session", {"session_id": "r1"})


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
    assert info["attached"] is False, info
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
def status_counts_stay_right_with_many_sessions(b):
    """box_status counts the caller's sessions and running managed processes from the session
    directories' names (no record read but a hashed name's): right with several Workspaces, a
    session whose id is too long to name its directory, and as sessions and processes go."""
    other = dict(CTX, workspace_uuid="ws-2")
    long_id = "L" * 90  # its physical id is over 100 bytes: its directory has a hashed name
    mine = ["a%d" % i for i in range(10)] + [long_id]
    for sid in mine:
        b.ok("box_create_session", spec(sid))
    for i in range(4):
        b.ok("box_create_session", spec("b%d" % i), other)
    sleep = {"command": "sleep", "args": ["1000"]}
    for sid in ("a0", "a1", long_id):
        b.ok("box_start_managed_process", {"session_id": sid, "spec": sleep})
    b.ok("box_start_managed_process", {"session_id": "b0", "spec": sleep}, other)

    def counts(ctx=CTX):
        st = b.ok("box_status", {}, ctx)
        return st["active_sessions"], st["managed_processes"]
    assert counts() == (11, 3), counts()
    assert counts(other) == (4, 1), counts(other)
    b.ok("box_stop_managed_process", {"session_id": "a1", "process_id": "default"})
    for sid in mine[5:]:
        b.ok("box_delete_session", {"session_id": sid})
    b.ok("box_delete_session", {"session_id": "b3"}, other)
    assert counts() == (5, 1), counts()
    assert counts(other) == (3, 1), counts(other)
    assert len(b.ok("box_get_sessions", {})["sessions"]) == 5
    for sid in mine[:5]:
        b.ok("box_delete_session", {"session_id": sid})
    for i in range(3):
        b.ok("box_delete_session", {"session_id": "b%d" % i}, other)
    assert counts() == (0, 0) and counts(other) == (0, 0)


def wait_exited(b, sid, pid):
    d = poll(lambda: (lambda i: i if i["status"] == "exited" else None)(
        b.ok("box_get_managed_process", {"session_id": sid, "process_id": pid})), 10.0)
    assert d, "%s never exited" % pid
    return d


@test
def managed_process_memory_mb(b):
    """memory_mb of a managed process (§1.6) is its own cgroup's limit, at most the session's
    (refused above it, before the running process of that id is replaced); beyond it that
    process alone is OOM-killed (137, as any SIGKILL), the session and its others live on."""
    b.ok("box_create_session", spec("mm1", memory_mb=256))
    start = {"session_id": "mm1", "spec": {"process_id": "small", "command": "sleep",
                                           "args": ["1000"], "memory_mb": 40}}
    assert b.ok("box_start_managed_process", start)["status"] == "running"
    b.err("box_start_managed_process", dict(start, spec=dict(start["spec"], memory_mb=257)),
          "BoxValidationError: memory_mb=257 exceeds the session's memory_mb=256")
    assert b.ok("box_get_managed_process", {"session_id": "mm1", "process_id": "small"})[
        "status"] == "running"
    # the sandbox sees its cgroups (read-only): the process's own has 40 MiB
    r = b.ok("box_exec", spec("mm1", "cat /sys/fs/cgroup/memory/proc-*/memory.limit_in_bytes "
                              "2>/dev/null || cat /sys/fs/cgroup/proc-*/memory.max",
                              memory_mb=256))
    assert r["stdout"] == "41943040", r
    b.ok("box_start_managed_process", {"session_id": "mm1", "spec": {
        "process_id": "hog", "command": "dd", "memory_mb": 40,
        "args": ["if=/dev/zero", "of=/dev/null", "bs=100M", "count=1"]}})
    d = wait_exited(b, "mm1", "hog")
    assert d["exit_code"] == 137, d
    assert b.ok("box_get_managed_process", {"session_id": "mm1", "process_id": "small"})[
        "status"] == "running"
    assert b.ok("box_exec", spec("mm1", "echo alive", memory_mb=256))["stdout"] == "alive"
    b.ok("box_delete_session", {"session_id": "mm1"})


@test
def hard_workspace_quota(b):
    """workspace_quota_mb on a session's own workspace is hard: a tmpfs of that size in the
    sandbox, writes past it fail with ENOSPC and the session lives on; box_health says which
    workspaces get a hard quota."""
    h = b.ok("box_health", {}, None)["hard_workspace_quota"]
    assert h["own_workspace"] is True and h["host_path"] is False, h
    r = b.ok("box_exec", spec("q1", "dd if=/dev/zero of=a bs=1024 count=2048; echo rc=$?; "
                              "wc -c < a", workspace_quota_mb=1))
    assert r["stdout"] == "rc=1\n1048576", r
    assert "No space left on device" in r["stderr"], r
    r = b.ok("box_exec", spec("q1", "rm a && echo x > b && cat b", workspace_quota_mb=1))
    assert r["stdout"] == "x", r
    b.ok("box_delete_session", {"session_id": "q1"})


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
    """stdio: SDK chunking both ways, no line over 64 KiB. WebSocket: no chunk protocol, a 200 KB
    request sent as one fragmented message, a 1 MiB reply as one message (§6.2, §6.3)."""
    big = "x" * 200000
    r = b.ok("box_exec", spec("k1", "printf %s " + big + " | wc -c"))
    assert r["stdout"] == "200000", r
    n = len(b.lines)
    r = b.ok("box_exec", spec("k1", "head -c 1048576 /dev/zero | tr '\\0' y"))
    assert r["stdout"] == "y" * 1048576
    new = b.lines[n:]
    if b.kind == "stdio":
        assert any('"chunk_start"' in l for l in new), "a 1 MiB reply must be chunked"
        assert max(len(l.encode()) for l in new) < 65536, "a line reached 64 KiB"
    else:
        assert len(new) == 1 and '"chunk_start"' not in new[0], \
            "WebSocket replies are not chunked: %d messages" % len(new)
    seq = b.send_json(max_message(999))  # exactly 16 MiB: the limit, inclusive
    assert b.wait(seq, 60)["code"] == 0
    b.ok("box_delete_session", {"session_id": "k1"})


def max_message(seq, size=16 * 1024 * 1024):
    """A __ping request of exactly `size` bytes."""
    m = json.dumps({"seq_id": seq, "action": "__ping", "data": {"pad": ""}})
    return m.replace('"pad": ""', '"pad": "%s"' % ("z" * (size - len(m))))


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
    assert namespace("inst-1", "ws-1") == "ws-9d14934957e7ea8dcfa33291"
    assert namespace("instance-a", "workspace-a") == "ws-695136eeae1cb9b6af4a8226"  # §6.7
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
    """Malformed JSON and non-objects with no seq_id to answer are ignored, one line on stderr
    each ("{...}" lines, as LangBot logs them); the connection stays."""
    n = len(b.lines)
    if b.kind == "stdio":
        b.send_raw("not json\n{broken\n{broken}\n[1, 2]\n\n")
        ignored = 1  # lines that do not look like "{...}" are skipped without a word (§6.2)
    else:
        for m in ("not json", "{broken", "[1, 2]", "", "42", '"text"', "null", "{" * 100):
            b.send_message(m)
        ignored = 8
    assert b.ok("__ping", {}, None) == {}
    assert len(b.lines) == n + 1, "answers to ignored messages: %r" % b.lines[n:]
    logged = lambda: [l for l in b.stderr_lines if "lbbox: ignored a message" in l]
    assert poll(lambda: len(logged()) == ignored, 2), "stderr: %r" % b.stderr_lines


def raw_request(seq, action, data_text):
    """A request whose data is given as JSON text (for what json.dumps would not write)."""
    return '{"seq_id": %d, "action": "%s", "data": %s}' % (seq, action, data_text)


@test
def requests_jansson_cannot_read_are_answered(b):
    """What Python's json.loads reads but jansson does not -- integers beyond int64, reals that
    overflow, NUL in strings -- and JSON that is broken after its seq_id: every such request is
    answered (spec §6.4: LangBot answers whatever it decodes), none is left to time out."""
    big = "99999999999999999999999"
    cases = [
        (raw_request(11, "box_exec", '{"session_id": "j1", "cmd": "true", "memory_mb": %s}'
                     % big), "BoxValidationError: memory_mb must be at most 8796093022207"),
        (raw_request(12, "box_exec", '{"session_id": "j1", "cmd": "true", "pids_limit": -%s}'
                     % big), "BoxValidationError: pids_limit must be at least 1"),
        (raw_request(13, "box_exec", '{"session_id": "j1", "cmd": "true", "timeout_sec": %s}'
                     % big), "BoxValidationError: timeout_sec must be at most 315360000"),
        (raw_request(14, "box_exec", '{"session_id": "j1\\u0000x", "cmd": "true"}'),
         "BoxValidationError: data.session_id: a string must not contain NUL (\\u0000)"),
        (raw_request(15, "box_exec", '{"session_id": "j1", "cmd": "true", "env": {"K\\u0000": '
                     '"v"}}'), "BoxValidationError: an object key must not contain NUL"),
        (raw_request(16, "box_exec", '{"session_id": "j1", "cmd": "true", "cpus": NaN}'),
         "ValueError: malformed request: "),
        ('{"seq_id": 17, "action": 5, "data": {}}', "ValueError: action must be a string"),
        ('{"seq_id": 18, "action": "box_exec", "data": {"session_id": "j1", "cmd": }',
         "ValueError: malformed request: "),
    ]
    for text, _ in cases:
        b.send_message(text)
    for text, prefix in cases:
        seq = int(text.split(",")[0].split(":")[1])
        r = b.wait(seq, 10)
        assert r["code"] == 1 and r["data"] == {} and r["message"].startswith(prefix), (text, r)
    b.send_message(raw_request(19, "__ping", '{"x": 1e999, "y": %s}' % big))
    assert b.wait(19, 10)["code"] == 0, "a number beyond double or int64 where none is needed"
    assert b.ok("box_get_sessions", {}, None)["sessions"] == [], "a refused request left one"


def host_cpus():
    return len(os.sched_getaffinity(0))


@test
def values_that_cannot_be_converted_are_refused(b):
    """cpus against this host's CPUs (docker's range), and memory_mb / pids_limit /
    timeout_sec / workspace_quota_mb beyond what converts to bytes, pids.max or a deadline:
    BoxValidationError before anything is created, never a raw cgroup error."""
    n = host_cpus()
    rng = "the range of CPUs is from 0.01 to %d.00, as there are only %d CPUs available" % (n, n)
    for cpus in (1e12, n + 0.5, 0.001, 1e308):
        msg = b.err("box_create_session", spec("v1", cpus=cpus), "BoxValidationError: cpus=")
        assert msg.endswith("is out of range: " + rng), msg
    for field, value, text in (("memory_mb", 2 ** 62, "memory_mb must be at most 8796093022207"),
                               ("memory_mb", 2 ** 43, "memory_mb must be at most 8796093022207"),
                               ("pids_limit", 2 ** 62, "pids_limit must be at most 4194304"),
                               ("timeout_sec", 2 ** 62, "timeout_sec must be at most 315360000"),
                               ("workspace_quota_mb", 2 ** 62,
                                "workspace_quota_mb must be at most 8796093022207")):
        b.err("box_exec", spec("v1", "true", **{field: value}), "BoxValidationError: " + text)
    assert b.ok("box_get_sessions", {}, None)["sessions"] == [], "a refused request left one"
    r = b.ok("box_exec", spec("v2", "cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us 2>/dev/null || "
                              "cut -d' ' -f1 /sys/fs/cgroup/cpu.max", cpus=float(n)))
    assert r["stdout"] == str(n * 100000), r  # the host's full range is accepted
    b.ok("box_delete_session", {"session_id": "v2"})


@test
def mount_paths_lbbox_refuses(b):
    """mount_path / (it broke the session), /proc, /sys, /dev and below, and paths with "..":
    BoxValidationError, for the workspace and for extra mounts alike."""
    cases = [("/", "mount_path must not be /"), ("//./", "mount_path must not be /"),
             ("/proc", "mount_path /proc must not be /proc or under it"),
             ("/sys/fs/cgroup", "mount_path /sys/fs/cgroup must not be /sys or under it"),
             ("/./dev", "mount_path /./dev must not be /dev or under it"),
             ("/workspace/../etc", "mount_path /workspace/../etc must not contain '..'"),
             ("rel", "mount_path must be an absolute path inside the sandbox")]
    for path, text in cases:
        b.err("box_create_session", spec("m1", mount_path=path),
              "BoxValidationError: " + text)
        extra = [{"host_path": "/tmp", "mount_path": path, "mode": "ro"}]
        b.err("box_create_session", spec("m1", extra_mounts=extra),
              "BoxValidationError: " + text)
    assert b.ok("box_get_sessions", {}, None)["sessions"] == []
    r = b.ok("box_exec", spec("m2", "pwd", mount_path="/data", workdir=None))
    assert r["stdout"] == "/data", r
    b.ok("box_delete_session", {"session_id": "m2"})


@test
def control_characters_in_ids_refused(b):
    """Session and managed-process ids with a control character: BoxValidationError, in every
    action that names one, with a context or without (legacy ids are used verbatim)."""
    for ctx in (CTX, None):
        for sid in ("a\x1b[31m", "a\x07", "a\x7f", "a\nb"):
            b.err("box_create_session", spec(sid), "BoxValidationError: session_id must not "
                  "contain control characters", ctx)
            for action in ("box_get_session", "box_delete_session"):
                b.err(action, {"session_id": sid}, "BoxValidationError: session_id must not "
                      "contain control characters", ctx)
    b.ok("box_create_session", spec("i1"))
    b.err("box_start_managed_process", {"session_id": "i1", "spec": {
        "command": "cat", "process_id": "p\x1b]0;x\x07"}},
        "BoxValidationError: process_id must not contain control characters")
    for action in ("box_get_managed_process", "box_stop_managed_process"):
        b.err(action, {"session_id": "i1", "process_id": "p\x1b"},
              "BoxValidationError: process_id must not contain control characters")
    ok = b.ok("box_create_session", spec("caf\u00e9 \u2713"), None)  # printable unicode is fine
    assert ok["session_id"] == "caf\u00e9 \u2713", ok
    b.ok("box_delete_session", {"session_id": "caf\u00e9 \u2713"}, None)
    b.ok("box_delete_session", {"session_id": "i1"})


@test
def wrong_shapes_get_errors_not_crashes(b):
    b.send_message(json.dumps({"seq_id": 1, "action": "box_exec", "data": [1, 2]}))
    r = b.wait(1)
    assert r["code"] == 1 and r["message"].startswith("ValueError: data must be an object"), r
    b.err("box_exec", spec(5, "true"), "BoxValidationError: ")  # session_id not a string
    b.err("box_get_managed_process", {"session_id": "nope", "process_id": 3},
          "BoxSessionNotFoundError: ")
    if b.kind == "stdio":  # (a WebSocket text message is UTF-8 by construction)
        with b.wlock:  # a line that is not UTF-8 is answered, the connection stays
            b.p.stdin.write(b'{"seq_id": 2, "action": "__ping", "data": {"x": "\xff"}}\n')
            b.p.stdin.flush()
        r = b.wait(2, 10)
        assert r["code"] == 1 and r["message"].startswith(
            "ValueError: malformed request: unable to decode byte 0xff"), r
        assert b.ok("__ping", {}, None) == {}, "alive after an invalid line"


@test
def shutdown_during_generation_cleanup(b):
    """A newer generation makes the runtime remove the older one's sessions in the background;
    ending the runtime right then must still leave nothing behind."""
    for i in range(3):
        b.ok("box_create_session", spec("old%d" % i))
        b.ok("box_start_managed_process", {"session_id": "old%d" % i, "spec": {
            "command": "sh", "args": ["-c", "while true; do sleep 1; done"]}})
    b.ok("box_get_sessions", {}, dict(CTX, placement_generation=2))


@test
def newer_generation_cancels_older_actions(b):
    """§6.7: an exec of generation 1 still running when generation 2 arrives ends at once (the
    cleanup of generation 1's sessions takes its sandbox away) and is answered with the
    stale-generation error; its session and process are gone."""
    b.ok("box_create_session", spec("slow"))
    seq = b.send("box_exec", spec("slow", "sleep 987658; echo never"))
    time.sleep(0.5)
    t0 = time.time()
    b.ok("box_get_sessions", {}, dict(CTX, placement_generation=2))
    r = b.wait(seq, 10)
    assert r["code"] == 1 and r["message"] == "PermissionError: Stale Box placement generation", r
    assert time.time() - t0 < 5, "the old exec was not cancelled (%.1f s)" % (time.time() - t0)
    assert poll(lambda: b.ok("box_get_sessions", {}, None)["sessions"] == [], 10), \
        "the older generation's session stayed"
    assert poll(lambda: not subprocess.run(["pgrep", "-f", "sleep 987658"],
                                           capture_output=True).stdout, 5), "the exec survived"


@test
def eof_and_sigterm_drop_every_session(b):
    """Persistent session + managed process: stdin EOF (stdio) or SIGTERM (serve) drops it all."""
    b.ok("box_create_session", spec("keep", persistent=True))
    b.ok("box_start_managed_process", {"session_id": "keep", "spec": {"command": "cat"}})


@test
def box_shutdown_drops_sessions_and_keeps_serving(b):
    """box_shutdown: {} back; every session of this runtime (persistent ones, their managed
    processes and sandboxes too) is gone, and the runtime goes on serving new ones."""
    b.ok("box_create_session", spec("keep", persistent=True))
    b.ok("box_create_session", spec("plain"))
    b.ok("box_start_managed_process", {"session_id": "keep", "spec": {"command": "cat"}})
    assert len(sandbox_dirs(b)) == 2, sandbox_dirs(b)
    assert b.ok("box_shutdown", {}, None) == {}
    assert b.ok("box_get_sessions", {}) == {"sessions": []}
    assert b.ok("box_status", {})["active_sessions"] == 0
    assert poll(lambda: not session_dirs(b) and not sandbox_dirs(b), 10), \
        (session_dirs(b), sandbox_dirs(b))
    b.ok("__ping", {}, None)
    r = b.ok("box_exec", spec("again", "echo still-serving"))
    assert r["exit_code"] == 0 and r["stdout"] == "still-serving", r


# -- stdio-only tests (h: Harness) ---------------------------------------------------------------
STDIO_ONLY, stdio_only = registry()


def exit_line(box, why):
    """The one line the runtime wrote on stderr about its exit (besides "listening on")."""
    box.stderr_done.wait(5)
    lines = [l for l in box.stderr_lines if not l.startswith("lbbox: listening on ")]
    assert len(lines) == 1 and why in lines[0], "expected one line with %r: %r" % (why, lines)
    return lines[0]


@stdio_only
def status_and_capacity_follow_the_running_index(h):
    """box_status and the managed-process capacity read RUNROOT/box/live and box/running (an
    entry per live session and per running process), not every session: the entries follow
    start, exit, replace, stop and delete; a keeper killed outright leaves a stale entry that
    box_status counts until the next start's capacity check removes it (none refuses forever);
    a hashed session id matches its tenant's prefix."""
    box = h.start("stdio", env={"LBBOX_BOX_MAX_PROCESSES": "2"})
    other = dict(CTX, workspace_uuid="ws-2")
    long_id = "L" * 90  # its physical id is over 100 bytes: a hashed name
    running_dir = os.path.join(box.runroot, "box", "running")
    live_dir = os.path.join(box.runroot, "box", "live")

    def entries():
        return sorted(os.listdir(running_dir)) if os.path.isdir(running_dir) else []

    def counts(ctx=CTX):
        st = box.ok("box_status", {}, ctx)
        return st["active_sessions"], st["managed_processes"]

    def start(sid, pid, cmd="sleep", args=("1000",), ctx=CTX):
        return box.ok("box_start_managed_process", {"session_id": sid, "spec": {
            "process_id": pid, "command": cmd, "args": list(args)}}, ctx)

    for sid in ("s1", "s2", long_id):
        box.ok("box_create_session", spec(sid))
    box.ok("box_create_session", spec("o1"), other)
    assert len(os.listdir(live_dir)) == 4, os.listdir(live_dir)
    assert counts() == (3, 0) and counts(other) == (1, 0), (counts(), counts(other))
    start("s1", "a")
    assert counts() == (3, 1) and len(entries()) == 1, (counts(), entries())
    start("s1", "quick", "sh", ["-c", "exit 0"])
    wait_exited(box, "s1", "quick")
    assert counts() == (3, 1) and len(entries()) == 1, (counts(), entries())
    first = entries()
    start("s1", "a")  # replaced: a new keeper, the same count
    assert counts() == (3, 1) and entries() == first, (counts(), entries())
    start(long_id, "h")
    assert counts() == (3, 2) and counts(other) == (1, 0), (counts(), counts(other))
    assert [e for e in entries() if e.startswith("~")], entries()
    box.err("box_start_managed_process", {"session_id": "s2", "spec": {
        "process_id": "x", "command": "sleep", "args": ["1000"]}},
        "BoxCapacityExceededError: Box managed process capacity reached (2)")
    # the hashed session's keeper is killed outright: its entry stays, counted by status
    hashed = [e for e in entries() if e.startswith("~")][0]
    keeper = int(os.readlink(os.path.join(running_dir, hashed)).split()[0])
    os.kill(keeper, signal.SIGKILL)
    assert poll(lambda: not os.path.exists("/proc/%d" % keeper), 5)
    assert counts() == (3, 2), counts()
    start("s2", "x")  # the capacity check validated the index: the stale entry went
    assert hashed not in entries() and len(entries()) == 2, entries()
    assert counts() == (3, 2), counts()
    box.ok("box_stop_managed_process", {"session_id": "s1", "process_id": "a"})
    assert counts() == (3, 1) and len(entries()) == 1, (counts(), entries())
    box.ok("box_delete_session", {"session_id": "s2"})  # with its running process
    assert counts() == (2, 0) and entries() == [], (counts(), entries())
    box.ok("box_stop_managed_process", {"session_id": long_id, "process_id": "h"})
    for sid in ("s1", long_id):
        box.ok("box_delete_session", {"session_id": sid})
    box.ok("box_delete_session", {"session_id": "o1"}, other)
    assert counts() == (0, 0) and os.listdir(live_dir) == [], os.listdir(live_dir)


def procs_with_args(*args):
    """Host pids whose command line is exactly args."""
    want = "\0".join(args) + "\0"
    found = []
    for d in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            with open(d) as f:
                if f.read() == want:
                    found.append(int(d.split("/")[2]))
        except OSError:
            pass
    return found


def ancestors(pid):
    """pid's parent, its parent, ... up to the host's init."""
    out = []
    while pid > 1:
        with open("/proc/%d/stat" % pid) as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])
        out.append(pid)
    return out


@stdio_only
def status_follows_changes_made_elsewhere(h):
    """The runtime keeps box_status's counts while RUNROOT/box/live and box/running do not
    change (inotify): a process that exits on its own (its keeper removes its entry), a keeper
    killed outright and healed by a start, and a session removed by another lbbox process all
    show in the next box_status, with no action of this runtime's in between."""
    box = h.start("stdio")

    def counts():
        st = box.ok("box_status", {})
        return st["active_sessions"], st["managed_processes"]

    for sid in ("c1", "c2"):
        box.ok("box_create_session", spec(sid))
    assert counts() == (2, 0), counts()  # the runtime watches the indexes from here on
    box.ok("box_start_managed_process", {"session_id": "c1", "spec": {
        "process_id": "short", "command": "sh", "args": ["-c", "read x; exit 0"]}})
    box.ok("box_start_managed_process", {"session_id": "c1", "spec": {
        "process_id": "long", "command": "sleep", "args": ["1000"]}})
    assert counts() == (2, 2) and counts() == (2, 2), counts()
    # the watch stays the runtime's own: a job (a forked child, here one running an exec)
    # lets go of it
    before = children(box.p.pid)
    seq = box.send("box_exec", spec("c2", "sleep 1"))
    jobs = poll(lambda: [k for k, (comm, _) in children(box.p.pid).items()
                         if k not in before and comm == "lbbox-server"], 5)
    assert jobs, "no job seen"
    for job in jobs:
        fds = [os.readlink(f) for f in glob.glob("/proc/%d/fd/*" % job)]
        assert "anon_inode:inotify" not in fds, (job, fds)
    assert box.wait(seq)["code"] == 0
    # the process ends by itself: its keeper, not this runtime, removes the entry
    box.ok("box_start_managed_process", {"session_id": "c1", "spec": {
        "process_id": "self", "command": "sh", "args": ["-c", "sleep 0.5"]}})
    assert counts() == (2, 3), counts()
    wait_exited(box, "c1", "self")
    assert counts() == (2, 2), counts()
    # another lbbox process (the CLI, same runroot) removes a session
    subprocess.run([LBBOX, "--root", box.root, "--runroot", box.runroot, "session", "rm",
                    physical("c2")], check=True, capture_output=True)
    assert counts() == (1, 2), counts()
    box.ok("box_delete_session", {"session_id": "c1"})
    assert counts() == (0, 0), counts()


@stdio_only
def stopping_a_process_kills_its_tree_alone(h):
    """A managed process without memory_mb shares its session's memory cgroup on a v1 host
    (cgroup_child.c): stopping it, by its keeper or, with the keeper killed outright, through
    its cgroup reopened by name, kills its tree and nothing else of the session: the other
    process, and the session itself, live on."""
    box = h.start("stdio")
    box.ok("box_create_session", spec("t1"))

    def start(pid, n):
        box.ok("box_start_managed_process", {"session_id": "t1", "spec": {
            "process_id": pid, "command": "sh",
            "args": ["-c", "sleep %d & sleep %d" % (n, n)]}})
        assert poll(lambda: len(procs_with_args("sleep", str(n))) == 2, 5), pid

    def running(pid):
        return box.ok("box_get_managed_process", {"session_id": "t1", "process_id": pid})[
            "status"] == "running"

    start("a", 987671)
    start("b", 987672)
    start("c", 987673)
    box.ok("box_stop_managed_process", {"session_id": "t1", "process_id": "a"})
    assert poll(lambda: not procs_with_args("sleep", "987671"), 5), "a's tree survived"
    assert running("b") and running("c")
    assert len(procs_with_args("sleep", "987672")) == 2
    # b's keeper killed outright: the stop kills b's tree through its cgroup
    running_dir = os.path.join(box.runroot, "box", "running")
    keepers = [int(os.readlink(os.path.join(running_dir, e)).split()[0])
               for e in os.listdir(running_dir)]
    keeper = [k for k in keepers if k in ancestors(procs_with_args("sleep", "987672")[0])]
    assert len(keeper) == 1, (keepers, keeper)
    keeper = keeper[0]
    os.kill(keeper, signal.SIGKILL)
    assert poll(lambda: not os.path.exists("/proc/%d" % keeper), 5)
    box.ok("box_stop_managed_process", {"session_id": "t1", "process_id": "b"})
    assert poll(lambda: not procs_with_args("sleep", "987672"), 5), "b's tree survived"
    assert running("c") and len(procs_with_args("sleep", "987673")) == 2
    assert box.ok("box_exec", spec("t1", "echo alive"))["stdout"] == "alive"
    box.ok("box_delete_session", {"session_id": "t1"})
    assert not procs_with_args("sleep", "987673")


@stdio_only
def completed_retention_reads_the_exited_index(h):
    """The retention of exited processes (§3.5: at most max_completed_processes across the
    runtime, oldest first) reads RUNROOT/box/exited, an entry per exited record named by its exit
    time, not every session: the entries follow exit, replace, stop and delete, and the oldest
    exit of another session goes when a newer one would pass the maximum."""
    box = h.start("stdio", env={"LBBOX_BOX_MAX_COMPLETED": "2"})
    exited_dir = os.path.join(box.runroot, "box", "exited")

    def entries():
        return sorted(os.listdir(exited_dir)) if os.path.isdir(exited_dir) else []

    def run(sid, pid):
        box.ok("box_start_managed_process", {"session_id": sid, "spec": {
            "process_id": pid, "command": "sh", "args": ["-c", "exit 3"]}})
        wait_exited(box, sid, pid)

    def exists(sid, pid):
        r = box.call("box_get_managed_process", {"session_id": sid, "process_id": pid})
        return r["code"] == 0

    for sid in ("s1", "s2"):
        box.ok("box_create_session", spec(sid))
    run("s1", "first")
    assert len(entries()) == 1 and "-s1@" in entries()[0], entries()  # key: tenant-s1
    run("s2", "second")
    run("s2", "third")  # the next get prunes: s1's "first" is the oldest of three
    assert not exists("s1", "first") and exists("s2", "second") and exists("s2", "third")
    assert len(entries()) == 2, entries()
    run("s2", "third")  # replaced: its old exit's entry went with its record
    assert len(entries()) == 2 and exists("s2", "second"), entries()
    box.ok("box_stop_managed_process", {"session_id": "s2", "process_id": "second"})
    assert len(entries()) == 1, entries()
    box.ok("box_delete_session", {"session_id": "s2"})
    assert entries() == [], entries()
    box.ok("box_delete_session", {"session_id": "s1"})


@stdio_only
def sigterm_exit(h):
    box = h.start("stdio")
    box.ok("box_create_session", spec("s1"))
    box.p.send_signal(signal.SIGTERM)
    t0 = time.time()
    rc = box.p.wait(10)
    box.exited_ok = True
    assert rc == 0, rc
    assert time.time() - t0 < 5, "SIGTERM exit took %.1f s" % (time.time() - t0)
    assert not glob.glob(os.path.join(box.runroot, "box", "sessions", "*"))
    exit_line(box, "lbbox: SIGTERM received: dropping this runtime's sessions and exiting")


@stdio_only
def stdin_eof_exit_says_so(h):
    box = h.start("stdio")
    assert box.close()[0] == 0
    box.exited_ok = True
    exit_line(box, "lbbox: stdin closed: dropping this runtime's sessions and exiting")


@stdio_only
def chunk_violation_closes(h):
    """§6.2: a violation of the chunk protocol closes the connection, as LangBot's reader does,
    and for the stdio runtime that is the end: it says why in one line, cleans up, exits."""
    box = h.start("stdio")
    box.ok("box_create_session", spec("v1"))
    box.send_raw(json.dumps({"type": "chunk_start", "total_size": 10}) + "\n" +
                 json.dumps({"type": "chunk_data", "data": "{}", "offset": 5}) + "\n")
    rc = box.p.wait(10)  # the connection is over: the runtime cleans up and exits
    box.exited_ok = True
    assert rc == 0, rc
    assert not glob.glob(os.path.join(box.runroot, "box", "sessions", "*"))
    exit_line(box, "lbbox: protocol violation on stdin (chunk_data: offset 5, expected 0: "
              "Protocol error), connection closed: dropping this runtime's sessions and exiting")


@stdio_only
def oversized_line_closes(h):
    """A line longer than any message (16 MiB) plus its framing: the connection is closed, with
    one line saying so."""
    box = h.start("stdio")
    box.ok("box_create_session", spec("o1"))
    try:
        box.send_raw("{" + "x" * (16 * 1024 * 1024 + 65536))
    except BrokenPipeError:
        pass  # the runtime stopped reading: that is the point
    rc = box.p.wait(10)
    box.exited_ok = True
    assert rc == 0, rc
    assert not glob.glob(os.path.join(box.runroot, "box", "sessions", "*"))
    exit_line(box, "lbbox: protocol violation on stdin (line longer than ")


@stdio_only
def disconnect_mid_exec_cleans_up(h):
    box = h.start("stdio")
    box.ok("box_create_session", spec("d1"))
    box.send("box_exec", spec("d1", "sleep 987659"))
    time.sleep(0.5)
    box.p.stdin.close()  # the client vanishes while the exec runs
    rc = box.p.wait(10)
    box.exited_ok = True
    assert rc == 0, rc
    assert not glob.glob(os.path.join(box.runroot, "box", "sessions", "*"))
    left = subprocess.run(["pgrep", "-f", "sleep 987659"], capture_output=True).stdout
    assert not left, "the exec's process survived: %s" % left


@stdio_only
def stdio_port_taken_only_warns(h):
    """The HTTP port is taken: a warning on stderr, stdio keeps working (§7.2)."""
    occ = socket.socket()
    occ.bind((HOST, 0))
    occ.listen(1)
    try:
        box = h.start("stdio", port=occ.getsockname()[1])
        assert box.ok("__ping", {}, None) == {}
        r = box.ok("box_exec", spec("w1", "echo still"))
        assert r["stdout"] == "still", r
        assert poll(lambda: str(box.port) in box.stderr_text(), 5), \
            "no warning naming port %d on stderr: %r" % (box.port, box.stderr_text())
        assert "listening on %s:%d" % (HOST, box.port) not in box.stderr_text()
        assert box.p.poll() is None
        box.ok("box_delete_session", {"session_id": "w1"})
    finally:
        occ.close()


def upload_chunk(key, i, data, amount, length):
    """A __file_chunk request's data."""
    return {"file_key": key, "file_length": length, "chunk_index": i, "chunk_amount": amount,
            "chunk_size": 16384, "chunk_base64": base64.b64encode(data).decode()}


def upload(b, key, data=b"zip bytes"):
    """One whole upload in one chunk."""
    assert b.ok("__file_chunk", upload_chunk(key, 0, data, 1, len(data)), None) == {}


@stdio_only
def file_chunk_uploads(h):
    """__file_chunk (§6.6): base64 pieces into the storage dir (0700), checked key and sizes."""
    store = os.path.join(h.tmp, "files")
    box = h.start("stdio", env={"LANGBOT_PLUGIN_FILE_STORAGE_DIR": store})
    blob = os.urandom(40000)
    parts = [blob[i:i + 16384] for i in range(0, len(blob), 16384)]

    def chunk(key, i, data, amount=len(parts), length=len(blob)):
        return upload_chunk(key, i, data, amount, length)
    for i, c in enumerate(parts):
        assert box.ok("__file_chunk", chunk("ab12-x.zip", i, c), None) == {}
    with open(os.path.join(store, "ab12-x.zip"), "rb") as f:
        assert f.read() == blob, "the uploaded file differs"
    assert os.stat(store).st_mode & 0o777 == 0o700, oct(os.stat(store).st_mode)
    # chunk 0 again restarts the same key from zero
    box.ok("__file_chunk", chunk("ab12-x.zip", 0, b"abc", amount=1, length=3), None)
    with open(os.path.join(store, "ab12-x.zip"), "rb") as f:
        assert f.read() == b"abc"
    box.err("__file_chunk", chunk("../x", 0, b"a", 1, 1), "ValueError: invalid file_key", None)
    box.err("__file_chunk", chunk(".hidden", 0, b"a", 1, 1), "ValueError: invalid file_key", None)
    box.err("__file_chunk", chunk("big", 0, b"abcd", 1, 2), "ValueError: file big is longer", None)
    assert not os.path.exists(os.path.join(store, "big")), "an oversized upload was kept"
    box.err("__file_chunk", chunk("later", 1, b"a", 2, 2), "ValueError: no transfer in progress",
            None)
    bad = dict(chunk("b64", 0, b"a", 1, 1), chunk_base64="YQ==\n")
    box.err("__file_chunk", bad, "ValueError: chunk_base64 is not valid base64", None)
    box.err("__file_chunk", chunk("huge", 0, b"", 1, 30 * 1024 * 1024),
            "ValueError: file exceeds max_rpc_file_bytes (20971520)", None)
    box.err("__file_chunk", {"file_key": "k"}, "KeyError: 'file_length'", None)


@stdio_only
def uploads_go_with_the_connection(h):
    """LangBot's handler removes a connection's uploads when it closes: stdin EOF takes every
    upload of the stdio connection with it, finished or not."""
    store = os.path.join(h.tmp, "files")
    box = h.start("stdio", env={"LANGBOT_PLUGIN_FILE_STORAGE_DIR": store})
    upload(box, "done.zip")
    box.ok("__file_chunk", upload_chunk("half.zip", 0, b"x" * 16384, 2, 20000), None)
    assert sorted(os.listdir(store)) == ["done.zip", "half.zip"], os.listdir(store)
    assert box.close()[0] == 0
    box.exited_ok = True
    assert os.listdir(store) == [], "uploads outlived the connection: %s" % os.listdir(store)


@stdio_only
def failed_and_idle_uploads_are_removed(h):
    """An upload that fails is removed at once; one left idle past the upload TTL is removed
    (nothing in lbbox reads uploads); a connection holds at most 128."""
    store = os.path.join(h.tmp, "files")
    box = h.start("stdio", env={"LANGBOT_PLUGIN_FILE_STORAGE_DIR": store,
                                "LBBOX_BOX_UPLOAD_TTL_SEC": "2"})
    box.ok("__file_chunk", upload_chunk("long.zip", 0, b"a" * 10, 2, 12), None)
    box.err("__file_chunk", upload_chunk("long.zip", 1, b"b" * 10, 2, 12),
            "ValueError: file long.zip is longer than file_length 12", None)
    assert not os.path.exists(os.path.join(store, "long.zip")), "a failed upload stayed"
    upload(box, "idle.zip")
    time.sleep(2.5)
    upload(box, "fresh.zip")  # (the expiry runs with every chunk and every 30 s)
    assert os.listdir(store) == ["fresh.zip"], "idle upload stayed: %s" % os.listdir(store)
    for i in range(127):
        upload(box, "u%d.zip" % i)
    box.err("__file_chunk", upload_chunk("one-too-many.zip", 0, b"x", 1, 1),
            "ValueError: Active file transfer capacity reached", None)
    upload(box, "fresh.zip", b"again")  # its own key: restarted, not a new upload
    assert len(os.listdir(store)) == 128, len(os.listdir(store))


@stdio_only
def box_init_creates_default_workspace(h):
    """§3.1: the default workspace is created under an allowed root, else BoxValidationError."""
    box = h.start("stdio")
    hr = os.path.join(h.tmp, "hr")
    assert box.ok("box_init", {"local": {"host_root": hr}}, None) == {"initialized": True}
    assert os.path.isdir(os.path.join(hr, "default")), "no default workspace"
    box.ok("box_init", {"local": {"host_root": hr, "default_workspace": "ws/a"}}, None)
    assert os.path.isdir(os.path.join(hr, "ws", "a"))
    box.err("box_init", {"local": {"host_root": hr, "default_workspace": "../out"}},
            "BoxValidationError: default workspace %s is outside the allowed mount roots"
            % os.path.join(h.tmp, "out"), None)
    assert not os.path.exists(os.path.join(h.tmp, "out"))
    with open(os.path.join(hr, "file"), "w") as f:
        f.write("x")
    box.err("box_init", {"local": {"host_root": hr, "default_workspace": "file"}},
            "BoxValidationError: default workspace %s/file is not a directory" % hr, None)


@stdio_only
def planted_symlinks_create_nothing_outside_the_roots(h):
    """A sandbox with a workspace under host_root plants a link out of it: neither a session's
    host_path nor box_init's default workspace below that link creates anything outside."""
    box = h.start("stdio")
    hr, out = os.path.join(h.tmp, "hr"), os.path.join(h.tmp, "outside")
    os.makedirs(os.path.join(hr, "ws1"))
    os.makedirs(out)
    box.ok("box_init", {"local": {"host_root": hr}}, None)
    r = box.ok("box_exec", spec("p1", "ln -s %s /workspace/evil && echo planted" % out,
                               host_path=os.path.join(hr, "ws1")))
    assert r["stdout"] == "planted", r
    box.err("box_exec", spec("p2", "true", host_path=os.path.join(hr, "ws1", "evil", "new")),
            "BoxValidationError: host_path is outside allowed_mount_roots")
    box.err("box_init", {"local": {"host_root": hr, "default_workspace": "ws1/evil/dflt"}},
            "BoxValidationError: default workspace", None)
    assert os.listdir(out) == [], os.listdir(out)
    box.ok("box_delete_session", {"session_id": "p1"})


@stdio_only
def default_workspace_obeys_the_host_path_rules(h):
    """box_init's default workspace is a host path like the others: not in lbbox's own state,
    not in a blocked directory, whatever the allowed roots say."""
    box = h.start("stdio")
    box.err("box_init", {"local": {"host_root": box.runroot}},
            "BoxValidationError: host path %s/default overlaps lbbox's own state" % box.runroot,
            None)
    assert not os.path.exists(os.path.join(box.runroot, "default"))
    box.err("box_init", {"local": {"host_root": "/etc", "default_workspace": "lbt-never"}},
            "BoxValidationError: host_path /etc/lbt-never is blocked for security", None)
    assert not os.path.exists("/etc/lbt-never")


def host_bridge_addr(bridge):
    r = subprocess.run(["ip", "-4", "-o", "addr", "show", "dev", bridge], capture_output=True,
                       text=True)
    return r.stdout if r.returncode == 0 else None


def prune_networks(box, bridges):
    """Removes the test's bridges (lbbox network prune, one bridge at a time), checks them gone."""
    for br in bridges:
        r = subprocess.run([LBBOX, "--root", box.root, "--runroot", box.runroot, "network",
                            "prune"], env=dict(box.env, LBBOX_NET_BRIDGE=br),
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert poll(lambda: host_bridge_addr(br) is None, 5), "bridge %s left" % br


@stdio_only
def runtime_network_settings(h):
    """The runtime's "on" sessions use the bridge, subnet, nameservers and allowed hosts it was
    given (environment, then box_init's box.lbbox.network), shown in box_health; a second
    lbbox on the same bridge is told how to get its own."""
    n = os.getpid() % 200
    br1, br2 = "lbtn%d" % n, "lbtm%d" % n
    sub1, sub2 = "10.201.%d.0/24" % n, "10.202.%d.0/24" % n
    env = {"LBBOX_NET_BRIDGE": br1, "LBBOX_NET_SUBNET": sub1,
           "LBBOX_BOX_NET_DNS": "192.0.2.53", "LBBOX_BOX_NET_ALLOW_HOSTS": "10.99.1.5:5432"}
    box = h.start("stdio", env=env)
    try:
        net = box.ok("box_health", {}, None)["network"]
        assert net == {"bridge": br1, "subnet": sub1, "gateway": "10.201.%d.1" % n,
                       "dns": ["192.0.2.53"], "allow_hosts": ["10.99.1.5:5432"]}, net
        r = box.ok("box_exec", spec("n1", "cat /etc/resolv.conf /proc/net/fib_trie",
                                   network="on"))
        assert r["exit_code"] == 0, r
        assert "nameserver 192.0.2.53" in r["stdout"], r
        assert "-- 10.201.%d." % n in r["stdout"], r
        assert "10.201.%d.1/24" % n in (host_bridge_addr(br1) or ""), host_bridge_addr(br1)
        # the allowed host is in the network's filter state
        ins = subprocess.run([LBBOX, "--root", box.root, "--runroot", box.runroot, "network",
                              "inspect", "--json"], env=dict(box.env), capture_output=True,
                             text=True)
        assert ins.returncode == 0 and "10.99.1.5" in ins.stdout, (ins.stdout, ins.stderr)
        # box_init: a bad value changes nothing; a good one applies to new sessions
        box.err("box_init", {"lbbox": {"network": {"subnet": "10.203.0.1/24"}}},
                "ValueError: box.lbbox.network.subnet: invalid subnet '10.203.0.1/24'", None)
        box.err("box_init", {"lbbox": {"network": {"dns": ["x"]}}},
                "ValueError: box.lbbox.network.dns: invalid --dns 'x'", None)
        assert box.ok("box_health", {}, None)["network"] == net
        box.ok("box_init", {"lbbox": {"network": {"bridge": br2, "subnet": sub2, "dns": [],
                                                   "allow_hosts": []}}}, None)
        net2 = box.ok("box_health", {}, None)["network"]
        assert net2["bridge"] == br2 and net2["subnet"] == sub2 and net2["dns"] == [], net2
        r = box.ok("box_exec", spec("n2", "cat /proc/net/fib_trie", network="on"))
        assert "-- 10.202.%d." % n in r["stdout"], r
        # another lbbox (its own runroot) on the first bridge: one error, and the fix
        other = Box(os.path.join(h.tmp, "other"), env=env)
        h.servers.append(other)
        msg = other.err("box_exec", spec("c1", "true", network="on"), "BoxError: ")
        assert "bridge %s already exists" % br1 in msg and "LBBOX_NET_BRIDGE" in msg, msg
        for sid in ("n1", "n2"):
            box.ok("box_delete_session", {"session_id": sid})
    finally:
        h.cleanups.append(lambda: prune_networks(box, (br1, br2)))
    prune_networks(box, (br1, br2))


# LangBot's default box.local (config.yaml), as box_init sends it
LANGBOT_LOCAL = {"profile": "default", "image": "", "host_root": "./data/box",
                 "default_workspace": "", "skills_root": "skills",
                 "allowed_mount_roots": ["./data/box", "/tmp"], "workspace_quota_mb": None}


@stdio_only
def deployments_with_langbots_default_config(h):
    """README's deployments, LangBot's default box.local unchanged. stdio: lbbox runs in
    LangBot's working directory and its relative paths are LangBot's. `lbbox serve`: LangBot
    runs elsewhere; its relative paths mean nothing here and are not used (nothing is created
    from them); the operator's LBBOX_BOX_ALLOWED_ROOTS (the shared, absolute host_root) decide,
    and box_init cannot widen them."""
    langbot = os.path.join(h.tmp, "langbot")
    os.makedirs(langbot)
    box = h.start("stdio", cwd=langbot)
    assert box.ok("box_init", {"backend": "local", "local": LANGBOT_LOCAL}, None) == \
        {"initialized": True}
    ws = os.path.join(langbot, "data", "box", "default")
    assert os.path.isdir(ws), "no default workspace in LangBot's directory"
    r = box.ok("box_exec", spec("s1", "echo hi > f; cat f", host_path=ws))
    assert r["stdout"] == "hi", r
    box.ok("box_delete_session", {"session_id": "s1"})

    shared = os.path.join(h.tmp, "srv", "langbot-box")  # LangBot's host_root, made absolute
    elsewhere = os.path.join(h.tmp, "lbbox-cwd")
    os.makedirs(os.path.join(shared, "default"))
    os.makedirs(elsewhere)
    sub = os.path.join(h.tmp, "serve")
    os.makedirs(sub)
    b = WsBox(sub, token=TOKEN, cwd=elsewhere, env={"LBBOX_BOX_ALLOWED_ROOTS": shared})
    h.servers.append(b)
    assert b.ok("box_init", {"backend": "local", "local": LANGBOT_LOCAL}, None) == \
        {"initialized": True}
    assert os.listdir(elsewhere) == [], os.listdir(elsewhere)
    health = b.ok("box_health", {}, None)
    assert health["allowed_mount_roots"] == [os.path.realpath(shared)], health
    r = b.ok("box_exec", spec("w1", "echo hi > f; cat f",
                              host_path=os.path.join(shared, "default")))
    assert r["stdout"] == "hi", r
    with open(os.path.join(shared, "default", "f")) as f:
        assert f.read() == "hi\n"
    b.err("box_exec", spec("w2", "true", host_path="/tmp"),
          "BoxValidationError: host_path is outside allowed_mount_roots")
    b.ok("box_delete_session", {"session_id": "w1"})


@stdio_only
def backend_unavailable_without_root(h):
    """A host (here: a user) that cannot isolate a sandbox: available false, /readyz 503, and
    sandbox actions answer BoxBackendUnavailableError naming what is missing (§3.2)."""
    pw = pwd.getpwnam("nobody")
    os.chmod(h.tmp, 0o711)
    for d in ("run", "root"):  # the runtime's own directories belong to it
        os.makedirs(os.path.join(h.tmp, d))
        os.chown(os.path.join(h.tmp, d), pw.pw_uid, pw.pw_gid)
    box = h.start("stdio", prefix=["setpriv", "--reuid", str(pw.pw_uid), "--regid",
                                   str(pw.pw_gid), "--clear-groups"])
    assert box.ok("box_get_backend_info", {}, None) == {"name": "lbbox", "available": False}
    assert box.ok("box_health", {}, None)["features"]["rootless"] is True
    msg = box.err("box_exec", spec("u1", "true"), "BoxBackendUnavailableError: LangBot Box "
                  "backend unavailable.")
    assert "missing: a writable memory cgroup" in msg and "namespaces" not in msg, msg
    box.err("box_create_session", spec("u1"), "BoxBackendUnavailableError: ")
    assert box.ok("box_get_sessions", {})["sessions"] == []
    status, body = wsclient.http_get(HOST, box.port, "/readyz")
    ready = json.loads(body)
    assert status == 503 and ready["ready"] is False, (status, body)
    assert ready["checks"] == {"backend_available": False}, ready


def delegated_cgroups(h, uid, gid):
    """A child of this process's cgroup in each hierarchy lbbox uses (v2, or v1 memory, pids,
    cpu, cpuacct, freezer), handed to uid (as systemd delegates a user's slice); removed after
    the test. Returns the directories."""
    dirs = []
    used = {"memory", "pids", "cpu", "cpuacct", "freezer"}
    v2_only = not os.path.isdir("/sys/fs/cgroup/unified")
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            if ctrls and not used & set(ctrls.split(",")) or not ctrls and not v2_only:
                continue
            mnt = "/sys/fs/cgroup" + ("/" + ctrls if ctrls else "")
            if not os.path.isdir(mnt):
                continue
            d = os.path.join(mnt + path, "lbt-rpc-%d" % os.getpid())
            os.mkdir(d)
            os.chown(d, uid, gid)
            dirs.append(d)

    def remove():
        for d in dirs:
            for sub in sorted(glob.glob(d + "/**/", recursive=True), key=len, reverse=True):
                try:
                    os.rmdir(sub)
                except OSError:
                    pass
    h.cleanups.append(remove)
    return dirs


@stdio_only
def rootless_runtime_in_a_delegated_cgroup(h):
    """Without root but with a delegated cgroup, the runtime is a real backend: sessions in
    their own user namespace, LangBot's limits enforced, managed processes, nothing left."""
    pw = pwd.getpwnam("nobody")
    os.chmod(h.tmp, 0o711)
    for d in ("run", "root"):
        os.makedirs(os.path.join(h.tmp, d))
        os.chown(os.path.join(h.tmp, d), pw.pw_uid, pw.pw_gid)
    dirs = delegated_cgroups(h, pw.pw_uid, pw.pw_gid)
    enter = "for d in %s; do echo $$ > $d/cgroup.procs || exit 99; done; exec \"$@\"" % (
        " ".join(dirs))
    box = h.start("stdio", prefix=["sh", "-c", enter, "sh", "setpriv", "--reuid",
                                   str(pw.pw_uid), "--regid", str(pw.pw_gid), "--clear-groups"])
    assert box.ok("box_get_backend_info", {}, None) == {"name": "lbbox", "available": True}
    assert box.ok("box_health", {}, None)["features"]["rootless"] is True
    r = box.ok("box_exec", spec("r1", "id -u; tr -s ' ' < /proc/self/uid_map; "
                                "cat /sys/fs/cgroup/memory/memory.limit_in_bytes; "
                                "cat /sys/fs/cgroup/pids/pids.max"))
    assert r["exit_code"] == 0, r
    assert r["stdout"] == "0\n 0 %d 1\n%d\n128" % (pw.pw_uid, 512 << 20), r
    b = box
    b.ok("box_start_managed_process", {"session_id": "r1", "spec": {
        "command": "sh", "args": ["-c", "while true; do sleep 1; done"]}})
    assert b.ok("box_get_managed_process", {"session_id": "r1", "process_id": "default"})[
        "status"] == "running"
    assert b.ok("box_stop_managed_process", {"session_id": "r1", "process_id": "default"}) == \
        {"stopped": "default"}
    r = b.ok("box_exec", spec("r1", "sleep 1000 & sleep 1000", timeout_sec=1))
    assert r["status"] == "timed_out", r
    b.ok("box_exec", spec("r2", "true"))
    b.ok("box_delete_session", {"session_id": "r2"})


# -- HTTP side: health, /rpc/ws, relay (fn(h, kind); kind "stdio" or "serve") --------------------
HTTP_TESTS = []


def http_test(*kinds):
    def deco(fn):
        HTTP_TESTS.append((fn, kinds or ("stdio", "serve")))
        return fn
    return deco


RESOURCE_KEYS = {"sessions", "managed_processes", "completed_processes", "creating_session_tasks",
                 "closing_session_tasks", "background_tasks", "event_loop", "blocking_executor"}


def check_resources(res):
    assert set(res) >= RESOURCE_KEYS, "resources keys %s" % sorted(res)
    for k in RESOURCE_KEYS - {"event_loop", "blocking_executor"}:
        assert type(res[k]) is int and res[k] >= 0, (k, res[k])
    assert isinstance(res["event_loop"], dict) and isinstance(res["blocking_executor"], dict), res


def get_json(b, path, status=200):
    code, body = b.http_get(path)
    assert code == status, "GET %s: %d %r (expected %d)" % (path, code, body[:300], status)
    try:
        return json.loads(body)
    except ValueError:
        raise AssertionError("GET %s: not JSON: %r" % (path, body[:300]))


@http_test()
def health_endpoints(h, kind):
    """/healthz, /readyz need no auth (a token is configured here); unknown paths are 404."""
    b = h.start(kind, token=TOKEN)
    hz = get_json(b, "/healthz")
    assert hz["live"] is True, hz
    check_resources(hz["resources"])
    assert hz["resources"]["sessions"] == 0, hz
    rz = get_json(b, "/readyz")
    assert rz["ready"] is True and rz["mode"] == "standard", rz
    assert rz["backend"] == {"name": "lbbox", "available": True}, rz
    assert rz["checks"] == {"backend_available": True}, rz
    check_resources(rz["resources"])
    assert rz["features"] == b.ok("box_health", {}, None)["features"], rz
    for path in ("/nope", "/healthzz", "/rpc", "/v1/sessions"):
        code, body = b.http_get(path)
        assert code == 404, "GET %s: %d %r" % (path, code, body[:200])


@http_test()
def health_counts_sessions_and_processes(h, kind):
    """/healthz and /readyz resources count the live sessions and running managed processes."""
    b = h.start(kind)
    b.ok("box_create_session", spec("h1"))
    b.ok("box_create_session", spec("h2"))
    b.ok("box_start_managed_process", {"session_id": "h1", "spec": {"command": "cat"}})
    def counts(path, want):  # (the snapshot may be refreshed periodically: up to 3 s)
        res = poll(lambda: (lambda r: r if (r["sessions"], r["managed_processes"]) == want
                            else None)(get_json(b, path)["resources"]), 3)
        assert res, "%s: %s, expected sessions, managed_processes = %s" % (
            path, get_json(b, path)["resources"], want)

    counts("/healthz", (2, 1))
    counts("/readyz", (2, 1))
    b.ok("box_delete_session", {"session_id": "h1"})
    counts("/healthz", (1, 0))
    b.ok("box_delete_session", {"session_id": "h2"})
    counts("/readyz", (0, 0))


@http_test()
def rpc_ws_requires_token_and_instance(h, kind):
    """§6.8 with a token: 401 `Unauthorized` unless token and trusted instance both match."""
    b = h.start(kind, token=TOKEN)
    wrong = TOKEN[:-1] + ("x" if TOKEN[-1] != "x" else "y")
    for hdrs in ({},
                 {"X-LangBot-Instance-Id": "inst-1"},
                 b.auth_headers(instance=None),
                 b.auth_headers(token="nope"),
                 b.auth_headers(token=wrong),
                 b.auth_headers(token=TOKEN + "x"),
                 b.auth_headers(instance="inst-2"),
                 b.auth_headers(instance="-inst-1"),
                 b.auth_headers(instance="inst-1 ")):
        e = b.refused("/rpc/ws", hdrs)
        assert (e.status, e.body) == (401, "Unauthorized"), (hdrs, e.status, e.body)
    c = b.connect_rpc(b.auth_headers())
    assert c.ok("__ping", {}, None) == {}
    r = c.ok("box_exec", spec("a1", "echo authed"))
    assert r["stdout"] == "authed", r
    c.ok("box_delete_session", {"session_id": "a1"})
    assert b.ok("__ping", {}, None) == {}  # the first connection is unaffected


@http_test()
def rpc_ws_without_token_is_legacy(h, kind):
    """No token: serve takes header-less /rpc/ws peers (0.4), but a present instance header must
    match. stdio mode offers /rpc/ws only with a token (README: LangBot never uses it there)."""
    b = h.start(kind)
    if kind == "stdio":
        for hdrs in ({}, {"X-LangBot-Instance-Id": "inst-1"}, b.auth_headers(token="x" * 40)):
            e = b.refused("/rpc/ws", hdrs)
            assert (e.status, e.body) == (401, "Unauthorized"), (hdrs, e.status, e.body)
        assert b.ok("__ping", {}, None) == {}
        return
    c = b.connect_rpc({})
    assert c.ok("__ping", {}, None) == {}
    r = c.ok("box_exec", spec("person_1", "echo old"), None)
    assert r["session_id"] == "person_1" and r["stdout"] == "old", r
    c.ok("box_delete_session", {"session_id": "person_1"}, None)
    c2 = b.connect_rpc({"X-LangBot-Instance-Id": "inst-1"})
    assert c2.ok("__ping", {}, None) == {}
    for inst in ("inst-2", "bad id!"):
        e = b.refused("/rpc/ws", {"X-LangBot-Instance-Id": inst})
        assert (e.status, e.body) == (401, "Unauthorized"), (inst, e.status, e.body)


@http_test("serve")
def serve_pins_first_instance(h, kind):
    """serve without LANGBOT_BOX_TRUSTED_INSTANCE_UUID: the first authenticated connection pins
    its instance; later ones with another instance get 401 (§6.8)."""
    b = h.start(kind, token=TOKEN, trusted=None, connect=False)
    a = b.connect_rpc(b.auth_headers(instance="inst-A"))
    ctx_a = dict(CTX, instance_uuid="inst-A")
    assert a.ok("__ping", {}, None) == {}
    a.ok("box_create_session", spec("pin1"), ctx_a)
    a.err("box_get_sessions", {}, "PermissionError: Box action context does not match", CTX)
    e = b.refused("/rpc/ws", b.auth_headers(instance="inst-B"))
    assert (e.status, e.body) == (401, "Unauthorized"), (e.status, e.body)
    e = b.refused("/rpc/ws", b.auth_headers(instance="inst-A", token="nope"))
    assert e.status == 401, e.status
    a2 = b.connect_rpc(b.auth_headers(instance="inst-A"))
    got = a2.ok("box_get_sessions", {}, ctx_a)["sessions"]
    assert [s["session_id"] for s in got] == ["pin1"], got
    a2.ok("box_delete_session", {"session_id": "pin1"}, ctx_a)


@http_test("serve")
def serve_listening_line_and_port_taken(h, kind):
    b = h.start(kind)
    line = "lbbox: listening on %s:%d" % (HOST, b.port)
    assert poll(lambda: line in b.stderr_lines, 5), "no %r on stderr: %r" % (
        line, b.stderr_lines)
    occ = socket.socket()
    occ.bind((HOST, 0))
    occ.listen(1)
    try:
        sub = os.path.join(h.tmp, "taken")
        prepare_root(os.path.join(sub, "root"))
        os.makedirs(os.path.join(sub, "run"))
        port = occ.getsockname()[1]
        p = subprocess.run([LBBOX, "--root", os.path.join(sub, "root"), "--runroot",
                            os.path.join(sub, "run"), "serve", "--listen",
                            "%s:%d" % (HOST, port)], env=b.env,
                           stdin=subprocess.DEVNULL, capture_output=True, timeout=10)
        err = [l for l in p.stderr.decode("utf-8", "replace").splitlines() if l.strip()]
        assert p.returncode != 0, "serve on a taken port exited 0"
        assert len(err) == 1 and str(port) in err[0], \
            "expected one error line naming port %d, got %r" % (port, err)
        assert not glob.glob(os.path.join(sub, "run", "box", "sessions", "*"))
    finally:
        occ.close()


@http_test("serve")
def serve_non_loopback_needs_token(h, kind):
    """README: without a control token serve listens only on loopback addresses."""
    sub = os.path.join(h.tmp, "open")
    prepare_root(os.path.join(sub, "root"))
    os.makedirs(os.path.join(sub, "run"))
    env = dict(os.environ, LANGBOT_BOX_TRUSTED_INSTANCE_UUID="inst-1",
               LBBOX_BOX_IMAGE_ALIASES=IMAGE + "=busybox", LBBOX_BOX_PULL="0")
    env.pop("LANGBOT_BOX_CONTROL_TOKEN", None)
    port = free_port()
    p = subprocess.run([LBBOX, "--root", os.path.join(sub, "root"), "--runroot",
                        os.path.join(sub, "run"), "serve", "--listen", "0.0.0.0:%d" % port],
                       env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=10)
    assert p.returncode != 0, "serve listened on 0.0.0.0 without a token"
    assert b"token" in p.stderr.lower(), "no error about the token: %r" % p.stderr
    b = h.start(kind, token=TOKEN, listen_host="0.0.0.0")  # with a token it is allowed
    assert b.ok("__ping", {}, None) == {}


@http_test("serve")
def ws_uploads_belong_to_their_connection(h, kind):
    """An upload belongs to the /rpc/ws connection that sent it: another connection cannot
    write to its key, and its file goes when that connection closes, the server running on."""
    store = os.path.join(h.tmp, "files")
    b = h.start(kind, env={"LANGBOT_PLUGIN_FILE_STORAGE_DIR": store})
    other = b.connect_rpc()
    upload(b, "mine.zip")
    upload(other, "theirs.zip")
    other.err("__file_chunk", upload_chunk("mine.zip", 0, b"overwrite", 1, 9),
              "ValueError: file_key mine.zip is in use by another connection", None)
    with open(os.path.join(store, "mine.zip"), "rb") as f:
        assert f.read() == b"zip bytes", "another connection overwrote the upload"
    assert other.close() is not None
    assert poll(lambda: os.listdir(store) == ["mine.zip"], 5), \
        "the closed connection's upload stayed: %s" % os.listdir(store)
    assert b.ok("__ping", {}, None) == {}
    b.rpc.close()
    assert poll(lambda: os.listdir(store) == [], 5), os.listdir(store)
    third = b.connect_rpc()
    upload(third, "mine.zip")  # free again


@http_test("serve")
def ws_binary_message_closes_connection(h, kind):
    """§6.3: a binary message closes that connection; the server and its sessions stay."""
    b = h.start(kind)
    b.ok("box_create_session", spec("bin1"))
    b.rpc.ws.send_binary(b'{"seq_id": 1, "action": "__ping", "data": {}}')
    dead = b.rpc.wait_closed(5)
    assert dead is not None, "the connection stayed open after a binary message"
    assert dead[0] == "close", dead
    assert 1 not in b.replies, "the binary message was answered"
    c = b.connect_rpc()
    assert c.ok("__ping", {}, None) == {}
    assert c.ok("box_get_session", {"session_id": "bin1"})["session_id"] == "bin1"
    c.ok("box_delete_session", {"session_id": "bin1"})


@http_test("serve")
def ws_message_size_limit(h, kind):
    """/rpc/ws takes messages up to 16 MiB however they are framed (one frame, 16 KiB or 4 KiB
    fragments); a bigger one ends that connection (1009), not the server (§6.3)."""
    b = h.start(kind)
    for i, frag in enumerate((None, 16384, 4096)):
        c = b.connect_rpc()
        c.ws.send_text(max_message(100 + i), frag)
        r = c.wait(100 + i, 60)
        assert r["code"] == 0 and r["data"] == {}, r
        c.close()
    c = b.connect_rpc()
    try:
        c.ws.send_text(max_message(200, 16 * 1024 * 1024 + 1), 65536)
    except OSError:
        pass  # the server may close while we still send
    dead = c.wait_closed(10)
    assert dead is not None, "a message over 16 MiB was accepted"
    assert dead[0] == "close" and dead[1] in (1009, 1006), dead
    assert 200 not in c.replies
    assert b.connect_rpc().ok("__ping", {}, None) == {}


@http_test("serve")
def busy_after_128_actions_per_connection(h, kind):
    """§6.4: a connection has at most 128 actions in flight; the next ones are answered at once
    with the busy error, other connections are not affected, and slots free up when actions end.
    (130 execs queue on one session's exec lock behind one that waits for a file the test
    creates in the session's host workspace.)"""
    b = h.start(kind)
    ws = os.path.join(h.tmp, "ws")
    os.mkdir(ws)
    c = b.connect_rpc()
    wait_go = "while [ ! -e go ]; do sleep 0.05; done"
    seqs = [c.send("box_exec", spec("busy", wait_go, host_path=ws, timeout_sec=120))
            for _ in range(130)]
    for seq in seqs[128:]:
        r = c.wait(seq, 30)
        assert r["code"] == 1 and \
            r["message"] == "Runtime connection is busy (max 128 concurrent actions)", r
    assert b.ok("__ping", {}, None) == {}, "another connection must not be busy"
    open(os.path.join(ws, "go"), "w").close()
    for seq in seqs[:128]:  # each ends, so its slot is free again
        r = c.wait(seq, 60)
        assert r["code"] == 0 and r["data"]["exit_code"] == 0, r
    assert c.ok("__ping", {}, None) == {}
    c.ok("box_delete_session", {"session_id": "busy"})


@http_test("serve")
def ws_disconnect_keeps_server_and_sessions(h, kind):
    """The /rpc/ws client vanishes mid-exec: the server keeps running with its sessions; SIGTERM
    then removes everything, the exec's process included."""
    b = h.start(kind)
    b.ok("box_create_session", spec("dc1", persistent=True))
    b.ok("box_start_managed_process", {"session_id": "dc1", "spec": {"command": "cat"}})
    b.send("box_exec", spec("dc2", "sleep 987658", timeout_sec=60))
    time.sleep(0.5)
    b.rpc.ws.abort()  # no close handshake
    assert b.rpc.wait_closed(5) is not None
    c = b.connect_rpc()
    t0 = time.time()
    assert c.ok("__ping", {}, None) == {}
    assert time.time() - t0 < 1.0, "ping took %.2f s" % (time.time() - t0)
    d = c.ok("box_get_session", {"session_id": "dc1"})
    assert d["managed_process"]["status"] == "running", d
    assert b.p.poll() is None
    rc, took = b.close()
    b.exited_ok = True
    assert rc == 0 and took < 5, (rc, took)
    left = subprocess.run(["pgrep", "-f", "sleep 987658"], capture_output=True).stdout
    assert not left, "the exec's process survived: %s" % left


def start_process(b, logical, pid, command, args=(), ctx=CTX):
    info = b.ok("box_start_managed_process", {"session_id": logical, "spec": {
        "process_id": pid, "command": command, "args": list(args)}}, ctx)
    assert info["status"] == "running", info
    return info


def proc_info(b, logical, pid, ctx=CTX):
    return b.ok("box_get_managed_process", {"session_id": logical, "process_id": pid}, ctx)


def wait_attached(b, logical, pid, value, ctx=CTX):
    d = poll(lambda: (lambda i: i if i["attached"] is value else None)(
        proc_info(b, logical, pid, ctx)), 5)
    assert d, "attached did not become %s: %s" % (value, proc_info(b, logical, pid, ctx))
    return d


def relay_session(h, kind, session, pid, command, args=()):
    """A runtime (with the control token) and a session running one managed process."""
    b = h.start(kind, token=TOKEN)
    b.ok("box_create_session", spec(session))
    start_process(b, session, pid, command, args)
    return b


@http_test()
def relay_echo_detach_reattach(h, kind):
    b = relay_session(h, kind, "r1", "cat1", "cat")
    ws = b.relay("r1", "cat1")
    wait_attached(b, "r1", "cat1", True)
    ws.send_text('{"a":1}')
    assert ws.recv_text(5) == '{"a":1}'
    ws.send_text("héllo ✓")
    assert ws.recv_text(5) == "héllo ✓"
    big = "x" * 200000  # larger than the pipes: stdin writes and stdout reads must interleave
    ws.send_text(big, fragment=WS_FRAGMENT)
    got = ws.recv_text(10)
    assert got == big, "200 KB line came back as %d chars" % len(got)
    ws.send_binary(b"zzz")  # ignored
    ws.send_text("after")
    assert ws.recv_text(5) == "after"
    assert ws.close() is not None, "no close answer from the relay"
    d = wait_attached(b, "r1", "cat1", False)
    assert d["status"] == "running", d
    ws = b.relay("r1", "cat1")  # re-attach
    wait_attached(b, "r1", "cat1", True)
    ws.send_text('{"b":2}')
    assert ws.recv_text(5) == '{"b":2}'
    ws.abort()  # detach without a close handshake
    d = wait_attached(b, "r1", "cat1", False)
    assert d["status"] == "running", d
    ws = b.relay("r1", "cat1")
    ws.send_text("again")
    assert ws.recv_text(5) == "again"
    ws.close()
    assert b.ok("box_stop_managed_process", {"session_id": "r1", "process_id": "cat1"}) == \
        {"stopped": "cat1"}
    b.ok("box_delete_session", {"session_id": "r1"})


DUP = ('while read l; do case "$l" in split*) printf "%s" "$l"; sleep 0.3; '
       'printf "%s\\n\\n" "-end";; *) printf "%s\\n%s-2\\n" "$l" "$l";; esac; done')


@http_test()
def relay_one_line_per_message(h, kind):
    """stdout lines become one text message each, newline removed, empty lines skipped, partial
    lines joined (§6.9)."""
    b = relay_session(h, kind, "r2", "dup", "sh", ["-c", DUP])
    ws = b.relay("r2", "dup")
    ws.send_text("a")  # the process writes "a\na-2\n" at once
    assert [ws.recv_text(5), ws.recv_text(5)] == ["a", "a-2"]
    ws.send_text("split1")  # "split1", a pause, "-end\n\n"
    assert ws.recv_text(5) == "split1-end"
    ws.send_text("b")
    ws.send_text("c")
    got = [ws.recv_text(5) for _ in range(4)]
    assert got == ["b", "b-2", "c", "c-2"], got
    ws.send_text("")  # an empty line for the process: it prints "\n-2\n"; "" is skipped
    ws.send_text("d")
    got = [ws.recv_text(5) for _ in range(3)]
    assert got == ["-2", "d", "d-2"], got
    ws.close()
    b.ok("box_delete_session", {"session_id": "r2"})


def assert_relay_400(b, path, code, message):
    """The relay refuses the upgrade with 400 and LangBot's JSON error body."""
    e = b.refused(path, b.relay_headers(), ["mcp"])
    assert e.status == 400, (path, e.status, e.body)
    try:
        body = json.loads(e.body)
    except ValueError:
        raise AssertionError("%s: body is not JSON: %r" % (path, e.body))
    assert body == {"error": {"code": code, "message": message}}, (path, body)


@http_test()
def relay_process_exit_closes(h, kind):
    b = relay_session(h, kind, "r3", "once", "sh", ["-c", 'read l; echo "bye $l"'])
    ws = b.relay("r3", "once")
    ws.send_text("x")
    assert ws.recv_text(5) == "bye x"
    ev = ws.recv_msg(5)
    assert ev[0] == "close" and ev[1] == 1000, "expected a normal close, got %r" % (ev,)
    d = poll(lambda: (lambda i: i if i["status"] == "exited" else None)(
        proc_info(b, "r3", "once")), 5)
    assert d and d["exit_code"] == 0 and d["attached"] is False, d
    assert_relay_400(b, relay_path(physical("r3"), "once"), "BoxManagedProcessConflictError",
                     "managed process once in session %s is not running" % physical("r3"))
    b.ok("box_delete_session", {"session_id": "r3"})


@http_test()
def relay_errors_are_400_json(h, kind):
    b = relay_session(h, kind, "r4", "p1", "cat")
    b.ok("box_start_managed_process", {"session_id": "r4", "spec": {  # may be over already
        "process_id": "gone", "command": "sh", "args": ["-c", "exit 0"]}})
    assert poll(lambda: proc_info(b, "r4", "gone")["status"] == "exited", 5)
    cases = [
        (relay_path(physical("nosuch"), "p1"), "BoxSessionNotFoundError",
         "session %s not found" % physical("nosuch")),
        (relay_path(physical("r4"), "nope"), "BoxManagedProcessNotFoundError",
         "session %s has no managed process with process_id=nope" % physical("r4")),
        (relay_path(physical("r4"), None), "BoxManagedProcessNotFoundError",
         "session %s has no managed process with process_id=default" % physical("r4")),
        (relay_path(physical("r4"), "gone"), "BoxManagedProcessConflictError",
         "managed process gone in session %s is not running" % physical("r4")),
    ]
    for path, code, message in cases:
        assert_relay_400(b, path, code, message)
    ws = b.relay("r4", "p1")  # the live one still attaches
    ws.send_text("ok")
    assert ws.recv_text(5) == "ok"
    ws.close()
    b.ok("box_delete_session", {"session_id": "r4"})


@http_test()
def relay_auth_and_generation_401(h, kind):
    b = relay_session(h, kind, "r5", "default", "cat")
    b.ok("box_get_sessions", {}, dict(CTX, workspace_uuid="ws-2"))  # ws-2 is at generation 1
    path = relay_path(physical("r5"), "default")
    good = b.relay_headers()

    def without(*keys):
        return {k: v for k, v in good.items() if k not in keys}

    bad = [
        ("no headers", {}),
        ("no token", without("X-LangBot-Box-Control-Token")),
        ("wrong token", dict(good, **{"X-LangBot-Box-Control-Token": TOKEN[:-1] + "#"})),
        ("no instance", without("X-LangBot-Instance-Id")),
        ("other instance", dict(good, **{"X-LangBot-Instance-Id": "inst-2"})),
        ("no workspace/generation", without("X-LangBot-Workspace-Id",
                                            "X-LangBot-Placement-Generation")),
        ("no generation", without("X-LangBot-Placement-Generation")),
        ("workspace not owning the id", dict(good, **{"X-LangBot-Workspace-Id": "ws-2"})),
        ("generation ahead", dict(good, **{"X-LangBot-Placement-Generation": "2"})),
        ("generation not a number", dict(good, **{"X-LangBot-Placement-Generation": "abc"})),
        ("generation not canonical", dict(good, **{"X-LangBot-Placement-Generation": "01"})),
    ]
    for what, hdrs in bad:
        e = b.refused(path, hdrs, ["mcp"])
        assert (e.status, e.body) == (401, "Unauthorized"), (what, e.status, e.body)
    for p in (path, relay_path(physical("r5"), None)):  # the legacy route is "default"
        ws = b.ws(p, good, ["mcp"])
        assert ws.subprotocol == "mcp", ws.subprotocol
        ws.send_text(p)
        assert ws.recv_text(5) == p
        ws.close()
    ctx2 = dict(CTX, placement_generation=2)
    b.ok("box_get_sessions", {}, ctx2)  # generation 2: r5 (generation 1) becomes stale
    gone = os.path.join(b.runroot, "box", "sessions", physical("r5"))
    assert poll(lambda: not os.path.exists(gone), 10), "the generation-1 session stays"
    for what, hdrs in (("stale generation", good),
                       ("current generation, old id", b.relay_headers(ctx2))):
        e = b.refused(path, hdrs, ["mcp"])
        assert (e.status, e.body) == (401, "Unauthorized"), (what, e.status, e.body)


def netns_peer(h):
    """A test network namespace joined to this host by a veth pair on 10.251.77.0/30: returns
    (namespace, this host's address on the link). Removed after the test; traffic to and from it
    stays on this machine."""
    ns, link = "lbt-rpc-%d" % os.getpid(), "lbr%d" % os.getpid()
    host_addr, ns_addr = "10.251.77.1", "10.251.77.2"

    def remove():
        subprocess.run(["ip", "link", "del", link], capture_output=True)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    h.cleanups.append(remove)
    for cmd in (["netns", "add", ns],
                ["link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", ns],
                ["addr", "add", host_addr + "/30", "dev", link],
                ["link", "set", link, "up"],
                ["-n", ns, "addr", "add", ns_addr + "/30", "dev", "eth0"],
                ["-n", ns, "link", "set", "eth0", "up"]):
        r = subprocess.run(["ip"] + cmd, capture_output=True)
        assert r.returncode == 0, "ip %s: %s" % (" ".join(cmd), r.stderr)
    return ns, host_addr


def in_netns(ns, fn):
    """fn() on a thread that entered network namespace ns: the sockets it opens live there."""
    out = {}

    def run():
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = os.open("/run/netns/" + ns, os.O_RDONLY)
            try:
                if libc.setns(fd, 0x40000000) != 0:  # CLONE_NEWNET
                    raise OSError(ctypes.get_errno(), "setns %s" % ns)
            finally:
                os.close(fd)
            out["value"] = fn()
        except BaseException as e:  # re-raised on the test's thread
            out["error"] = e
    t = threading.Thread(target=run)
    t.start()
    t.join(60)
    if "error" in out:
        raise out["error"]
    assert "value" in out, "the namespace client did not finish"
    return out["value"]


def handshake(host, port, path, headers, subprotocols=None):
    """(status, body) of a refused upgrade, or "upgraded"."""
    try:
        ws = wsclient.connect(host, port, path, headers, subprotocols)
    except HandshakeError as e:
        return e.status, e.body
    ws.abort()
    return "upgraded"


@http_test("stdio")
def stdio_runtime_on_test_network_needs_token(h, kind):
    """The stdio runtime may listen on a non-loopback address only with a control token: from a
    test network namespace, /rpc/ws and the relay without the token get 401; with it, /rpc/ws
    runs actions and the relay reaches the process's stdin and stdout."""
    ns, addr = netns_peer(h)
    b = h.start(kind, token=TOKEN, host=addr)
    line = "lbbox: listening on %s:%d" % (addr, b.port)
    assert poll(lambda: line in b.stderr_lines, 5), "no %r: %r" % (line, b.stderr_lines)
    b.ok("box_create_session", spec("net1"))
    start_process(b, "net1", "default", "cat")
    relay = relay_path(physical("net1"))

    def from_namespace():
        got = {"rpc": handshake(addr, b.port, "/rpc/ws", b.auth_headers(token=None)),
               "relay": handshake(addr, b.port, relay, b.relay_headers(token=None), ["mcp"]),
               "health": wsclient.http_get(addr, b.port, "/healthz")[0]}
        ws = wsclient.connect(addr, b.port, relay, b.relay_headers(), ["mcp"])
        ws.send_text("from the namespace")
        got["echo"] = ws.recv_text(10)
        ws.close()
        rpc = wsclient.connect(addr, b.port, "/rpc/ws", b.auth_headers())
        rpc.send_text(json.dumps({"seq_id": 7, "action": "__ping", "data": {}}))
        got["ping"] = json.loads(rpc.recv_text(10))
        rpc.close()
        return got
    got = in_netns(ns, from_namespace)
    assert got["health"] == 200, got  # the listener is reachable from the namespace
    assert got["rpc"] == (401, "Unauthorized") and got["relay"] == (401, "Unauthorized"), got
    assert got["echo"] == "from the namespace", got
    assert got["ping"]["seq_id"] == 7 and got["ping"]["code"] == 0, got
    b.ok("box_delete_session", {"session_id": "net1"})


@http_test()
def relay_legacy_without_headers(h, kind):
    """No token: a relay without workspace/generation headers uses the id verbatim (0.4)."""
    b = h.start(kind)
    b.ok("box_create_session", spec("mcp-shared"), None)
    start_process(b, "mcp-shared", "default", "cat", ctx=None)
    for path in (relay_path("mcp-shared", None), relay_path("mcp-shared", "default")):
        ws = b.ws(path, {}, ["mcp"])
        assert ws.subprotocol == "mcp", ws.subprotocol
        ws.send_text('{"jsonrpc":"2.0","id":1}')
        assert ws.recv_text(5) == '{"jsonrpc":"2.0","id":1}'
        ws.close()
        wait_attached(b, "mcp-shared", "default", False, None)
    ws = b.ws(path, {"X-LangBot-Instance-Id": "inst-1"}, ["mcp"])  # a matching instance is fine
    ws.close()
    e = b.refused(path, {"X-LangBot-Instance-Id": "inst-2"}, ["mcp"])
    assert (e.status, e.body) == (401, "Unauthorized"), (e.status, e.body)
    b.ok("box_create_session", spec("r6"))  # a 0.5 session reached with 0.5 headers, no token
    start_process(b, "r6", "p", "cat")
    ws = b.relay("r6", "p")
    ws.send_text("new")
    assert ws.recv_text(5) == "new"
    ws.close()
    b.ok("box_delete_session", {"session_id": "mcp-shared"}, None)
    b.ok("box_delete_session", {"session_id": "r6"})


@http_test()
def relay_closes_when_placement_stale(h, kind):
    """§6.9: a newer placement generation removes the session; its relay is closed."""
    b = relay_session(h, kind, "st", "p", "cat")
    ws = b.relay("st", "p")
    ws.send_text("x")
    assert ws.recv_text(5) == "x"
    b.ok("box_get_sessions", {}, dict(CTX, placement_generation=2))
    ev = ws.recv_msg(5)
    assert ev[0] == "close" and ev[1] != 1006, "expected a close frame, got %r" % (ev,)
    gone = os.path.join(b.runroot, "box", "sessions", physical("st"))
    assert poll(lambda: not os.path.exists(gone), 10), "the stale session stays"


@http_test()
def relay_single_attachment(h, kind):
    """A second client is upgraded but waits until the first detaches (§6.9)."""
    b = relay_session(h, kind, "r7", "cat", "cat")
    first = b.relay("r7", "cat")
    wait_attached(b, "r7", "cat", True)
    second = b.relay("r7", "cat")
    second.send_text("fromB")
    first.send_text("fromA")
    assert first.recv_text(5) == "fromA", "the waiting client's message reached the process"
    try:
        ev = second.recv_msg(1.0)
        raise AssertionError("the waiting client got %r" % (ev,))
    except TimeoutError:
        pass
    first.close()
    assert second.recv_text(5) == "fromB", "the waiting client was not attached after the first"
    assert proc_info(b, "r7", "cat")["attached"] is True
    second.send_text("more")
    assert second.recv_text(5) == "more"
    second.close()
    wait_attached(b, "r7", "cat", False)
    b.ok("box_delete_session", {"session_id": "r7"})


@http_test()
def idle_connections_get_pings(h, kind):
    """LBBOX_BOX_WS_PING_SEC=1: idle relay and /rpc/ws connections are pinged; our pongs keep
    them open."""
    b = h.start(kind, token=TOKEN, env={"LBBOX_BOX_WS_PING_SEC": "1"})
    b.ok("box_create_session", spec("r8"))
    start_process(b, "r8", "cat", "cat")
    ws = b.relay("r8", "cat")
    rpc = b.ws("/rpc/ws", b.auth_headers())
    for conn in (ws, rpc):
        t0 = time.time()
        pings = 0
        while pings < 2:  # two pings, each answered
            ev = conn.recv(3.5)
            assert ev[0] == "ping", "expected a ping, got %r" % (ev,)
            pings += 1
        assert time.time() - t0 < 7, "two pings took %.1f s" % (time.time() - t0)
    ws.send_text("alive")
    assert ws.recv_text(5) == "alive"
    rpc.send_text(json.dumps({"seq_id": 7, "action": "__ping", "data": {}}))
    assert json.loads(rpc.recv_text(5))["seq_id"] == 7
    ws.close()
    rpc.close()
    b.ok("box_delete_session", {"session_id": "r8"})


@http_test()
def shutdown_closes_attached_relay(h, kind):
    """stdin EOF (stdio) or SIGTERM (serve) with an attached relay: exit 0 within 5 s, nothing
    left, the relay closed with 1001 `Box runtime shutting down` (§6.9)."""
    b = h.start(kind, token=TOKEN)
    b.ok("box_create_session", spec("r9", persistent=True))
    start_process(b, "r9", "cat", "cat")
    ws = b.relay("r9", "cat")
    ws.send_text("x")
    assert ws.recv_text(5) == "x"
    if kind == "stdio":
        b.p.stdin.close()
    else:
        b.p.send_signal(signal.SIGTERM)
    t0 = time.time()
    rc = b.p.wait(10)
    took = time.time() - t0
    b.exited_ok = True
    assert rc == 0 and took < 5, (rc, took)
    check_clean(b)
    ev = ws.recv_msg(2)
    assert ev[0] == "close", ev
    assert ev[1:] == (1001, "Box runtime shutting down"), "relay closed with %r" % (ev,)


# -- runner --------------------------------------------------------------------------------------
AS_NOBODY_CONNECT = """
import sys
sys.path.insert(0, %r)
import wsclient
try:
    ws = wsclient.connect("127.0.0.1", int(sys.argv[1]), sys.argv[2], {"X-LangBot-Instance-Id": "inst-1"})
    print("upgraded")
except wsclient.HandshakeError as e:
    print(e.status)
""" % os.path.dirname(os.path.abspath(__file__))


@http_test()
def without_token_only_lbbox_user_or_root(h, kind):
    """Without a control token the runtime listens on loopback, which every local user reaches:
    /rpc/ws and the relay then answer 401 to a peer running as another user (a Box request
    mounts host paths as root), and let lbbox's own user (root here) in."""
    b = h.start(kind)
    b.wait_http()
    nobody = pwd.getpwnam("nobody")
    relay = relay_path(physical("x"))
    # stdio serves /rpc/ws only with a token; the relay in both modes
    for path in ("/rpc/ws", relay) if kind == "serve" else (relay,):
        r = subprocess.run(["setpriv", "--reuid", str(nobody.pw_uid), "--regid",
                            str(nobody.pw_gid), "--clear-groups", sys.executable, "-c",
                            AS_NOBODY_CONNECT, str(b.port), path],
                           capture_output=True, text=True, timeout=30)
        assert r.stdout.strip() == "401", (path, r.stdout, r.stderr)
    # root, like lbbox: past the check (the relay then finds no such session: 400)
    assert b.refused(relay, {"X-LangBot-Instance-Id": "inst-1"}, ["mcp"]).status == 400
    if kind == "serve":
        assert b.connect_rpc().ok("__ping", {}, None) == {}


@http_test("serve")
def listen_on_localhost_by_name(h, kind):
    """--listen localhost:PORT listens on 127.0.0.1 (libwebsockets alone took it for an
    interface name and bound nothing)."""
    b = h.start(kind, listen_host="localhost")
    assert b.ok("__ping", {}, None) == {}
    assert get_json(b, "/healthz")["live"] is True


# -- skills (§6.6, §6.7, §6.11): fn(b) over stdio and /rpc/ws, each with its own store ----------
SKILL_TESTS, skill_test = registry()
SKILL_KEYS = ["name", "display_name", "description", "instructions", "package_root", "entry_file",
              "python_project", "created_at", "updated_at"]


def skill_server(h, kind):
    """A runtime whose host_root, upload directory and TMPDIR are the test's own."""
    for d in ("files", "tmp"):
        os.makedirs(os.path.join(h.tmp, d), exist_ok=True)
    b = h.start(kind, env={"LANGBOT_PLUGIN_FILE_STORAGE_DIR": os.path.join(h.tmp, "files"),
                           "TMPDIR": os.path.join(h.tmp, "tmp")}, token=TOKEN)
    b.hr = os.path.join(h.tmp, "hr")
    b.ok("box_init", {"local": {"host_root": b.hr}}, None)
    b.store = os.path.join(b.hr, "skills", "tenants", namespace("inst-1", "ws-1"))
    return b


def check_skill(s, name, root):
    assert list(s)[:9] == SKILL_KEYS, list(s)
    assert s["name"] == name and s["package_root"] == root, s
    for k in ("created_at", "updated_at"):
        assert s[k].endswith("+00:00") and s[k][10] == "T", s[k]
    return s


def skill_leftovers(b):
    """Uploads and unpack directories left behind (both must be empty after every action)."""
    return os.listdir(os.path.join(b.tmp, "files")) + os.listdir(os.path.join(b.tmp, "tmp"))


def write_file(path, text, mode="w"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, mode) as f:
        f.write(text)


@skill_test
def skill_catalogue(b):
    """list / get / create / update / delete with the SDK's shapes, texts and rules."""
    assert b.ok("box_list_skills", {}) == {"skills": []}
    assert os.path.isdir(b.store), "the Workspace store is tenants/<box_namespace>"
    desc = 'line one\nname: injected "quoted" \u00e9'
    s = b.ok("box_create_skill", {"skill": {"name": " pdf-tools ", "display_name": "PDF",
                                            "description": desc, "instructions": "Use it.\n"}})
    root = os.path.join(b.store, "pdf-tools")
    s = check_skill(s["skill"], "pdf-tools", root)
    assert (s["display_name"], s["description"], s["instructions"]) == ("PDF", desc.strip(),
                                                                        "Use it.\n"), s
    assert s["entry_file"] == "SKILL.md" and s["python_project"] is False, s
    with open(os.path.join(root, "SKILL.md")) as f:
        text = f.read()
    assert text.startswith("---\nname: pdf-tools\n") and text.endswith("---\n\nUse it.\n"), text
    assert b.ok("box_get_skill", {"name": "pdf-tools"}) == {"skill": s}
    assert b.ok("box_get_skill", {"name": "nope"}) == {"skill": None}
    b.err("box_get_skill", {}, "KeyError: 'name'")
    b.err("box_create_skill", {"skill": {"name": "pdf-tools"}},
          'BoxValidationError: Skill with name "pdf-tools" already exists')
    b.err("box_create_skill", {"skill": {"name": "a b"}}, "BoxValidationError: Skill name can "
          "only contain letters, numbers, hyphens and underscores")
    b.err("box_create_skill", {"skill": {"name": "x" * 65}},
          "BoxValidationError: Skill name cannot exceed 64 characters")
    b.err("box_create_skill", {"skill": {"name": "  "}}, "BoxValidationError: Skill name is required")
    b.err("box_create_skill", {}, "BoxValidationError: 'skill'")
    b.err("box_create_skill", {"skill": {"name": "out", "package_root": "/etc"}},
          "BoxValidationError: package_root must stay within the Workspace skill root")
    # update: fields change, a rename or another package_root is refused
    write_file(os.path.join(root, "requirements.txt"), "")
    u = b.ok("box_update_skill", {"name": "pdf-tools", "skill": {"description": "new"}})["skill"]
    assert (u["description"], u["display_name"], u["python_project"]) == ("new", "PDF", True), u
    b.err("box_update_skill", {"name": "pdf-tools", "skill": {"name": "other"}},
          "BoxValidationError: Renaming skills is not supported")
    b.err("box_update_skill", {"name": "pdf-tools", "skill": {"package_root": b.store}},
          "BoxValidationError: Updating package_root is not supported")
    b.err("box_update_skill", {"name": "nope", "skill": {}}, 'BoxValidationError: Skill "nope" '
          "not found")
    # an existing package in the store is imported where it is, its front matter kept
    pkg = os.path.join(b.store, "vendor", "imp")
    write_file(os.path.join(pkg, "skill.md"),
               "---\nname: vendored\ndescription: from the package\n---\nBody\n")
    i = b.ok("box_create_skill", {"skill": {"name": "imp", "package_root": pkg}})["skill"]
    assert (i["package_root"], i["description"], i["instructions"]) == (
        pkg, "from the package", "Body\n"), i
    names = [x["name"] for x in b.ok("box_list_skills", {})["skills"]]
    assert sorted(names) == ["imp", "pdf-tools"] and names[0] == "imp", names  # newest first
    # another Workspace sees none of them
    other = dict(CTX, workspace_uuid="ws-2")
    assert b.ok("box_list_skills", {}, other) == {"skills": []}
    assert b.ok("box_get_skill", {"name": "imp"}, other) == {"skill": None}
    # delete: the top directory under the store goes, nothing outside it
    assert b.ok("box_delete_skill", {"name": "imp"}) == {"deleted": "imp"}
    assert not os.path.exists(os.path.join(b.store, "vendor"))
    b.err("box_delete_skill", {"name": "imp"}, 'BoxValidationError: Skill "imp" not found')
    write_file(os.path.join(b.store, "SKILL.md"), "---\nname: at-root\n---\n")
    b.err("box_delete_skill", {"name": "at-root"}, "BoxValidationError: Only managed skills under "
          "the Box skills root can be deleted")
    os.unlink(os.path.join(b.store, "SKILL.md"))
    assert b.ok("box_delete_skill", {"name": "pdf-tools"}) == {"deleted": "pdf-tools"}
    assert os.listdir(b.store) == [], os.listdir(b.store)


@skill_test
def skill_legacy_store_without_context(b):
    """A caller without a context (SDK 0.4.x) has the store itself, no tenant namespace; the
    Workspaces' stores under it (tenants/) are not its skills: not listed, scanned or deleted."""
    ten = b.ok("box_create_skill", {"skill": {"name": "ten"}})["skill"]["package_root"]
    s = b.ok("box_create_skill", {"skill": {"name": "old"}}, None)["skill"]
    check_skill(s, "old", os.path.join(b.hr, "skills", "old"))
    assert [x["name"] for x in b.ok("box_list_skills", {})["skills"]] == ["ten"]
    assert [x["name"] for x in b.ok("box_list_skills", {}, None)["skills"]] == ["old"]
    b.err("box_delete_skill", {"name": "ten"}, 'BoxValidationError: Skill "ten" not found', None)
    b.err("box_scan_skill_directory", {"path": ten}, "BoxValidationError: scan path must stay "
          "within the Workspace skill root", None)
    assert os.path.isdir(ten)
    b.ok("box_write_skill_file", {"name": "old", "path": "a.txt", "content": "x"}, None)
    assert b.ok("box_read_skill_file", {"name": "old", "path": "a.txt"}, None)["content"] == "x"
    assert b.ok("box_delete_skill", {"name": "old"}, None) == {"deleted": "old"}
    assert not os.path.exists(os.path.join(b.hr, "skills", "old"))
    b.err("box_create_skill", {"skill": {"name": "tenants"}}, "BoxValidationError: Skill name "
          "tenants is reserved for the Workspace stores", None)
    assert os.listdir(os.path.join(b.hr, "skills", "tenants")) == [namespace("inst-1", "ws-1")]


@skill_test
def skill_discovery_rules(b):
    """Front matter, entry files, depth 6 for the list, links never followed, bad packages
    left out; scan_skill_directory finds one package to depth 2 inside the store."""
    os.makedirs(b.store, exist_ok=True)
    write_file(os.path.join(b.store, "a/b/c/d/e/deep/SKILL.md"), "no front matter")
    write_file(os.path.join(b.store, "a/b/c/d/e/f/tooDeep/SKILL.md"), "x")
    write_file(os.path.join(b.store, "named/SKILL.md"),
               "---\nname: real-name\ndisplay_name: '  Shown  '\n---\n\n\nText")
    write_file(os.path.join(b.store, "bad name/SKILL.md"), "x")  # invalid name: left out
    write_file(os.path.join(b.store, "binary/SKILL.md"), b"\xff\xfe", "wb")  # not UTF-8
    write_file(os.path.join(b.store, "huge/SKILL.md"), "x" * (1024 * 1024 + 1))
    os.symlink("/etc", os.path.join(b.store, "link"))
    outside = os.path.join(b.tmp, "outside")
    write_file(os.path.join(outside, "SKILL.md"), "---\nname: outside\n---\n")
    os.symlink(outside, os.path.join(b.store, "linked-skill"))
    skills = {s["name"]: s for s in b.ok("box_list_skills", {})["skills"]}
    assert sorted(skills) == ["deep", "real-name"], sorted(skills)
    assert skills["real-name"]["display_name"] == "Shown", skills["real-name"]
    assert skills["real-name"]["instructions"] == "Text", skills["real-name"]
    assert skills["deep"]["instructions"] == "no front matter", skills["deep"]
    s = b.ok("box_scan_skill_directory", {"path": os.path.join(b.store, "named")})
    check_skill(s, "real-name", os.path.join(b.store, "named"))
    b.err("box_scan_skill_directory", {"path": b.store}, "BoxValidationError: Multiple skill "
          "directories found in %s. Please choose a more specific path: " % b.store)
    b.err("box_scan_skill_directory", {"path": os.path.join(b.store, "a")}, "BoxValidationError: "
          "No SKILL.md found in %s/a or its subdirectories (max depth: 2)" % b.store)
    b.err("box_scan_skill_directory", {"path": os.path.join(b.store, "gone")},
          "BoxValidationError: Directory does not exist: %s/gone" % b.store)
    b.err("box_scan_skill_directory", {"path": outside},
          "BoxValidationError: scan path must stay within the Workspace skill root")
    b.err("box_scan_skill_directory", {"path": os.path.join(b.store, "linked-skill")},
          "BoxValidationError: scan path must stay within the Workspace skill root")
    b.err("box_scan_skill_directory", {"path": os.path.join(b.store, "huge")},
          "BoxValidationError: Skill entry file SKILL.md exceeds the 1048576-byte limit")
    b.err("box_scan_skill_directory", {"path": os.path.join(b.store, "binary")},
          "BoxValidationError: Skill entry file SKILL.md is not valid UTF-8 text")
    b.err("box_scan_skill_directory", {}, "BoxValidationError: 'path'")


@skill_test
def skill_files(b):
    """list / read / write a skill's files: shapes, limits, and no way out of the package."""
    root = b.ok("box_create_skill", {"skill": {"name": "f"}})["skill"]["package_root"]
    write_file(os.path.join(root, "scripts", "run.sh"), "echo hi\n")
    write_file(os.path.join(root, ".hidden"), "h")
    r = b.ok("box_list_skill_files", {"name": "f"})
    assert r == {"skill": {"name": "f"}, "base_path": ".", "truncated": False, "entries": [
        {"path": "SKILL.md", "name": "SKILL.md", "is_dir": False,
         "size": os.path.getsize(os.path.join(root, "SKILL.md"))},
        {"path": "scripts", "name": "scripts", "is_dir": True, "size": None}]}, r
    r = b.ok("box_list_skill_files", {"name": "f", "path": "./scripts/", "include_hidden": 1,
                                      "max_entries": "1"})
    assert r["base_path"] == "scripts" and r["truncated"] is False, r
    assert r["entries"] == [{"path": "scripts/run.sh", "name": "run.sh", "is_dir": False,
                             "size": 8}], r
    r = b.ok("box_list_skill_files", {"name": "f", "include_hidden": True, "max_entries": 1})
    assert [e["name"] for e in r["entries"]] == [".hidden"] and r["truncated"] is True, r
    b.err("box_list_skill_files", {"name": "f", "max_entries": 0},
          "BoxValidationError: max_entries must be a positive integer")
    b.err("box_list_skill_files", {"name": "f", "max_entries": "x"},
          "BoxValidationError: invalid literal for int() with base 10: 'x'")
    b.err("box_list_skill_files", {"name": "f", "path": "nope"},
          "BoxValidationError: Skill directory not found: nope")
    b.err("box_list_skill_files", {"name": "g"}, 'BoxValidationError: Skill "g" not found')
    r = b.ok("box_read_skill_file", {"name": "f", "path": "scripts//run.sh"})
    assert r == {"skill": {"name": "f"}, "path": "scripts/run.sh", "content": "echo hi\n"}, r
    w = b.ok("box_write_skill_file", {"name": "f", "path": "new/dir/t.txt", "content": "h\u00e9"})
    assert w == {"skill": {"name": "f"}, "path": "new/dir/t.txt", "bytes_written": 3}, w
    with open(os.path.join(root, "new/dir/t.txt"), "rb") as f:
        assert f.read() == "h\u00e9".encode()
    b.err("box_write_skill_file", {"name": "f", "path": "big", "content": "x" * (1 << 20 | 1)},
          "BoxValidationError: Skill file big exceeds the 1048576-byte limit")
    assert not os.path.exists(os.path.join(root, "big"))
    write_file(os.path.join(root, "bin"), b"\x80", "wb")
    b.err("box_read_skill_file", {"name": "f", "path": "bin"},
          "BoxValidationError: Skill file bin is not valid UTF-8 text")
    b.err("box_read_skill_file", {"name": "f", "path": "missing"},
          "BoxValidationError: Skill file not found: missing")
    for bad, text in (("../x", "path must stay within the skill package root"),
                      ("a/../../x", "path must stay within the skill package root"),
                      ("/etc/passwd", "path must be relative to the skill package root")):
        b.err("box_read_skill_file", {"name": "f", "path": bad}, "BoxValidationError: " + text)
        b.err("box_write_skill_file", {"name": "f", "path": bad, "content": "x"},
              "BoxValidationError: " + text)
    # a link the skill's author planted leads nowhere: not read through, not written through
    outside = os.path.join(b.tmp, "outside")
    write_file(os.path.join(outside, "secret"), "s")
    os.symlink(outside, os.path.join(root, "link"))
    os.symlink(os.path.join(outside, "secret"), os.path.join(root, "file-link"))
    for path in ("link/secret", "file-link"):
        b.err("box_read_skill_file", {"name": "f", "path": path},
              "BoxValidationError: path must not go through a symbolic link")
        b.err("box_write_skill_file", {"name": "f", "path": path, "content": "x"},
              "BoxValidationError: path must not go through a symbolic link")
    b.err("box_write_skill_file", {"name": "f", "path": "link/new", "content": "x"},
          "BoxValidationError: path must not go through a symbolic link")
    assert sorted(os.listdir(outside)) == ["secret"]
    with open(os.path.join(outside, "secret")) as f:
        assert f.read() == "s"
    b.err("box_write_skill_file", {"name": "f", "path": "x", "content": 3},
          "BoxValidationError: content must be a string")
    b.err("box_write_skill_file", {"name": "f", "content": "x"}, "BoxValidationError: 'path'")


def make_zip(entries):
    """A zip of (name, data) pairs; data None = a directory, ("link", target) = a symlink."""
    import io
    import warnings
    import zipfile
    buf = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        warnings.simplefilter("ignore")  # a duplicate name is what the test wants
        for name, data in entries:
            if isinstance(data, tuple):
                info = zipfile.ZipInfo(name)
                info.external_attr = (0o120777 << 16)
                info.create_system = 3
                z.writestr(info, data[1])
            elif data is None:
                z.writestr(zipfile.ZipInfo(name if name.endswith("/") else name + "/"), b"")
            else:
                z.writestr(name, data)
    return buf.getvalue()


def upload_zip(b, key, blob):
    """An upload in 16 KiB chunks, as LangBot sends it."""
    parts = [blob[i:i + 16384] for i in range(0, len(blob), 16384)] or [b""]
    for i, part in enumerate(parts):
        assert b.ok("__file_chunk", upload_chunk(key, i, part, len(parts), len(blob)), None) == {}


ONE = [("pkg/SKILL.md", "---\nname: zipped\ndescription: zipped\n---\nDo it.\n"),
       ("pkg/run.sh", "echo z\n"), ("pkg/docs/\u8bf4\u660e.txt", "\u4e2d\u6587")]
TWO = [("README", "x"), ("one/SKILL.md", "---\nname: one\n---\n"),
       ("two/x/SKILL.md", "---\nname: two\n---\n")]


@skill_test
def skill_zip_preview_and_install(b):
    """A zip uploaded with __file_chunk: previewed and installed with the SDK's shapes, its
    upload removed by the action that read it; the choice among several packages."""
    upload_zip(b, "a1-up.zip", make_zip(ONE))
    r = b.ok("box_preview_skill_zip", {"file_key": "a1-up.zip", "filename": "My Skill.zip",
                                       "source_subdir": "", "target_suffix": "upload"})
    assert skill_leftovers(b) == [], skill_leftovers(b)
    [p] = r["skills"]
    check_skill(p, "zipped", os.path.join(b.store, "My-Skill-upload"))
    assert list(p)[9:] == ["source_path"] and p["source_path"] == "", p
    assert p["description"] == "zipped" and not os.path.exists(p["package_root"]), p
    b.err("box_install_skill_zip", {"file_key": "a1-up.zip", "filename": "My Skill.zip"},
          "BoxValidationError: [Errno 2] No such file or directory: 'a1-up.zip'")
    upload_zip(b, "a1-up.zip", make_zip(ONE))
    r = b.ok("box_install_skill_zip", {"file_key": "a1-up.zip", "filename": "My Skill.zip"})
    assert skill_leftovers(b) == [], skill_leftovers(b)
    [s] = r["skills"]
    check_skill(s, "zipped", os.path.join(b.store, "My-Skill-upload"))
    assert b.ok("box_get_skill", {"name": "zipped"})["skill"] == s
    st = os.stat(os.path.join(s["package_root"], "run.sh"))
    assert st.st_mode & 0o777 == 0o644, oct(st.st_mode)
    r = b.ok("box_read_skill_file", {"name": "zipped", "path": "docs/\u8bf4\u660e.txt"})
    assert r["content"] == "\u4e2d\u6587", r  # a UTF-8 name, whatever the runtime's locale
    upload_zip(b, "a1-up.zip", make_zip(ONE))
    b.err("box_install_skill_zip", {"file_key": "a1-up.zip", "filename": "My Skill.zip"},
          "BoxValidationError: Skill directory already exists: %s/My-Skill-upload" % b.store)
    assert skill_leftovers(b) == [], skill_leftovers(b)
    # several packages: each previewed; install needs source_paths
    upload_zip(b, "two.zip", make_zip(TWO))
    r = b.ok("box_preview_skill_zip", {"file_key": "two.zip", "filename": "multi.zip",
                                       "target_suffix": None})
    assert [(x["source_path"], x["name"], os.path.basename(x["package_root"]))
            for x in r["skills"]] == [("one", "one", "multi-one"), ("two/x", "two", "multi-x")], r
    upload_zip(b, "two.zip", make_zip(TWO))
    b.err("box_install_skill_zip", {"file_key": "two.zip", "filename": "multi.zip"},
          "BoxValidationError: Multiple skills found. Please choose one or more source_paths: "
          "one, two/x")
    upload_zip(b, "two.zip", make_zip(TWO))
    b.err("box_install_skill_zip", {"file_key": "two.zip", "source_paths": ["nope"]},
          'BoxValidationError: Invalid source_path "nope". Available: one, two/x')
    upload_zip(b, "two.zip", make_zip(TWO))
    r = b.ok("box_install_skill_zip", {"file_key": "two.zip", "filename": "multi.zip",
                                       "source_paths": ["/one/", "two\\x"], "source_path": "one"})
    assert [x["name"] for x in r["skills"]] == ["one", "two"], r
    assert os.path.isfile(os.path.join(b.store, "multi-x-upload", "SKILL.md"))
    # source_subdir
    upload_zip(b, "two.zip", make_zip(TWO))
    r = b.ok("box_preview_skill_zip", {"file_key": "two.zip", "source_subdir": "two"})
    assert [(x["source_path"], x["name"]) for x in r["skills"]] == [("x", "two")], r
    upload_zip(b, "two.zip", make_zip(TWO))
    b.err("box_preview_skill_zip", {"file_key": "two.zip", "source_subdir": "../.."},
          "BoxValidationError: source_subdir must stay within the uploaded archive")
    upload_zip(b, "two.zip", make_zip(TWO))
    b.err("box_preview_skill_zip", {"file_key": "two.zip", "source_subdir": "nope"},
          "BoxValidationError: source_subdir does not exist in the uploaded archive: nope")
    upload_zip(b, "no.zip", make_zip([("README", "x")]))
    b.err("box_preview_skill_zip", {"file_key": "no.zip"},
          "BoxValidationError: No SKILL.md found in the uploaded archive")
    upload_zip(b, "no.zip", make_zip([]))  # libarchive does not recognise an empty zip
    b.err("box_preview_skill_zip", {"file_key": "no.zip"},
          "BoxValidationError: Uploaded file must be a valid .zip archive")
    b.err("box_preview_skill_zip", {}, "BoxValidationError: 'file_key'")
    b.err("box_preview_skill_zip", {"file_key": "../x"}, "BoxValidationError: Invalid file_key")
    assert skill_leftovers(b) == [], skill_leftovers(b)
    # an upload is read only by the connection that sent it (ws: another connection; stdio: a
    # /rpc/ws client beside the pipe)
    other = b.connect_rpc()
    upload_zip(b, "mine.zip", make_zip(ONE))
    other.err("box_preview_skill_zip", {"file_key": "mine.zip"},
              "BoxValidationError: [Errno 2] No such file or directory: 'mine.zip'")
    assert os.listdir(os.path.join(b.tmp, "files")) == ["mine.zip"]
    b.ok("box_preview_skill_zip", {"file_key": "mine.zip"})
    assert skill_leftovers(b) == [], skill_leftovers(b)


HOSTILE = [
    ("zip-slip", [("../evil/SKILL.md", "x")], "Archive contains an unsafe path: ../evil/SKILL.md"),
    ("absolute", [("/tmp/evil/SKILL.md", "x")], "Archive contains an unsafe path: /tmp/evil"),
    ("dotdot inside", [("a/../../evil", "x")], "Archive contains an unsafe path: a/../../evil"),
    ("symlink", [("s/SKILL.md", "x"), ("s/link", ("link", "/etc/passwd"))],
     "Archive contains a symbolic link: s/link"),
    ("duplicate", [("d/SKILL.md", "x"), ("d/SKILL.md", "y")],
     "Archive contains a duplicate path: d/SKILL.md"),
    ("duplicate after normalising", [("d/SKILL.md", "x"), ("d/./SKILL.md", "y")],
     "Archive contains a duplicate path: d/./SKILL.md"),
    ("ratio bomb", [("b/SKILL.md", "x"), ("b/zeros", b"\0" * (10 << 20))],
     "Archive entry exceeds the compression ratio limit: b/zeros"),
    ("oversize entry", [("o/SKILL.md", "x"), ("o/big", b"\0" * (17 << 20))],
     "Archive entry exceeds the uncompressed size limit: o/big"),
    ("too many entries", [("m/%d" % i, "") for i in range(513)],
     "Archive contains too many entries (maximum 512)"),
    ("not a zip", b"PK\x03\x04 but not really a zip archive at all",
     "Uploaded file must be a valid .zip archive"),
]


@skill_test
def skill_zip_hostile_archives(b):
    """Zip-slip, absolute paths, symlink entries, duplicates, a ratio bomb, an oversize entry,
    too many entries, garbage: each refused with the SDK's message, the upload gone, nothing
    unpacked left anywhere, nothing written outside."""
    os.makedirs(b.store, exist_ok=True)
    for label, entries, text in HOSTILE:
        blob = entries if isinstance(entries, bytes) else make_zip(entries)
        for action in ("box_preview_skill_zip", "box_install_skill_zip"):
            upload_zip(b, "h.zip", blob)
            m = b.err(action, {"file_key": "h.zip"}, "BoxValidationError: " + text)
            assert skill_leftovers(b) == [], (label, skill_leftovers(b))
            assert os.listdir(b.store) == [], (label, os.listdir(b.store))
        assert not os.path.exists(os.path.join(b.hr, "skills", "tenants", "evil")), label
        assert not os.path.exists("/tmp/evil"), label
    upload_zip(b, "e.zip", b"x")
    with open(os.path.join(b.tmp, "files", "e.zip"), "wb"):
        pass  # emptied behind the runtime's back
    b.err("box_preview_skill_zip", {"file_key": "e.zip"}, "BoxValidationError: Uploaded file is "
          "empty")


@skill_test
def skill_name_mounts_the_package_read_only(b):
    """skill_name (§6.11): the Workspace's package at /workspace/.skills/<name>, read-only."""
    b.ok("box_create_skill", {"skill": {"name": "tool", "instructions": "hello skill"}})
    b.ok("box_write_skill_file", {"name": "tool", "path": "bin/run.sh", "content": "echo ran\n"})
    r = b.ok("box_exec", spec("sk1", "cat /workspace/.skills/tool/SKILL.md; "
                              "sh /workspace/.skills/tool/bin/run.sh; "
                              "touch /workspace/.skills/tool/x && echo WROTE; "
                              "grep ' /workspace/.skills/tool ' /proc/self/mounts",
                              skill_name="tool"))
    out = r["stdout"]
    assert "hello skill" in out and "ran" in out and "WROTE" not in out, r
    assert "Read-only file system" in r["stderr"], r
    opts = out.strip().splitlines()[-1].split()[3].split(",")
    assert "ro" in opts and "nosuid" in opts and "nodev" in opts, out
    assert not os.path.exists(os.path.join(b.store, "tool", "x"))
    b.ok("box_delete_session", {"session_id": "sk1"})
    b.err("box_exec", spec("sk2", "true", skill_name="missing"),
          'BoxValidationError: Skill "missing" is unavailable in this Workspace')
    other = dict(CTX, workspace_uuid="ws-2")
    b.err("box_exec", spec("sk3", "true", skill_name="tool"), 'BoxValidationError: Skill "tool" '
          "is unavailable in this Workspace", other)


@skill_test
def skill_store_is_no_host_path(b):
    """No host path (host_path or an extra mount, directly or through a link) may lie in the
    skill store or contain it: a sandbox that could write there could rewrite another
    Workspace's skills or plant links for the runtime's own skill mounts."""
    b.ok("box_create_skill", {"skill": {"name": "tool", "instructions": "A's secret"}})
    other = dict(CTX, workspace_uuid="ws-2")
    os.symlink(b.store, os.path.join(b.hr, "alias"))
    for path in (b.store, os.path.join(b.store, "tool"), os.path.join(b.hr, "skills"), b.hr,
                 os.path.join(b.hr, "alias")):
        b.err("box_exec", spec("h1", "cat /workspace/tool/SKILL.md", host_path=path),
              "BoxValidationError: host_path %s overlaps the skill store" % (
                  os.path.realpath(path)), other)
        mount = {"host_path": path, "mount_path": "/mnt/x", "mode": "rw"}
        b.err("box_exec", spec("h2", "true", extra_mounts=[mount]),
              "BoxValidationError: host_path %s overlaps the skill store" % (
                  os.path.realpath(path)), other)
    work = os.path.join(b.hr, "work")
    r = b.ok("box_exec", spec("h3", "echo ok", host_path=work), other)
    assert r["stdout"] == "ok", r
    with open(os.path.join(b.store, "tool", "SKILL.md")) as f:
        assert "A's secret" in f.read()


@skill_test
def skill_store_runs_outside_the_runtime(b):
    """The skill store's libraries (libarchive, libyaml and what they load) are the helper
    lbbox-skill's, never mapped into the runtime, whose every forked job would copy them."""
    b.ok("box_create_skill", {"skill": {"name": "far", "instructions": "helper-made"}})
    r = b.ok("box_get_skill", {"name": "far"})
    assert r["skill"]["instructions"] == "helper-made", r
    with open("/proc/%d/maps" % b.p.pid) as f:
        maps = f.read()
    # the runtime itself, sealed: a view of its binary as root, else a copy
    assert sealed_form(b.p.pid) == ("view" if os.geteuid() == 0 else "memfd"), b.p.pid
    for lib in ("libarchive", "libyaml", "libxml2", "libicu"):
        assert lib not in maps, "%s is mapped into lbbox-server" % lib


@skill_test
def skill_mount_never_follows_a_swapped_link(b):
    """skill_name's package swapped for a link to another directory while execs mount it: the
    mount is the package or refused, never the link's target."""
    b.ok("box_create_skill", {"skill": {"name": "evil", "instructions": "real package"}})
    outside = os.path.join(b.tmp, "outside")
    write_file(os.path.join(outside, "MARK"), "OUTSIDE\n")
    pkg, parked = os.path.join(b.store, "evil"), os.path.join(b.store, "e2")
    stop = threading.Event()

    def swap():
        while not stop.is_set():
            os.rename(pkg, parked)
            os.symlink(outside, pkg)
            time.sleep(0.003)
            os.unlink(pkg)
            os.rename(parked, pkg)
            time.sleep(0.003)
    t = threading.Thread(target=swap)
    t.start()
    mounted = 0
    try:
        deadline = time.time() + 4
        i = 0
        while time.time() < deadline:
            i += 1
            r = b.call("box_exec", spec("race%d" % i, "cat /workspace/.skills/evil/MARK "
                                        "/workspace/.skills/evil/SKILL.md 2>/dev/null",
                                        skill_name="evil"))
            if r["code"] == 0:
                assert "OUTSIDE" not in r["data"]["stdout"], r
                mounted += 1
                # each try a new session (a reused one keeps its mount): never past the cap
                b.ok("box_delete_session", {"session_id": "race%d" % i})
            else:  # found mid-swap, or gone or a link when mounted: refused, one line
                assert r["message"].split(":")[0] in ("BoxValidationError", "BoxError"), r
    finally:
        stop.set()
        t.join()
    assert mounted > 0, "no exec of %d got the package mounted" % i


def run_skill(fn, kind, h):
    fn(skill_server(h, kind))


def session_dirs(b):
    return sorted(os.listdir(os.path.join(b.runroot, "box", "sessions")))


def sandbox_dirs(b):
    return sorted(d for d in os.listdir(b.runroot) if len(d) == 12)


@http_test()
def killed_runtime_is_cleaned_after_a_restart(h, kind):
    """SIGKILL of a runtime with an exec, a managed process, a network "on" session and a
    create in flight: the next runtime on the same state removes every session, sandbox,
    cgroup, keeper, veth and address lease of the dead one at once, and nothing of a live
    instance's."""
    n = os.getpid() % 200
    br = "lbtk%d" % n
    env = {"LBBOX_NET_BRIDGE": br, "LBBOX_NET_SUBNET": "10.204.%d.0/24" % n}
    live = h.start(kind, env=env)
    live.ok("box_exec", spec("live1", "echo up"))
    dead = h.start(kind, env=env)
    dead.ok("box_exec", spec("d1", "true"))
    start_process(dead, "d1", "default", "cat")
    dead.ok("box_exec", spec("d3", "true", network="on"))
    d3 = dead.ok("box_get_session", {"session_id": "d3"})["backend_session_id"][6:]
    veth = "lbbox-%s" % d3[:8]
    assert os.path.exists("/sys/class/net/" + veth), veth
    dead.send("box_exec", spec("d1", "sleep 1000", timeout_sec=600))
    dead.send("box_create_session", spec("d2"))
    time.sleep(0.5)  # the exec runs, the create is on its way
    dead.p.kill()
    dead.p.wait()
    dead.exited_ok = True
    h.cleanups.append(lambda: prune_networks(live, (br,)))
    assert len(session_dirs(live)) >= 3, session_dirs(live)
    h.start(kind, env=env)  # the restart
    keep = [physical("live1")]
    assert poll(lambda: session_dirs(live) == keep, 10), session_dirs(live)
    info = live.ok("box_get_session", {"session_id": "live1"})
    assert poll(lambda: sandbox_dirs(live) == [info["backend_session_id"][6:]], 10), \
        sandbox_dirs(live)
    assert poll(lambda: not leftover_processes(dead.tmp + "/run/box/sessions/" +
                                               physical("d1")), 5)
    cgs = [i for i in dead.ids if lbbox_cgroups_of(i)]
    assert not cgs, "cgroups of the dead runtime's sandboxes: %s" % cgs
    assert poll(lambda: not os.path.exists("/sys/class/net/" + veth), 5), "veth %s left" % veth
    ins = subprocess.run([LBBOX, "--root", live.root, "--runroot", live.runroot, "network",
                          "inspect", "--json"], env=live.env, capture_output=True, text=True)
    assert ins.returncode == 0 and d3 not in ins.stdout, "lease of %s left: %s" % (d3, ins.stdout)
    assert live.ok("box_exec", spec("live1", "echo still"))["stdout"] == "still"
    live.ok("box_delete_session", {"session_id": "live1"})
    prune_networks(live, (br,))


def lbbox_cgroups_of(sandbox_id):
    return [c for c in glob.glob("/sys/fs/cgroup/*/lbbox-%s" % sandbox_id) +
            glob.glob("/sys/fs/cgroup/*/*/lbbox-%s" % sandbox_id) +
            glob.glob("/sys/fs/cgroup/*/*/*/lbbox-%s" % sandbox_id)]


def run_shared(fn, kind, h):
    b = h.start(kind)
    fn(b)


def cases():
    out = [("rpc::wsclient_selftest", lambda h: wsclient._selftest())]
    out += [("rpc::" + fn.__name__, lambda h, fn=fn: run_shared(fn, "stdio", h)) for fn in TESTS]
    out += [("rpc::" + fn.__name__, fn) for fn in STDIO_ONLY]
    out += [("rpc_ws::" + fn.__name__, lambda h, fn=fn: run_shared(fn, "serve", h))
            for fn in TESTS]
    for kind, group in (("stdio", "rpc"), ("serve", "rpc_ws")):
        out += [("%s::%s" % (group, fn.__name__), lambda h, fn=fn, k=kind: run_skill(fn, k, h))
                for fn in SKILL_TESTS]
    for fn, kinds in HTTP_TESTS:
        out += [("http_%s::%s" % (k, fn.__name__), lambda h, fn=fn, k=k: fn(h, k))
                for k in kinds]
    return out


def main(all_cases=None):
    """Runs all_cases (label, fn(h)), by default this file's; 1 if any failed."""
    passed = failed = 0
    pattern = os.environ.get("LBBOX_RPC_FILTER")
    for label, fn in all_cases if all_cases is not None else cases():
        if pattern and not fnmatch.fnmatch(label, pattern):
            continue
        tmp = tempfile.mkdtemp(prefix="lbbox-rpc-")
        h = Harness(tmp)
        t0 = time.time()
        try:
            fn(h)
            h.finish()
            passed += 1
            print("[PASS] %s: (%.2fs)" % (label, time.time() - t0), flush=True)
        except Exception:
            failed += 1
            print("[FAIL] %s: (%.2fs)" % (label, time.time() - t0), flush=True)
            traceback.print_exc()
            tails = h.stderr_tails()
            if tails:
                print(tails, flush=True)
        finally:
            h.kill()
            subprocess.run([LBBOX, "--runroot", os.path.join(tmp, "run"), "--root",
                            os.path.join(tmp, "root"), "session", "gc", "--ttl", "1"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for fn in h.cleanups:
                fn()
            shutil.rmtree(tmp, ignore_errors=True)
    print("[====] Synthesis: Tested: %d | Passing: %d | Failing: %d | Crashing: 0"
          % (passed + failed, passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
