#!/usr/bin/env python3
"""subreaper.py CMD [ARG...]

Runs CMD as the child subreaper of everything it starts (prctl PR_SET_CHILD_SUBREAPER): a
process whose parent ends before it (a session's pid 1 after the lbbox that made it, a keeper, a
sandboxed command whose exec was killed) comes back here and is reaped at once, instead of
waiting as a zombie for the host's init, which may reap late or never. When CMD has ended, the
rest get 10 s to end too; whatever still runs then is a leak: it is named, killed and reaped,
and the exit status says so. Otherwise the exit status is CMD's."""
import ctypes
import os
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
LEFTOVER_WAIT = 10.0


def children():
    """{pid: command line} of this process's children."""
    out = {}
    for task in os.listdir("/proc/self/task"):
        with open("/proc/self/task/%s/children" % task) as f:
            for pid in f.read().split():
                try:
                    with open("/proc/%s/cmdline" % pid, "rb") as c:
                        out[int(pid)] = c.read().replace(b"\0", b" ").decode(errors="replace")
                except OSError:
                    pass
    return out


def reap_until(deadline):
    """Reaps children until none is left (True) or the deadline passed (False)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return True
        if pid == 0:
            if time.time() > deadline:
                return False
            time.sleep(0.1)


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: subreaper.py CMD [ARG...]")
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.exit("subreaper: prctl: %s" % os.strerror(ctypes.get_errno()))
    cmd = os.fork()
    if cmd == 0:
        os.execvp(sys.argv[1], sys.argv[1:])
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda s, _f: os.kill(cmd, s))
    status = 1
    while True:
        pid, st = os.waitpid(-1, 0)
        if pid == cmd:
            status = os.waitstatus_to_exitcode(st)
            break
    if not reap_until(time.time() + LEFTOVER_WAIT):
        left = children()
        for pid, line in sorted(left.items()):
            print("subreaper: still running after %s: %d %s" % (sys.argv[1], pid, line),
                  file=sys.stderr)
            os.kill(pid, signal.SIGKILL)
        reap_until(time.time() + LEFTOVER_WAIT)
        status = status or 1
    sys.exit(status if status >= 0 else 128 - status)


main()
