#!/usr/bin/env python3
"""A small RFC 6455 WebSocket client and HTTP GET over plain sockets (standard library only).

Used by conformance.py to reach lbbox's `/rpc/ws`, the managed-process relay and the health
endpoints (spec §6.3, §6.8, §6.9). Strict on what the server sends: unmasked frames, no RSV bits,
no fragmented or oversized control frames, valid UTF-8 text, continuation frames only inside a
message, a correct Sec-WebSocket-Accept. Any violation raises ProtocolError.

    ws = connect("127.0.0.1", 5410, "/rpc/ws", headers={...}, subprotocols=["mcp"])
    ws.send_text('{"a": 1}')            # masked; send_text(s, fragment=16384) fragments
    ws.recv(5)  -> ("text", str) | ("binary", bytes) | ("close", code, reason) | ("ping", payload)
    ws.recv_msg(5)                      # the same, pings answered and skipped
    ws.close()
    http_get("127.0.0.1", 5410, "/healthz") -> (status, body)

A non-101 answer to the upgrade raises HandshakeError(status, reason, headers, body).
`python3 wsclient.py` runs a self-test (frame bytes checked against RFC 6455 §5.7 examples).
"""
import base64
import hashlib
import os
import socket
import struct
import threading
import time

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
MAX_MESSAGE = 16 * 1024 * 1024
OP_CONT, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA


class ProtocolError(Exception):
    pass


class HandshakeError(Exception):
    """The server answered the upgrade with something other than 101."""

    def __init__(self, status, reason, headers, body):
        super().__init__("HTTP %d %s: %r" % (status, reason, body[:300]))
        self.status, self.reason, self.headers, self.body = status, reason, headers, body


def accept_key(key):
    return base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()


