#!/usr/bin/env python3
"""A small OCI distribution registry for lbbox's tests (standard library only, 127.0.0.1 only).

  registry.py layout DIR [--layer-size N]
      Writes an OCI layout to DIR: an index (manifest list) with linux/amd64, linux/arm64/v8 and an
      attestation entry, tagged "latest". Prints a JSON summary (digests) on stdout.

  registry.py serve --layout DIR --ready FILE --log FILE [options]
      Serves DIR at /v2/ with a Bearer challenge and its own token endpoint. Writes
      "PORT BLOBPORT\\n" to FILE (atomically) once listening; every request is logged as a JSON
      line (server, method, path, headers) to --log. Faults (--fault) apply to the first
      --fault-count matching requests (default: all).
"""
import argparse
import gzip
import base64
import hashlib
import io
import json
import os
import random
import re
import secrets
import sys
import tarfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MT_INDEX = "application/vnd.oci.image.index.v1+json"
MT_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MT_CONFIG = "application/vnd.oci.image.config.v1+json"
MT_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"


def put_blob(d, data):
    dg = "sha256:" + hashlib.sha256(data).hexdigest()
    os.makedirs(os.path.join(d, "blobs", "sha256"), exist_ok=True)
    with open(os.path.join(d, "blobs", "sha256", dg[7:]), "wb") as f:
        f.write(data)
    return {"digest": dg, "size": len(data)}


def make_layer(arch, size):
    payload = random.Random(arch).randbytes(size)
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name, data in (("etc/arch", arch.encode() + b"\n"), ("data.bin", payload)):
            ti = tarfile.TarInfo(name)
            ti.size, ti.mtime, ti.mode = len(data), 1700000000, 0o644
            t.addfile(ti, io.BytesIO(data))
    tar = raw.getvalue()
    return gzip.compress(tar, mtime=0), "sha256:" + hashlib.sha256(tar).hexdigest()


def make_image(d, arch, variant, size, bad_diff_id=False):
    layer, diff_id = make_layer(arch, size)
    if bad_diff_id:  # a consistent manifest whose config lies about the uncompressed layer
        diff_id = "sha256:" + hashlib.sha256(b"not the layer").hexdigest()
    ld = dict(mediaType=MT_LAYER, **put_blob(d, layer))
    cfg = {"architecture": arch, "os": "linux", "config": {"Env": ["ARCH=" + arch]},
           "rootfs": {"type": "layers", "diff_ids": [diff_id]}}
    if variant:
        cfg["variant"] = variant
    cd = dict(mediaType=MT_CONFIG, **put_blob(d, json.dumps(cfg).encode()))
    man = {"schemaVersion": 2, "mediaType": MT_MANIFEST, "config": cd, "layers": [ld]}
    md = dict(mediaType=MT_MANIFEST, **put_blob(d, json.dumps(man).encode()))
    md["platform"] = {"architecture": arch, "os": "linux"}
    if variant:
        md["platform"]["variant"] = variant
    return md, ld, cd


