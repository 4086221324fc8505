#!/usr/bin/env python3
"""The default Box image (rootfs-tools/box.sh, localhost/box:latest) through the Box RPC.

With LangBot's default image name and no alias, a session runs in the box image once it is in
the store; LangBot's file tools (`python - <<'PY'`) and the usual MCP launchers (node, npx) work
there; a stdio MCP server written in Python and one in Node start as managed processes and
answer an MCP `initialize` over the relay (subprotocol mcp), over both transports.

The image comes as the OCI layout scripts/setup.sh writes: $LBBOX_TEST_BOX_OCI, else
images/box-oci beside LBBOX_BIN. It is loaded once into a private root all tests share. A
missing layout fails the run; LBBOX_SKIP_BOX=1 (a developer who skipped the image in setup.sh)
skips it instead, saying so.

usage: box_image.py LBBOX_BIN BUSYBOX_ROOTFS   (as root; LBBOX_RPC_FILTER as conformance.py)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conformance as c  # noqa: E402

LOCAL = "localhost/box:latest"
NO_ALIAS = {"LBBOX_BOX_IMAGE_ALIASES": None}
ROOT = None  # the shared lbbox root holding the box image (set in main)

PY_SERVER = r'''
import json, platform, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("method") == "initialize":
        r = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}},
             "serverInfo": {"name": "py-mcp", "version": platform.python_version()}}
    elif m.get("method") == "tools/list":
        r = {"tools": []}
    else:
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}), flush=True)
'''

NODE_SERVER = r'''
const rl = require("readline").createInterface({ input: process.stdin });
rl.on("line", (line) => {
  let m;
  try { m = JSON.parse(line); } catch (e) { return; }
  let r;
  if (m.method === "initialize")
    r = { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} },
          serverInfo: { name: "node-mcp", version: process.versions.node } };
  else if (m.method === "tools/list")
    r = { tools: [] };
  else
    return;
  process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: m.id, result: r }) + "\n");
});
'''

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-03-26", "capabilities": {},
    "clientInfo": {"name": "lbbox-test", "version": "1"}}}


def start(h, kind, env=NO_ALIAS, **kw):
    """A runtime on the shared root, LangBot's default image unaliased unless env says."""
    b = h.start(kind, root=ROOT, env=env, **kw)
    return b


def run(b, session, cmd, **kw):
    r = b.ok("box_exec", c.spec(session, cmd, **kw), timeout=120)
    assert r["exit_code"] == 0, r
    return r["stdout"]


def default_image_runs_as_the_box_image(h):
    """rockchin/langbot-sandbox:latest, no alias, not in the store: localhost/box:latest; an alias
    or box.lbbox.default_image overrides it (box_health shows which)."""
    b = start(h, "stdio")
    health = b.ok("box_health", {}, None)
    assert health["default_image"] == {"name": c.IMAGE, "local": LOCAL}, health
    out = run(b, "d1", "cat /etc/debian_version; ls /home")
    assert out.split("\n")[0].startswith("12."), out
    b.ok("box_init", {"lbbox": {"default_image": ""}}, None)
    assert b.ok("box_health", {}, None)["default_image"] == {"name": c.IMAGE, "local": None}
    b.err("box_exec", c.spec("d2", "true"), "BoxError: image %s is not available" % c.IMAGE)
    for bad in (3, "a b", "x,y", "x" * 300):
        b.err("box_init", {"lbbox": {"default_image": bad}}, "ValueError: box.lbbox.default_image",
              None)
    assert b.ok("box_health", {}, None)["default_image"]["local"] is None  # all or nothing
    b.ok("box_init", {"lbbox": {"default_image": LOCAL}}, None)
    run(b, "d3", "command -v node")
    # an alias names the image: the busybox rootfs (no node there)
    a = start(h, "serve", env={"LBBOX_BOX_IMAGE_ALIASES": c.IMAGE + "=busybox"})
    assert a.ok("box_health", {}, None)["default_image"]["local"] == "busybox"
    r = a.ok("box_exec", c.spec("d4", "command -v node || echo none"))
    assert r["stdout"] == "none", r