def mask_bytes(data, key):
    """XOR data with the 4-byte key (fast for large payloads: one big-integer XOR)."""
    n = len(data)
    if not n:
        return b""
    k = (key * (n // 4 + 1))[:n]
    return (int.from_bytes(data, "big") ^ int.from_bytes(k, "big")).to_bytes(n, "big")


def encode_frame(opcode, payload, fin=True, mask_key=None, rsv=0):
    """One frame; mask_key=None sends it unmasked (server style), else 4 bytes (client style)."""
    b0 = (0x80 if fin else 0) | (rsv << 4) | opcode
    n = len(payload)
    m = 0x80 if mask_key is not None else 0
    if n < 126:
        head = struct.pack("!BB", b0, m | n)
    elif n < 65536:
        head = struct.pack("!BBH", b0, m | 126, n)
    else:
        head = struct.pack("!BBQ", b0, m | 127, n)
    if mask_key is None:
        return head + bytes(payload)
    return head + mask_key + mask_bytes(bytes(payload), mask_key)


def parse_frame(buf, expect_masked=False):
    """(fin, rsv, opcode, payload, consumed) for one complete frame at the start of buf, or None
    when more bytes are needed. expect_masked: a server reading client frames."""
    if len(buf) < 2:
        return None
    b0, b1 = buf[0], buf[1]
    fin, rsv, opcode = bool(b0 & 0x80), (b0 >> 4) & 7, b0 & 0x0F
    masked, n = bool(b1 & 0x80), b1 & 0x7F
    pos = 2
    if n == 126:
        if len(buf) < 4:
            return None
        n = struct.unpack("!H", bytes(buf[2:4]))[0]
        pos = 4
        if n < 126:
            raise ProtocolError("non-minimal 16-bit payload length %d" % n)
    elif n == 127:
        if len(buf) < 10:
            return None
        n = struct.unpack("!Q", bytes(buf[2:10]))[0]
        pos = 10
        if n >> 63:
            raise ProtocolError("64-bit payload length with the top bit set")
        if n < 65536:
            raise ProtocolError("non-minimal 64-bit payload length %d" % n)
    if masked != expect_masked:
        raise ProtocolError("frame from the server is masked" if masked else "unmasked frame")
    if n > MAX_MESSAGE:
        raise ProtocolError("frame of %d bytes exceeds 16 MiB" % n)
    key = None
    if masked:
        if len(buf) < pos + 4:
            return None
        key = bytes(buf[pos:pos + 4])
        pos += 4
    if len(buf) < pos + n:
        return None
    payload = bytes(buf[pos:pos + n])
    if key:
        payload = mask_bytes(payload, key)
    return fin, rsv, opcode, payload, pos + n


def _read_head(sock, buf, deadline, limit=65536):
    while b"\r\n\r\n" not in buf:
        if len(buf) > limit:
            raise ProtocolError("HTTP header too large")
        left = deadline - time.time()
        if left <= 0:
            raise TimeoutError("no complete HTTP answer")
        sock.settimeout(left)
        d = sock.recv(65536)
        if not d:
            raise ProtocolError("connection closed during the HTTP answer: %r" % bytes(buf))
        buf += d
    i = buf.index(b"\r\n\r\n")
    head, rest = bytes(buf[:i]).decode("iso-8859-1"), bytearray(buf[i + 4:])
    lines = head.split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
        raise ProtocolError("bad status line %r" % lines[0])
    status, reason = int(parts[1]), (parts[2] if len(parts) > 2 else "")
    headers = {}
    for l in lines[1:]:
        k, sep, v = l.partition(":")
        if not sep:
            raise ProtocolError("bad header line %r" % l)
        k = k.strip().lower()
        headers[k] = (headers[k] + ", " + v.strip()) if k in headers else v.strip()
    return status, reason, headers, rest


def _read_body(sock, headers, rest, deadline):
    def more():
        left = deadline - time.time()
        if left <= 0:
            raise TimeoutError("HTTP body not complete")
        sock.settimeout(left)
        return sock.recv(65536)

    if "content-length" in headers:
        n = int(headers["content-length"])
        while len(rest) < n:
            d = more()
            if not d:
                raise ProtocolError("body shorter than Content-Length")
            rest += d
        return bytes(rest[:n])
    if "chunked" in headers.get("transfer-encoding", "").lower():
        out = bytearray()
        while True:
            while b"\r\n" not in rest:
                d = more()
                if not d:
                    raise ProtocolError("chunked body cut")
                rest += d
            i = rest.index(b"\r\n")
            size = int(bytes(rest[:i]).split(b";")[0], 16)
            del rest[:i + 2]
            while len(rest) < size + 2:
                d = more()
                if not d:
                    raise ProtocolError("chunked body cut")
                rest += d
            if size == 0:
                return bytes(out)
            out += rest[:size]
            del rest[:size + 2]
    while True:  # until the server closes
        d = more()
        if not d:
            return bytes(rest)
        rest += d


def http_request(host, port, path, headers=None, timeout=10, method="GET"):
    """(status, headers (lower-case keys), body bytes) of one HTTP/1.1 request."""
    deadline = time.time() + timeout
    sock = socket.create_connection((host, port), timeout=timeout)
    try:
        h = {"Host": "%s:%d" % (host, port), "Connection": "close"}
        h.update(headers or {})
        req = "%s %s HTTP/1.1\r\n" % (method, path)
        req += "".join("%s: %s\r\n" % kv for kv in h.items()) + "\r\n"
        sock.sendall(req.encode("iso-8859-1"))
        status, reason, hdrs, rest = _read_head(sock, bytearray(), deadline)
        body = b"" if method == "HEAD" else _read_body(sock, hdrs, rest, deadline)
        return status, hdrs, body
    finally:
        sock.close()


def http_get(host, port, path, headers=None, timeout=10):
    """(status, body text) of GET path."""
    status, _, body = http_request(host, port, path, headers, timeout)
    return status, body.decode("utf-8", "replace")


def connect(host, port, path, headers=None, subprotocols=None, timeout=10):
    """Open a WebSocket; raises HandshakeError on a non-101 answer."""
    deadline = time.time() + timeout
    sock = socket.create_connection((host, port), timeout=timeout)
    try:
        key = base64.b64encode(os.urandom(16)).decode()
        h = {"Host": "%s:%d" % (host, port), "Upgrade": "websocket", "Connection": "Upgrade",
             "Sec-WebSocket-Key": key, "Sec-WebSocket-Version": "13"}
        if subprotocols:
            h["Sec-WebSocket-Protocol"] = ", ".join(subprotocols)
        h.update(headers or {})
        req = "GET %s HTTP/1.1\r\n" % path
        req += "".join("%s: %s\r\n" % kv for kv in h.items()) + "\r\n"
        sock.sendall(req.encode("iso-8859-1"))
        status, reason, hdrs, rest = _read_head(sock, bytearray(), deadline)
        if status != 101:
            try:
                body = _read_body(sock, hdrs, rest, min(deadline, time.time() + 5))
            except (TimeoutError, OSError, ProtocolError) as e:
                body = bytes(rest) + (" [body unreadable: %s]" % e).encode()
            raise HandshakeError(status, reason, hdrs, body.decode("utf-8", "replace"))
        if hdrs.get("upgrade", "").lower() != "websocket":
            raise ProtocolError("101 without Upgrade: websocket: %r" % hdrs)
        if "upgrade" not in [t.strip().lower() for t in hdrs.get("connection", "").split(",")]:
            raise ProtocolError("101 without Connection: Upgrade: %r" % hdrs)
        if hdrs.get("sec-websocket-accept") != accept_key(key):
            raise ProtocolError("bad Sec-WebSocket-Accept %r" % hdrs.get("sec-websocket-accept"))
        if hdrs.get("sec-websocket-extensions"):
            raise ProtocolError("extension %r that was not offered"
                                % hdrs["sec-websocket-extensions"])
        proto = hdrs.get("sec-websocket-protocol")
        if proto is not None and proto not in (subprotocols or []):
            raise ProtocolError("subprotocol %r that was not requested" % proto)
        sock.settimeout(None)
        return WebSocket(sock, rest, proto, hdrs)
    except BaseException:
        sock.close()
        raise


class WebSocket:
    def __init__(self, sock, buf=b"", subprotocol=None, headers=None):
        self.sock = sock
        self.buf = bytearray(buf)
        self.subprotocol = subprotocol
        self.headers = headers or {}
        self.pings = []  # (time, payload) of every ping received
        self.pongs = []
        self.frames_in = []  # (opcode, fin, length) of every data frame received
        self.closed = None  # ("close", code, reason) once the server's close or EOF was seen
        self.close_sent = False
        self._wlock = threading.Lock()
        self._frag = None  # (opcode, [parts], size) of a message being reassembled

    # -- sending -----------------------------------------------------------------------------
    def send_frame(self, opcode, payload, fin=True, rsv=0):
        data = encode_frame(opcode, payload, fin, os.urandom(4), rsv)
        with self._wlock:
            self.sock.sendall(data)

    def send_text(self, s, fragment=None):
        """One text message; fragment=N splits it into frames of N bytes (continuations)."""
        self._send_message(OP_TEXT, s.encode("utf-8"), fragment)

    def send_binary(self, b, fragment=None):
        self._send_message(OP_BINARY, bytes(b), fragment)

    def _send_message(self, opcode, data, fragment):
        if not fragment or len(data) <= fragment:
            self.send_frame(opcode, data)
            return
        pieces = [data[i:i + fragment] for i in range(0, len(data), fragment)]
        frames = [encode_frame(opcode if i == 0 else OP_CONT, p, i == len(pieces) - 1,
                               os.urandom(4)) for i, p in enumerate(pieces)]
        with self._wlock:  # no control frame of ours between the fragments (allowed, not needed)
            for f in frames:
                self.sock.sendall(f)

    def send_ping(self, payload=b""):
        self.send_frame(OP_PING, payload)

    # -- receiving ---------------------------------------------------------------------------
    def _frame(self, deadline):
        while True:
            f = parse_frame(self.buf)
            if f:
                del self.buf[:f[4]]
                return f[:4]
            left = None if deadline is None else deadline - time.time()
            if left is not None and left <= 0:
                raise TimeoutError("no WebSocket frame in time")
            self.sock.settimeout(left)
            try:
                d = self.sock.recv(1 << 20)
            except socket.timeout:
                raise TimeoutError("no WebSocket frame in time")
            except (ConnectionResetError, BrokenPipeError):
                d = b""
            if not d:
                return None
            self.buf += d

    def recv(self, timeout=10, pings=True):
        """The next event: ("text", str), ("binary", bytes), ("close", code, reason) (code 1005:
        no code given, 1006: connection lost without a close frame) or, when pings is true,
        ("ping", payload). Pings are answered with pongs in any case and kept in self.pings.
        TimeoutError when nothing complete arrived in time (a partial frame is kept)."""
        if self.closed:
            return self.closed
        deadline = None if timeout is None else time.time() + timeout
        while True:
            f = self._frame(deadline)
            if f is None:
                self.closed = ("close", 1006, "")
                return self.closed
            fin, rsv, op, payload = f
            if rsv:
                raise ProtocolError("RSV bits 0x%x set without an extension" % rsv)
            if op >= 0x8:
                if not fin or len(payload) > 125:
                    raise ProtocolError("fragmented or oversized control frame (op %d)" % op)
                if op == OP_PING:
                    self.pings.append((time.time(), payload))
                    try:
                        self.send_frame(OP_PONG, payload)
                    except OSError:
                        pass
                    if pings:
                        return ("ping", payload)
                    continue
                if op == OP_PONG:
                    self.pongs.append((time.time(), payload))
                    continue
                if op == OP_CLOSE:
                    if len(payload) == 1:
                        raise ProtocolError("close frame with a 1-byte payload")
                    code = struct.unpack("!H", payload[:2])[0] if payload else 1005
                    try:
                        reason = payload[2:].decode("utf-8")
                    except UnicodeDecodeError:
                        raise ProtocolError("close reason is not UTF-8")
                    if payload and (code < 1000 or code in (1004, 1005, 1006, 1015) or
                                    1016 <= code < 3000 or code >= 5000):
                        raise ProtocolError("invalid close code %d" % code)
                    if not self.close_sent:
                        try:
                            self.send_frame(OP_CLOSE, payload[:2])
                        except OSError:
                            pass
                        self.close_sent = True
                    self.closed = ("close", code, reason)
                    return self.closed
                raise ProtocolError("unknown control opcode %d" % op)
            self.frames_in.append((op, fin, len(payload)))
            if op == OP_CONT:
                if self._frag is None:
                    raise ProtocolError("continuation frame outside a message")
                self._frag[1].append(payload)
                self._frag[2] += len(payload)
            elif op in (OP_TEXT, OP_BINARY):
                if self._frag is not None:
                    raise ProtocolError("new data frame inside a fragmented message")
                self._frag = [op, [payload], len(payload)]
            else:
                raise ProtocolError("unknown data opcode %d" % op)
            if self._frag[2] > MAX_MESSAGE:
                raise ProtocolError("message over 16 MiB")
            if not fin:
                continue
            op, parts, _ = self._frag
            self._frag = None
            data = b"".join(parts)
            if op == OP_BINARY:
                return ("binary", data)
            try:
                return ("text", data.decode("utf-8"))
            except UnicodeDecodeError:
                raise ProtocolError("text message is not valid UTF-8")

    def recv_msg(self, timeout=10):
        return self.recv(timeout, pings=False)

    def recv_text(self, timeout=10):
        """The next message, which must be a text message."""
        m = self.recv_msg(timeout)
        assert m[0] == "text", "expected a text message, got %r" % (m,)
        return m[1]

    def close(self, code=1000, reason="", timeout=5):
        """Close handshake: sends a close frame, waits for the server's (messages meanwhile are
        dropped). Returns the server's close event or None on timeout."""
        got = self.closed
        try:
            if not self.close_sent:
                self.send_frame(OP_CLOSE, struct.pack("!H", code) + reason.encode())
                self.close_sent = True
            deadline = time.time() + timeout
            while got is None:
                try:
                    ev = self.recv(max(0.01, deadline - time.time()), pings=False)
                except TimeoutError:
                    break
                if ev[0] == "close":
                    got = ev
        except (OSError, ProtocolError):
            pass
        self.abort()
        return got

    def abort(self):
        """Drop the TCP connection without a close handshake."""
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


# -- self-test ---------------------------------------------------------------------------------
def _selftest():
    # RFC 6455 §1.3 and §5.7 examples
    assert accept_key("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
    assert encode_frame(OP_TEXT, b"Hello") == bytes.fromhex("810548656c6c6f")
    mk = bytes.fromhex("37fa213d")
    assert encode_frame(OP_TEXT, b"Hello", mask_key=mk) == bytes.fromhex("818537fa213d7f9f4d5158")
    assert encode_frame(OP_TEXT, b"Hel", fin=False) == bytes.fromhex("010348656c")
    assert encode_frame(OP_CONT, b"lo") == bytes.fromhex("80026c6f")
    assert encode_frame(OP_PING, b"Hello") == bytes.fromhex("890548656c6c6f")
    assert encode_frame(OP_PONG, b"Hello", mask_key=mk) == bytes.fromhex("8a8537fa213d7f9f4d5158")
    assert encode_frame(OP_BINARY, b"\0" * 256)[:4] == bytes.fromhex("827e0100")
    assert encode_frame(OP_BINARY, b"\0" * 65536)[:10] == bytes.fromhex("827f0000000000010000")
    assert parse_frame(bytes.fromhex("818537fa213d7f9f4d5158"), True) == \
        (True, 0, OP_TEXT, b"Hello", 11)
    assert parse_frame(bytes.fromhex("810548656c6c"), False) is None  # incomplete
    assert parse_frame(bytes.fromhex("827f00000000"), False) is None
    for bad in ("818537fa213d7f9f4d5158",  # masked frame from a server
                "827e0005" + "00" * 5):  # non-minimal length
        try:
            parse_frame(bytes.fromhex(bad))
            raise AssertionError("accepted %s" % bad)
        except ProtocolError:
            pass
    big = os.urandom(70000)
    k = os.urandom(4)
    assert mask_bytes(mask_bytes(big, k), k) == big
    assert mask_bytes(b"abcde", b"\x01\x02\x03\x04") == bytes(
        c ^ m for c, m in zip(b"abcde", b"\x01\x02\x03\x04\x01"))
    f = parse_frame(encode_frame(OP_BINARY, big, mask_key=k), True)
    assert f[3] == big and f[4] == 70000 + 14

    # decoding a stream: fragmented text with a ping between fragments, close
    a, b = socket.socketpair()
    ws = WebSocket(a)
    text = "héllo wörld ✓" * 3000
    raw = text.encode()
    stream = encode_frame(OP_TEXT, raw[:7], fin=False) + encode_frame(OP_PING, b"p1")
    stream += encode_frame(OP_CONT, raw[7:50001], fin=False) + encode_frame(OP_CONT, raw[50001:])
    stream += encode_frame(OP_TEXT, b"") + encode_frame(OP_BINARY, b"\x00\xff")
    stream += encode_frame(OP_CLOSE, struct.pack("!H", 1001) + b"bye")

    def feed():
        for i in range(0, len(stream), 999):  # byte dribble across frame boundaries
            b.sendall(stream[i:i + 999])

    t = threading.Thread(target=feed, daemon=True)
    t.start()
    assert ws.recv(5) == ("ping", b"p1")
    assert ws.recv(5) == ("text", text)
    assert ws.recv(5) == ("text", "")
    assert ws.recv(5) == ("binary", b"\x00\xff")
    assert ws.recv(5) == ("close", 1001, "bye")
    t.join()
    b.settimeout(5)
    got = bytearray()
    while True:  # our pong and close echo, masked
        f = parse_frame(got, True)
        if f and f[2] == OP_PONG:
            assert f[3] == b"p1"
            del got[:f[4]]
            continue
        if f:
            assert f[2] == OP_CLOSE and f[3] == struct.pack("!H", 1001), f
            break
        got += b.recv(4096)
    a.close()
    b.close()

    # timeouts keep partial frames; EOF is 1006
    a, b = socket.socketpair()
    ws = WebSocket(a)
    fr = encode_frame(OP_TEXT, b"x" * 300)
    b.sendall(fr[:100])
    try:
        ws.recv(0.2)
        raise AssertionError("no timeout")
    except TimeoutError:
        pass
    b.sendall(fr[100:])
    assert ws.recv(1) == ("text", "x" * 300)
    b.sendall(encode_frame(OP_TEXT, b"\xff"))
    try:
        ws.recv(1)
        raise AssertionError("invalid UTF-8 accepted")
    except ProtocolError:
        pass
    b.close()
    assert ws.recv(1) == ("close", 1006, "")
    a.close()

    # handshake against a tiny server: 101 with mcp, then a 401, then a chunked 400
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    srv.settimeout(10)
    port = srv.getsockname()[1]
    seen = []

    def serve():
        for answer in ("101", "401", "400"):
            c, _ = srv.accept()
            req = b""
            while b"\r\n\r\n" not in req:
                req += c.recv(4096)
            seen.append(req.decode())
            if answer == "101":
                key = [l.split(":", 1)[1].strip() for l in req.decode().split("\r\n")
                       if l.lower().startswith("sec-websocket-key:")][0]
                c.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: WebSocket\r\n"
                           "Connection: upgrade\r\nSec-WebSocket-Accept: %s\r\n"
                           "Sec-WebSocket-Protocol: mcp\r\n\r\n" % accept_key(key)).encode()
                          + encode_frame(OP_TEXT, b'{"a":1}'))
                buf, msg, fin = bytearray(), b"", False
                while not fin:  # reassemble the client's fragmented message
                    f = parse_frame(buf, True)
                    if not f:
                        buf += c.recv(4096)
                        continue
                    fin, msg = f[0], msg + f[3]
                    del buf[:f[4]]
                c.sendall(encode_frame(OP_TEXT, msg) + encode_frame(OP_CLOSE, b"\x03\xe8"))
                while not parse_frame(buf, True):
                    buf += c.recv(4096)
            elif answer == "401":
                c.sendall(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 12\r\n\r\nUnauthorized")
            else:
                c.sendall(b"HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\n"
                          b"3\r\n{\"e\r\n4\r\n\": 1\r\n1\r\n}\r\n0\r\n\r\n")
            c.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    ws = connect("127.0.0.1", port, "/v1/x/ws", {"X-Test": "1"}, ["mcp"])
    assert ws.subprotocol == "mcp"
    assert ws.recv_text(5) == '{"a":1}'
    ws.send_text("echo ✓" * 100, fragment=7)
    assert ws.recv_text(5) == "echo ✓" * 100
    assert ws.recv(5) == ("close", 1000, "")
    ws.close()
    assert "GET /v1/x/ws HTTP/1.1\r\n" in seen[0] and "X-Test: 1\r\n" in seen[0]
    assert "Sec-WebSocket-Protocol: mcp\r\n" in seen[0]
    for status, body in ((401, "Unauthorized"), (400, '{"e": 1}')):
        try:
            connect("127.0.0.1", port, "/rpc/ws")
            raise AssertionError("upgraded")
        except HandshakeError as e:
            assert (e.status, e.body) == (status, body), (e.status, e.body)
    t.join()
    srv.close()
    return True


if __name__ == "__main__":
    _selftest()
    print("wsclient self-test: ok")