def cmd_layout(a):
    d = a.dir
    amd, amd_layer, amd_cfg = make_image(d, "amd64", None, a.layer_size, a.bad_diff_id)
    arm, arm_layer, _ = make_image(d, "arm64", "v8", a.layer_size)
    att_cfg = dict(mediaType=MT_CONFIG, **put_blob(d, b'{"architecture":"unknown","os":"unknown",'
                                                      b'"rootfs":{"type":"layers","diff_ids":[]}}'))
    att = {"schemaVersion": 2, "mediaType": MT_MANIFEST, "config": att_cfg, "layers": []}
    atd = dict(mediaType=MT_MANIFEST, **put_blob(d, json.dumps(att).encode()))
    atd["platform"] = {"architecture": "unknown", "os": "unknown"}
    atd["annotations"] = {"vnd.docker.reference.type": "attestation-manifest",
                          "vnd.docker.reference.digest": amd["digest"]}
    # The attestation comes first: a client that does not skip it picks the wrong manifest.
    index = {"schemaVersion": 2, "mediaType": MT_INDEX, "manifests": [atd, arm, amd]}
    ixd = dict(mediaType=MT_INDEX, **put_blob(d, json.dumps(index).encode()))
    top = dict(ixd, annotations={"org.opencontainers.image.ref.name": "latest"})
    with open(os.path.join(d, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": [top]}, f)
    with open(os.path.join(d, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)
    json.dump({"index": ixd["digest"], "amd64": amd["digest"], "arm64": arm["digest"],
               "attestation": atd["digest"], "amd64_layer": amd_layer["digest"],
               "amd64_layer_size": amd_layer["size"],
               "amd64_config": amd_cfg["digest"], "arm64_layer": arm_layer["digest"]},
              sys.stdout)
    print()


class State:
    def __init__(self, a):
        self.a = a
        self.lock = threading.Lock()
        self.tokens = {}  # token -> expiry (monotonic)
        self.fault_left = a.fault_count
        self.ports = (0, 0)
        with open(os.path.join(a.layout, "index.json")) as f:
            self.tags = {m.get("annotations", {}).get("org.opencontainers.image.ref.name"): m
                         for m in json.load(f)["manifests"]}

    def blob(self, digest):
        if not re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
            return None
        p = os.path.join(self.a.layout, "blobs", "sha256", digest[7:])
        if not os.path.isfile(p):
            return None
        with open(p, "rb") as f:
            return f.read()

    def fault(self, kind, digest=None):
        """Whether fault kind applies to this request (consuming one of --fault-count)."""
        if self.a.fault != kind or (digest and self.a.target and digest != self.a.target):
            return False
        with self.lock:
            if self.fault_left == 0:
                return False
            self.fault_left -= 1
            return True

    def log(self, server, h):
        rec = {"server": server, "method": h.command, "path": h.path,
               "headers": {k.lower(): v for k, v in h.headers.items()}}
        with self.lock, open(self.a.log, "a") as f:
            f.write(json.dumps(rec) + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_name = "main"

    def log_message(self, *args):
        pass

    @property
    def st(self):
        return self.server.state

    def send(self, code, body=b"", ctype="application/json", headers=(), length=None):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def error(self, code, err, msg, headers=()):
        body = json.dumps({"errors": [{"code": err, "message": msg}]}).encode()
        self.send(code, body, headers=headers)

    def challenge(self, scope=None):
        v = 'Bearer realm="http://127.0.0.1:%d/token",service="test-registry"' % self.st.ports[0]
        if scope:
            v += ',scope="%s"' % scope
        self.error(401, "UNAUTHORIZED", "authentication required", [("WWW-Authenticate", v)])

    def authorized(self):
        h = self.headers.get("Authorization", "")
        if not h.startswith("Bearer "):
            return False
        with self.st.lock:
            exp = self.st.tokens.get(h[7:])
        return exp is not None and time.monotonic() < exp

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        self.st.log(self.server_name, self)
        path = self.path.split("?", 1)[0]
        if path == "/token":
            return self.token()
        if path == "/v2/":
            return self.send(200, b"{}") if self.authorized() else self.challenge()
        m = re.fullmatch(r"/v2/(.+)/(manifests|blobs)/([^/]+)", path)
        if not m:
            return self.error(404, "NOT_FOUND", "no route")
        repo, kind, ref = m.groups()
        if not self.authorized():
            return self.challenge("repository:%s:pull" % repo)
        for code in (401, 403, 404, 429):
            if kind == "manifests" and self.st.fault("status-%d" % code):
                return self.status_fault(code, repo)
        return self.manifest(ref) if kind == "manifests" else self.blob(ref)

    def status_fault(self, code, repo):
        if code == 401:
            return self.challenge("repository:%s:pull" % repo)
        hdrs = [("Retry-After", str(self.st.a.retry_after))] if code == 429 else []
        names = {403: "DENIED", 404: "MANIFEST_UNKNOWN", 429: "TOOMANYREQUESTS"}
        self.error(code, names[code], "injected fault", hdrs)

    def token(self):
        if self.st.fault("token-429"):
            return self.error(429, "TOOMANYREQUESTS", "slow down", [("Retry-After", "7")])
        if self.st.a.basic:  # the token service wants the client's Basic credentials
            want = "Basic " + base64.b64encode(self.st.a.basic.encode()).decode()
            if self.headers.get("Authorization") != want:
                return self.error(401, "UNAUTHORIZED", "credentials required",
                                  [("WWW-Authenticate", 'Basic realm="test-registry"')])
        tok = secrets.token_hex(16)
        with self.st.lock:
            self.st.tokens[tok] = time.monotonic() + self.st.a.token_ttl
        body = {self.st.a.token_key: tok, "issued_at": time.strftime("%Y-%m-%dT%H:%M:%SZ")}
        if self.st.a.announce_ttl:
            body["expires_in"] = self.st.a.announce_ttl
        self.send(200, json.dumps(body).encode())

    def manifest(self, ref):
        if self.st.fault("big-manifest"):
            return self.send(200, b" " * (5 << 20), MT_MANIFEST)
        if self.st.fault("unknown-media"):
            doc = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.example.thing+json",
                              "config": {}, "layers": []}).encode()
            return self.send(200, doc, "application/vnd.example.thing+json")
        desc = self.st.tags.get(ref) if not ref.startswith("sha256:") else {"digest": ref}
        data = self.st.blob(desc["digest"]) if desc else None
        if data is None:
            return self.error(404, "MANIFEST_UNKNOWN", "manifest unknown")
        mt = json.loads(data).get("mediaType", MT_MANIFEST)
        self.send(200, data, mt, [("Docker-Content-Digest", desc["digest"])])

    def blob(self, digest):
        if self.st.a.redirect_blobs and self.server_name == "main":
            loc = "http://127.0.0.1:%d/blobs/%s?sig=abc" % (self.st.ports[1], digest)
            return self.send(307, b"", headers=[("Location", loc)])
        data = self.st.blob(digest)
        if data is None:
            return self.error(404, "BLOB_UNKNOWN", "blob unknown")
        time.sleep(self.st.a.delay)
        if self.st.fault("digest", digest):
            data = bytes([data[0] ^ 1]) + data[1:]
        if self.st.fault("size", digest):
            data += b"x"
        start = self.range_start(len(data))
        body = data[start:]
        code, hdrs = 200, []
        if start:
            code = 206
            hdrs = [("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))]
        if self.st.fault("blob-503", digest):
            return self.error(503, "UNAVAILABLE", "injected fault")
        if self.st.fault("truncate", digest):  # half of what was asked for, then hang up
            self.send(code, b"", "application/octet-stream", hdrs, length=len(body))
            self.wfile.write(body[: len(body) // 2])
            self.close_connection = True
            return
        if start:
            return self.send(206, body, "application/octet-stream", hdrs)
        if self.st.fault("slow", digest):
            return self.slow(data)
        self.send(200, data, "application/octet-stream")

    def range_start(self, size):
        """The N of "Range: bytes=N-" when honoured (not with --no-range), else 0."""
        m = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range", ""))
        if self.st.a.no_range or not m or int(m.group(1)) >= size:
            return 0
        return int(m.group(1))

    def slow(self, data):
        self.send(200, b"", "application/octet-stream", length=len(data))
        for i in range(0, len(data), 16384):
            self.wfile.write(data[i: i + 16384])
            self.wfile.flush()
            time.sleep(0.2)


class BlobHandler(Handler):
    """The second port: a CDN-like blob host that needs no auth and records what it was sent."""
    server_name = "blob"

    def do_GET(self):
        self.st.log(self.server_name, self)
        m = re.fullmatch(r"/blobs/([^/?]+)", self.path.split("?", 1)[0])
        if not m:
            return self.error(404, "NOT_FOUND", "no route")
        self.blob(m.group(1))


class Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # clients hanging up mid-body is what the fault tests do


def cmd_serve(a):
    st = State(a)
    main = Server(("127.0.0.1", 0), Handler)
    blob = Server(("127.0.0.1", 0), BlobHandler)
    for s in (main, blob):
        s.state = st
        s.daemon_threads = True
    st.ports = (main.server_address[1], blob.server_address[1])
    threading.Thread(target=blob.serve_forever, daemon=True).start()
    tmp = a.ready + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d %d\n" % st.ports)
    os.rename(tmp, a.ready)
    main.serve_forever()


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    lp = sub.add_parser("layout")
    lp.add_argument("dir")
    lp.add_argument("--layer-size", type=int, default=4096)
    lp.add_argument("--bad-diff-id", action="store_true", help="amd64 config with a wrong diff_id")
    sp = sub.add_parser("serve")
    sp.add_argument("--layout", required=True)
    sp.add_argument("--ready", required=True)
    sp.add_argument("--log", required=True)
    sp.add_argument("--no-range", action="store_true", help="answer Range requests with 200")
    sp.add_argument("--token-ttl", type=float, default=300, help="lifetime the server enforces")
    sp.add_argument("--announce-ttl", type=int, default=300, help="expires_in sent; 0: none")
    sp.add_argument("--token-key", default="token", choices=["token", "access_token"])
    sp.add_argument("--basic", default="", help="USER:PASS the token endpoint requires")
    sp.add_argument("--redirect-blobs", action="store_true")
    sp.add_argument("--delay", type=float, default=0, help="seconds before each blob is served")
    sp.add_argument("--fault", default="")
    sp.add_argument("--fault-count", type=int, default=-1)
    sp.add_argument("--target", default="", help="digest the blob faults apply to")
    sp.add_argument("--retry-after", type=int, default=42)
    a = p.parse_args()
    cmd_layout(a) if a.cmd == "layout" else cmd_serve(a)


if __name__ == "__main__":
    main()
