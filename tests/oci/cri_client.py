"""A minimal client of the Kubernetes CRI (runtime.v1) over gRPC, as kubelet talks to containerd.

No generated code: messages are built and read by the small protocol-buffers wire codec below.
A message to send is a list of (field number, value) pairs: an int or bool is a varint (negative
ints as 64-bit two's complement, what int64 fields carry), a str or bytes is length-delimited, a
list is a nested message, a dict a map<string, string> (repeated {1: key, 2: value} entries). A
repeated field is the same number given more than once. A received message decodes to a dict:
field number -> list of raw values (an int for a varint, bytes for length-delimited), read with
the helpers (one_int, one_str, one_msg).

Field numbers are those of the public runtime.v1 api.proto (k8s.io/cri-api).
"""
import grpc


def _varint(n):
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def encode(fields):
    out = bytearray()
    for num, val in fields:
        if val is None:
            continue
        if isinstance(val, dict):
            for k, v in val.items():
                out += _varint(num << 3 | 2) + _ld(encode([(1, k), (2, v)]))
        elif isinstance(val, (bool, int)):
            out += _varint(num << 3) + _varint(int(val))
        elif isinstance(val, str):
            out += _varint(num << 3 | 2) + _ld(val.encode())
        elif isinstance(val, (bytes, bytearray)):
            out += _varint(num << 3 | 2) + _ld(bytes(val))
        elif isinstance(val, list):
            out += _varint(num << 3 | 2) + _ld(encode(val))
        else:
            raise TypeError(f"field {num}: {type(val).__name__}")
    return bytes(out)


def _ld(b):
    return _varint(len(b)) + b


def _read_varint(buf, i):
    n = shift = 0
    while True:
        if i >= len(buf) or shift > 63:
            raise ValueError("truncated or overlong varint")
        b = buf[i]
        i += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, i


def decode(buf):
    """dict: field number -> list of values, in order (int, bytes, or fixed-width bytes)."""
    out = {}
    i = 0
    while i < len(buf):
        key, i = _read_varint(buf, i)
        num, wire = key >> 3, key & 7
        if wire == 0:
            val, i = _read_varint(buf, i)
        elif wire == 2:
            n, i = _read_varint(buf, i)
            if i + n > len(buf):
                raise ValueError("truncated length-delimited field")
            val, i = bytes(buf[i:i + n]), i + n
        elif wire in (1, 5):
            w = 8 if wire == 1 else 4
            val, i = bytes(buf[i:i + w]), i + w
        else:
            raise ValueError(f"wire type {wire}")
        out.setdefault(num, []).append(val)
    return out


def one_int(msg, num):
    v = msg.get(num, [0])[-1]
    if v >= 1 << 63:  # int64 (and negative int32, sent sign-extended) as two's complement
        v -= 1 << 64
    return v


def one_str(msg, num):
    return msg.get(num, [b""])[-1].decode()


def one_msg(msg, num):
    return decode(msg[num][-1]) if num in msg else {}


