"""The benchmarks' client of a Box runtime over stdio (`lbbox box -s`): one reader thread files
each reply under its seq_id; send() returns the seq_id, wait() its reply's data (code 0 asserted)."""
import json
import subprocess
import threading


class StdioBox:
    def __init__(self, argv, env, ctx, timeout):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self.ctx, self.timeout = ctx, timeout
        self.replies, self.cv, self.seq = {}, threading.Condition(), 0
        threading.Thread(target=self._reader, daemon=True).start()

    def _reader(self):
        for line in self.p.stdout:
            m = json.loads(line)
            with self.cv:
                self.replies[m["seq_id"]] = m
                self.cv.notify_all()

    def send(self, action, data):
        with self.cv:
            self.seq += 1
            s = self.seq
        self.p.stdin.write((json.dumps({"seq_id": s, "action": action, "data": data,
                                        "context": self.ctx}) + "\n").encode())
        self.p.stdin.flush()
        return s

    def wait(self, s):
        with self.cv:
            self.cv.wait_for(lambda: s in self.replies, self.timeout)
            r = self.replies.pop(s)
        assert r["code"] == 0, r
        return r["data"]
