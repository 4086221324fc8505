#!/usr/bin/env python3
"""The Box runtime as LangBot starts it, on the default paths (no --root, --runroot or LBBOX_*
variables): over stdio (`lbbox box -s --ws-control-port P`) and over `lbbox serve` + /rpc/ws,
a session without a host path (lbbox's own workspace under /run/lbbox), an exec in it, its
deletion, and a clean exit. Prints "ok", or what went wrong and exits 1.

usage: box_smoke.py LBBOX   (the image rockchin/langbot-sandbox:latest must be in the store)
"""
import json
import os
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "rpc"))
import wsclient  # noqa: E402

LBBOX = sys.argv[1]
ENV = dict(os.environ, LANGBOT_BOX_TRUSTED_INSTANCE_UUID="inst-smoke")
ENV.pop("LANGBOT_BOX_CONTROL_TOKEN", None)


def spec(cmd=""):
    return {"cmd": cmd, "session_id": "smoke", "workdir": "/workspace", "timeout_sec": 30,
            "network": "off", "image": "rockchin/langbot-sandbox:latest", "host_path": None}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def scenario(call):
    """call(action, data) -> reply; the LangBot-shaped steps of one session."""
    r = call("box_create_session", spec())
    assert r["code"] == 0, r
    r = call("box_exec", spec("echo hi > f; cat f; pwd"))
    assert r["code"] == 0 and r["data"]["stdout"] == "hi\n/workspace" and \
        r["data"]["exit_code"] == 0, r
    r = call("box_delete_session", {"session_id": "smoke"})
    assert r["code"] == 0, r


def stdio():
    p = subprocess.Popen([LBBOX, "box", "-s", "--ws-control-port", str(free_port())],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=ENV)
    seq = [0]

    def call(action, data):
        seq[0] += 1
        p.stdin.write((json.dumps({"seq_id": seq[0], "action": action, "data": data}) +
                       "\n").encode())
        p.stdin.flush()
        while True:
            m = json.loads(p.stdout.readline())
            if m.get("seq_id") == seq[0]:
                return m

    try:
        scenario(call)
    finally:
        p.stdin.close()
        rc = p.wait(15)
    assert rc == 0, "stdio runtime exit status %d" % rc


def serve():
    port = free_port()
    p = subprocess.Popen([LBBOX, "serve", "--listen", "127.0.0.1:%d" % port],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=ENV)
    try:
        for _ in range(100):
            try:
                ws = wsclient.connect("127.0.0.1", port, "/rpc/ws",
                                      {"X-LangBot-Instance-Id": "inst-smoke"})
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise AssertionError("lbbox serve does not listen")
        seq = [0]

        def call(action, data):
            seq[0] += 1
            ws.send_text(json.dumps({"seq_id": seq[0], "action": action, "data": data}))
            while True:
                ev = ws.recv(60)
                assert ev[0] == "text", ev
                m = json.loads(ev[1])
                if m.get("seq_id") == seq[0]:
                    return m

        scenario(call)
        ws.abort()
    finally:
        p.send_signal(signal.SIGTERM)
        rc = p.wait(15)
    assert rc == 0, "lbbox serve exit status %d" % rc


try:
    stdio()
    serve()
    print("ok")
except Exception as e:  # one line for the stage's report
    print("%s: %s" % (type(e).__name__, e))
    sys.exit(1)