class Cri:
    """RuntimeService and ImageService of runtime.v1 on a unix socket."""

    def __init__(self, sock, timeout=60):
        # no proxy from the environment may be asked for a unix socket
        self.chan = grpc.insecure_channel("unix://" + sock, options=[("grpc.enable_http_proxy", 0)])
        self.timeout = timeout

    def close(self):
        self.chan.close()

    def call(self, method, fields, timeout=None):
        """Raw call: /runtime.v1.<method> with the encoded fields; the decoded reply."""
        fn = self.chan.unary_unary("/runtime.v1." + method)
        return decode(fn(encode(fields), timeout=timeout or self.timeout))

    def version(self):
        r = self.call("RuntimeService/Version", [(1, "v1")])
        return {"version": one_str(r, 1), "runtime_name": one_str(r, 2),
                "runtime_version": one_str(r, 3), "runtime_api_version": one_str(r, 4)}

    def status(self):
        """The runtime's conditions (RuntimeReady, NetworkReady): type -> bool."""
        st = one_msg(self.call("RuntimeService/Status", []), 1)
        conds = [decode(c) for c in st.get(1, [])]
        return {one_str(c, 1): bool(one_int(c, 2)) for c in conds}

    def container_stats(self, cid):
        """What kubelet's summary API takes: cumulative CPU time (ns) and the memory working set
        (bytes); None where the runtime gave none."""
        st = one_msg(self.call("RuntimeService/ContainerStats", [(1, cid)]), 1)
        cpu, mem = one_msg(st, 2), one_msg(st, 3)
        return {"cpu_ns": one_int(one_msg(cpu, 2), 1) if 2 in cpu else None,
                "working_set": one_int(one_msg(mem, 2), 1) if 2 in mem else None}

    def image_present(self, ref):
        r = self.call("ImageService/ImageStatus", [(1, [(1, ref)])])
        return 1 in r  # ImageStatusResponse.image, absent when the image is not there

    def run_pod_sandbox(self, config, handler):
        r = self.call("RuntimeService/RunPodSandbox", [(1, config), (2, handler)], timeout=120)
        return one_str(r, 1)

    def stop_pod_sandbox(self, sid):
        self.call("RuntimeService/StopPodSandbox", [(1, sid)], timeout=120)

    def remove_pod_sandbox(self, sid):
        self.call("RuntimeService/RemovePodSandbox", [(1, sid)], timeout=120)

    def pod_sandbox_status(self, sid):
        """state (0 = SANDBOX_READY, 1 = SANDBOX_NOTREADY) and the pod's IP ("" on the host's
        network)."""
        st = one_msg(self.call("RuntimeService/PodSandboxStatus", [(1, sid)]), 1)
        return {"state": one_int(st, 3), "ip": one_str(one_msg(st, 5), 1)}

    def create_container(self, sid, config, sandbox_config):
        r = self.call("RuntimeService/CreateContainer",
                      [(1, sid), (2, config), (3, sandbox_config)], timeout=120)
        return one_str(r, 1)

    def start_container(self, cid):
        self.call("RuntimeService/StartContainer", [(1, cid)], timeout=120)

    def stop_container(self, cid, timeout_s):
        self.call("RuntimeService/StopContainer", [(1, cid), (2, timeout_s)],
                  timeout=timeout_s + 60)

    def remove_container(self, cid):
        self.call("RuntimeService/RemoveContainer", [(1, cid)], timeout=120)

    def container_status(self, cid):
        """state (0 created, 1 running, 2 exited, 3 unknown), exit_code, reason, log_path."""
        st = one_msg(self.call("RuntimeService/ContainerStatus", [(1, cid)]), 1)
        return {"state": one_int(st, 3), "exit_code": one_int(st, 7),
                "started_at": one_int(st, 5), "finished_at": one_int(st, 6),
                "reason": one_str(st, 10), "message": one_str(st, 11),
                "log_path": one_str(st, 15)}

    def update_container_resources(self, cid, resources):
        """resources: dict of LinuxContainerResources fields by name."""
        self.call("RuntimeService/UpdateContainerResources",
                  [(1, cid), (2, linux_resources(resources))])

    def list_containers(self, sid):
        r = self.call("RuntimeService/ListContainers", [(1, [(3, sid)])])
        return [one_str(decode(c), 1) for c in r.get(1, [])]

    def exec_sync(self, cid, cmd, timeout_s=30):
        """(stdout bytes, stderr bytes, exit code)."""
        r = self.call("RuntimeService/ExecSync",
                      [(1, cid)] + [(2, a) for a in cmd] + [(3, timeout_s)],
                      timeout=timeout_s + 30)
        return r.get(1, [b""])[-1], r.get(2, [b""])[-1], one_int(r, 3)


# Builders of the request messages kubelet sends (only the fields these tests use).

NODE, POD, CONTAINER = 2, 0, 1  # NamespaceMode


def pod_sandbox_config(name, uid, namespace, log_dir, cgroup_parent, network=NODE,
                       hostname=None, pid=CONTAINER):
    # NamespaceOption (network, pid, ipc) as kubelet sets it; pid POD: shareProcessNamespace
    sec = [(1, [(1, network), (2, pid), (3, POD)])]
    linux = [(1, cgroup_parent), (2, sec)]
    return [(1, [(1, name), (2, uid), (3, namespace), (4, 0)]), (2, hostname), (3, log_dir),
            (6, {"io.kubernetes.pod.name": name}), (8, linux)]


def linux_resources(resources):
    """LinuxContainerResources from its fields by name."""
    num = {"cpu_period": 1, "cpu_quota": 2, "cpu_shares": 3, "memory_limit_in_bytes": 4,
           "oom_score_adj": 5}
    return [(num[k], v) for k, v in resources.items()]


def container_config(name, image, command, args=(), envs=(), log_path=None, resources=None,
                     network=NODE, mounts=(), readonly_rootfs=False, restricted=False,
                     pid=CONTAINER):
    """resources: dict of LinuxContainerResources fields by name; network: the pod's mode;
    mounts: (container path, host path, read-only) as kubelet gives volumes; restricted: what
    the "restricted" Pod Security Standard asks (uid 1000, every capability dropped, no new
    privileges, the runtime's default seccomp profile)."""
    res = linux_resources(resources or {})
    # kubelet sets the container's pid namespace to CONTAINER (POD with
    # shareProcessNamespace), network and ipc to the pod's
    sec = [(3, [(1, network), (2, pid), (3, POD)]), (7, readonly_rootfs)]
    if restricted:  # run_as_user, capabilities.drop, no_new_privs, seccomp RuntimeDefault
        sec += [(5, [(1, 1000)]), (1, [(2, "ALL")]), (11, True), (15, [(1, 0)])]
    return ([(1, [(1, name), (2, 0)]), (2, [(1, image)])] + [(3, c) for c in command] +
            [(4, a) for a in args] + [(6, [(1, k), (2, v)]) for k, v in envs] +
            [(7, [(1, c), (2, h), (3, ro)]) for c, h, ro in mounts] +
            [(11, log_path), (15, [(1, res), (2, sec)])])