def langbot_tools_run_in_the_box_image(h):
    """What LangBot and its MCP setup run: python (heredoc), pip, venv, node, npm, npx, git, curl."""
    b = start(h, "stdio")
    out = run(b, "t1", "python - <<'PY'\nimport ssl, sys, venv\nprint('py', sys.version_info[0])\nPY")
    assert out == "py 3", out
    checks = [("python3 --version", "Python 3."), ("pip --version", "pip "),
              ("node --version", "v"), ("npm --version", ""), ("npx --version", ""),
              ("git --version", "git version "), ("curl --version", "curl "),
              ("jq --version", "jq-"), ("ps -p 1 -o pid=", "")]
    for cmd, prefix in checks:
        out = run(b, "t1", cmd)
        assert out.startswith(prefix) and out.strip(), (cmd, out)
    # a venv, as LangBot's MCP dependency bootstrap makes one (no network: no pip install)
    out = run(b, "t2", "python -m venv --without-pip /tmp/v && /tmp/v/bin/python -c "
              "'import sys; print(sys.prefix)'", read_only_rootfs=False)
    assert out == "/tmp/v", out


def mcp_over_the_relay(h, kind):
    """A stdio MCP server in Python and one in Node, managed processes in one session as LangBot
    starts them (§8), each answers initialize and tools/list over its relay."""
    ws_dir = os.path.join(h.tmp, "workspace")
    os.makedirs(ws_dir)
    for name, text in (("server.py", PY_SERVER), ("server.js", NODE_SERVER)):
        with open(os.path.join(ws_dir, name), "w") as f:
            f.write(text)
    b = start(h, kind, token=c.TOKEN)
    b.ok("box_create_session", c.spec("mcp-shared", network="off", persistent=True,
                                      read_only_rootfs=False, memory_mb=1536,
                                      host_path=ws_dir))
    servers = (("py", "python", ["/workspace/server.py"], "py-mcp"),
               ("node", "node", ["/workspace/server.js"], "node-mcp"))
    for pid, cmd, args, _ in servers:
        c.start_process(b, "mcp-shared", pid, cmd, args)
    for pid, _, _, name in servers:
        ws = b.relay("mcp-shared", pid)
        ws.send_text(json.dumps(INITIALIZE))
        try:
            text = ws.recv_text(30)
        except Exception as e:
            raise AssertionError("%s: no answer to initialize (%s): %s" % (
                pid, e, c.proc_info(b, "mcp-shared", pid)))
        r = json.loads(text)
        assert r["jsonrpc"] == "2.0" and r["id"] == 1, r
        assert r["result"]["protocolVersion"] == "2025-03-26", r
        assert r["result"]["serverInfo"]["name"] == name, r
        ws.send_text(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        ws.send_text(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        assert json.loads(ws.recv_text(10)) == {"jsonrpc": "2.0", "id": 2,
                                                "result": {"tools": []}}
        ws.close()
        assert c.proc_info(b, "mcp-shared", pid)["status"] == "running"
    for pid, _, _, _ in servers:
        assert b.ok("box_stop_managed_process", {"session_id": "mcp-shared",
                                                 "process_id": pid}) == {"stopped": pid}
    b.ok("box_delete_session", {"session_id": "mcp-shared"})


def load_image(layout):
    """The shared root, with the layout loaded as localhost/box:latest."""
    root = tempfile.mkdtemp(prefix="lbbox-boximage-")
    r = subprocess.run([c.LBBOX, "--root", root, "load", "--oci-dir", layout],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        raise SystemExit("box_image: loading %s failed: %s" % (layout, r.stderr.strip()))
    return root


def main():
    global ROOT
    layout = os.environ.get("LBBOX_TEST_BOX_OCI") or os.path.join(
        os.path.dirname(c.LBBOX), "images", "box-oci")
    if not os.path.exists(os.path.join(layout, "index.json")):
        if os.environ.get("LBBOX_SKIP_BOX") == "1":
            print("box_image: SKIPPED (LBBOX_SKIP_BOX=1, no %s)" % layout)
            return 0
        print("box_image: no box image layout %s: run scripts/setup.sh" % layout,
              file=sys.stderr)
        return 1
    ROOT = load_image(layout)
    try:
        cases = [("box_image::default_image_runs_as_the_box_image",
                  default_image_runs_as_the_box_image),
                 ("box_image::langbot_tools_run_in_the_box_image",
                  langbot_tools_run_in_the_box_image)]
        cases += [("box_image_%s::mcp_over_the_relay" % k, lambda h, k=k: mcp_over_the_relay(h, k))
                  for k in ("stdio", "serve")]
        return c.main(cases)
    finally:
        shutil.rmtree(ROOT, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
