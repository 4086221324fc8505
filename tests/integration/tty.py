#!/usr/bin/env python3
"""lbbox run -t / -it and session exec -t against a real terminal: a pty made here plays the
user's terminal (lbbox's stdin, stdout and stderr, and its controlling terminal), and each case
checks what the command inside sees, what comes out, the exit status, the terminal's modes after,
and that the host is left clean. Usage: tty.py LBBOX ROOTFS"""
import fcntl
import glob
import os
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import termios
import time
import uuid

LBBOX = sys.argv[1]
ROOTFS = os.environ.get("LBBOX_TEST_ROOTFS") or sys.argv[2]  # the ASan build has no image
TMP = tempfile.mkdtemp(prefix="lbbox-tty-")
ENV = dict(os.environ, LBBOX_RUNROOT=os.path.join(TMP, "run"), LBBOX_ROOT=os.path.join(TMP, "root"))
IDS = []  # sandbox ids made by the cases: their cgroups must be gone
TERMS = []  # every lbbox started: a failed case's are ended before the next case


def set_size(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


class Term:
    """lbbox with a pty of ours as its terminal (or pipes for some of its stdio)."""

    def __init__(self, args, size=(33, 101), stdin_pipe=False, stdout_pipe=False):
        self.master, self.slave = os.openpty()
        self.host = os.fstat(self.slave)
        set_size(self.master, *size)
        self.before = termios.tcgetattr(self.slave)
        self.marker = "lbtty-" + uuid.uuid4().hex[:10]
        self.json = os.path.join(TMP, self.marker + ".json")
        argv = [LBBOX] + [a.replace("MARK", self.marker).replace("JSON", self.json)
                          for a in args]

        def ctty():  # a session of its own with our pty as its controlling terminal
            os.setsid()
            fcntl.ioctl(0 if not stdin_pipe else 1, termios.TIOCSCTTY, 0)

        self.p = subprocess.Popen(
            argv, env=ENV, preexec_fn=ctty if not (stdin_pipe and stdout_pipe) else None,
            stdin=subprocess.PIPE if stdin_pipe else self.slave,
            stdout=subprocess.PIPE if stdout_pipe else self.slave, stderr=self.slave)
        self.out = b""
        TERMS.append(self)

    def read_until(self, what, timeout=15):
        """Output (from the pty, or the stdout pipe) until what appears; fails at the timeout."""
        src = self.p.stdout.fileno() if self.p.stdout else self.master
        end = time.time() + timeout
        while what.encode() not in self.out:
            left = end - time.time()
            assert left > 0, "no %r within %ss; got %r" % (what, timeout, self.out)
            r, _, _ = select.select([src], [], [], left)
            if r:
                try:
                    d = os.read(src, 65536)
                except OSError:  # EIO: every slave closed
                    d = b""
                assert d, "output ended before %r: %r" % (what, self.out)
                self.out += d

    def finish(self, timeout=20):
        """Waits for lbbox; returns (exit code, all output)."""
        src = self.p.stdout.fileno() if self.p.stdout else self.master
        end = time.time() + timeout
        while self.p.poll() is None or select.select([src], [], [], 0)[0]:
            assert time.time() < end, "lbbox still running: %r" % self.out
            r, _, _ = select.select([src], [], [], 0.1)
            if r:
                try:
                    d = os.read(src, 65536)
                except OSError:
                    d = b""
                if not d and self.p.poll() is not None:
                    break
                self.out += d
        if self.p.stdin:
            self.p.stdin.close()
        if self.p.stdout:
            self.p.stdout.close()
        self.after = termios.tcgetattr(self.slave)
        os.close(self.master)
        os.close(self.slave)
        if os.path.exists(self.json):
            with open(self.json) as f:
                IDS.append(re.search(r'"id":"([0-9a-f]{12})"', f.read()).group(1))
        # the pty inside and ours both turn \n into \r\n
        return self.p.returncode, self.out.decode("utf-8", "replace").replace("\r", "")


def procs_with(marker):
    """Host pids whose command line holds marker."""
    found = []
    for d in glob.glob("/proc/[0-9]*"):
        try:
            with open(d + "/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    found.append(int(d[6:]))
        except OSError:
            pass
    return found


def check_clean():
    left = [d for d in glob.glob(os.path.join(TMP, "run", "*")) if not d.endswith("/box")]
    left += glob.glob(os.path.join(TMP, "run", "box", "sessions", "*"))
    assert not left, "left behind: %s" % left
    cgs = [c for pat in ("/sys/fs/cgroup/*/lbbox-*", "/sys/fs/cgroup/*/*/lbbox-*",
                         "/sys/fs/cgroup/*/*/*/lbbox-*") for c in glob.glob(pat)]
    ours = [c for c in cgs if any(i in c for i in IDS)]
    assert not ours, "cgroups left: %s" % ours
    end = time.time() + 2
    while procs_with("lbtty-") and time.time() < end:
        time.sleep(0.05)
    assert not procs_with("lbtty-"), "processes left: %s" % procs_with("lbtty-")


def run_t(*cmd, flags=("-t",)):
    return (["run"] + list(flags) + ["--json-file", "JSON", "--rootfs", ROOTFS, "--", "sh", "-c"]
            + list(cmd) + ["MARK"])


CASES = []


def case(fn):
    CASES.append(fn)
    return fn


def new_session():
    """A session of the test image; its sandbox id joins IDS (checked gone at the end)."""
    name = "tty-" + uuid.uuid4().hex[:8]
    p = subprocess.run([LBBOX, "session", "create", name, "--rootfs", ROOTFS], env=ENV,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p
    IDS.append(re.search(r'"backend_session_id":"lbbox-([0-9a-f]{12})"', p.stdout).group(1))
    return name


@case
def the_command_has_a_terminal_of_the_sandbox():
    """tty names a pty; stdin, stdout, stderr are terminals; their pty is the sandbox's own
    devpts (another file system than the host's), and the command holds no other descriptor."""
    t = Term(run_t("tty; test -t 0 && test -t 1 && test -t 2 && echo ALL3; "
                   "stat -L -c dev=%d /proc/self/fd/0; ls /proc/self/fd; exit 3"))
    code, out = t.finish()
    assert code == 3, (code, out)
    assert re.search(r"^/dev/pts/\d+$", out, re.M), out
    assert "ALL3" in out, out
    inside = int(re.search(r"dev=(\d+)", out).group(1))
    assert inside != t.host.st_dev, "the host's devpts inside: %s" % out
    fds = re.search(r"dev=\d+\n(.*)$", out, re.S).group(1).split()
    assert fds == ["0", "1", "2", "3"], fds  # 3: ls's own directory


@case
def nothing_inside_holds_the_host_terminal():
    """Seen from the host, neither the command nor the sandbox's pid 1 has a descriptor of the
    user's terminal (so no TIOCSTI or read from inside can reach it)."""
    t = Term(run_t("echo ready; sleep 30; true"))
    t.read_until("ready")
    pids = [p for p in procs_with(t.marker) if p != t.p.pid]  # lbbox's own is the user's
    assert pids, "the command is not found on the host"
    with open("/proc/%d/stat" % pids[0]) as f:
        pids.append(int(f.read().rsplit(")", 1)[1].split()[1]))  # its parent: pid 1
    # pid 1 (a clone of lbbox) left lbbox's session: the user's terminal signals (SIGWINCH,
    # SIGINT) reach the command through lbbox only, once
    assert os.getsid(pids[-1]) != os.getsid(t.p.pid), "pid 1 is in the terminal's session"
    assert os.getpgid(pids[-1]) != os.getpgid(t.p.pid), "pid 1 is in lbbox's process group"
    host = t.host
    for pid in pids:  # by identity: the pty inside may have the same name (/dev/pts/0)
        for fd in glob.glob("/proc/%d/fd/*" % pid):
            try:
                st = os.stat(fd)
            except OSError:
                continue
            same = (st.st_dev, st.st_ino) == (host.st_dev, host.st_ino)
            assert not same, "pid %d holds the host terminal: %s" % (pid, fd)
    t.p.send_signal(signal.SIGTERM)
    code, out = t.finish()
    assert code == 143, (code, out)


@case
def the_window_size_is_there_from_the_start():
    t = Term(run_t("stty size"), size=(33, 101))
    code, out = t.finish()
    assert code == 0 and "33 101" in out, (code, out)


@case
def a_resize_reaches_the_command():
    """The host terminal's new size and SIGWINCH to lbbox: the pty inside takes the size, the
    kernel signals the command; once only (pid 1 is out of the caller's session)."""
    t = Term(run_t("n=0; trap 'n=$((n+1)); stty size; [ $n = 1 ] || echo TWICE' WINCH; "
                   "echo ready; for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do "
                   "sleep 0.2; [ $n = 1 ] && sleep 0.5 && exit 5; done; exit 9"))
    t.read_until("ready")
    set_size(t.master, 44, 55)  # the kernel signals our pty's foreground group: lbbox
    code, out = t.finish()
    assert code == 5 and "44 55" in out and "TWICE" not in out, (code, out)


@case
def ctrl_c_is_the_line_discipline_s_sigint_inside():
    """-it on a terminal: raw mode while attached, so ^C is a byte that the pty inside turns
    into SIGINT for its foreground group: sleep dies, the shell's trap runs and it goes on;
    the terminal's modes are restored afterwards."""
    t = Term(run_t("trap 'echo caught' INT; echo ready; sleep 100; echo after; exit 7",
                   flags=("-it",)))
    t.read_until("ready")
    time.sleep(0.5)  # until sleep runs: ^C while the shell forks it would miss it
    mode = termios.tcgetattr(t.slave)
    assert not mode[3] & (termios.ICANON | termios.ISIG | termios.ECHO), "not raw: %r" % mode
    os.write(t.master, b"\x03")
    code, out = t.finish()
    assert code == 7 and "caught" in out and "after" in out, (code, out)
    assert t.after == t.before, "terminal modes not restored"


@case
def ctrl_c_from_a_pipe_still_interrupts():
    """No terminal on stdin: the byte 0x03 passes through the relay and the pty inside makes
    it SIGINT (lbbox sends no signal): sh -c 'sleep 100' ends with 130."""
    t = Term(run_t("echo ready; sleep 100", flags=("-it",)), stdin_pipe=True)
    t.read_until("ready")
    time.sleep(0.5)
    t.p.stdin.write(b"\x03")
    t.p.stdin.flush()
    code, out = t.finish()
    assert code == 130, (code, out)


@case
def stdin_without_a_terminal_and_its_end():
    """-it with stdin and stdout pipes: the input arrives, its end is the pty's EOF (cat ends),
    and the command still has a terminal."""
    t = Term(run_t("tty; cat", flags=("-it",)), stdin_pipe=True, stdout_pipe=True)
    t.p.stdin.write(b"hello\n")
    t.p.stdin.close()
    code, out = t.finish()
    # (the pty inside echoes the input, maybe before tty's line)
    assert code == 0 and re.search(r"^/dev/pts/\d+$", out, re.M) and "hello" in out, (code, out)


@case
def without_i_stdin_is_not_read():
    t = Term(run_t("if read -t 1 x; then echo got=$x; else echo none; fi"), stdin_pipe=True)
    t.p.stdin.write(b"data\n")
    t.p.stdin.flush()
    code, out = t.finish()
    assert code == 0 and "none" in out and "got=" not in out, (code, out)


@case
def a_terminal_is_refused_where_it_does_not_apply():
    for args, msg in ((["run", "-d", "-t", "--rootfs", ROOTFS, "--", "true"], "-t does not apply"),
                      (["session", "exec", "-t", "--json", "s", "true"], "-t does not go with")):
        p = subprocess.run([LBBOX] + args, env=ENV, capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=30)
        lines = p.stderr.splitlines()
        assert p.returncode == 125 and len(lines) == 1 and msg in lines[0], (args, p)


@case
def session_exec_has_a_terminal_too():
    name = new_session()
    try:
        t = Term(["session", "exec", "-t", name, "sh", "-c",
                  "tty; test -t 0 && echo T0; stty size; exit 4", "MARK"], size=(21, 77))
        code, out = t.finish()
        assert code == 4 and "T0" in out and "21 77" in out, (code, out)
        assert re.search(r"^/dev/pts/\d+$", out, re.M), out
        t = Term(["session", "exec", "-it", name, "sh", "-c", "echo ready; sleep 100", "MARK"])
        t.read_until("ready")
        time.sleep(0.5)
        os.write(t.master, b"\x03")
        code, out = t.finish()
        assert code == 130 and t.after == t.before, (code, out)
    finally:
        subprocess.run([LBBOX, "session", "rm", name], env=ENV, capture_output=True)


@case
def exec_in_a_detached_run_has_a_terminal():
    name = "tty-" + uuid.uuid4().hex[:8]
    p = subprocess.run([LBBOX, "run", "-d", "--name", name, "--rootfs", ROOTFS, "--", "sleep",
                        "600"], env=ENV, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p
    p = subprocess.run([LBBOX, "session", "inspect", name], env=ENV, capture_output=True,
                       text=True, timeout=30)
    IDS.append(re.search(r'"backend_session_id":"lbbox-([0-9a-f]{12})"', p.stdout).group(1))
    try:
        t = Term(["exec", "-it", name, "sh", "-c",
                  "tty; test -t 0 && echo T0; stty size; echo ready; read x; exit $x", "MARK"],
                 size=(22, 66))
        t.read_until("ready")
        os.write(t.master, b"6\r")  # raw mode here: the pty inside makes \r a newline
        code, out = t.finish()
        assert code == 6 and "T0" in out and "22 66" in out and t.after == t.before, (code, out)
        assert re.search(r"^/dev/pts/\d+$", out, re.M), out
    finally:
        subprocess.run([LBBOX, "rm", "-f", name], env=ENV, capture_output=True)


def stuck_stdout(args, act, limit, ready=None):
    """lbbox with stdout a pipe nobody reads, filled by a command that writes without end
    (yes): act(t) once the pipe is full (and ready() holds, when given), then lbbox must end
    within limit seconds. The pipe is read only afterwards (so a stuck lbbox is freed and
    ended). Returns (code, seconds)."""
    t = Term(args, stdout_pipe=True)
    deadline = time.time() + 30
    while ready and not ready() and time.time() < deadline:  # a loaded host starts late
        time.sleep(0.05)
    time.sleep(1)  # the pipe (64 KiB) and the relay's buffers are full by now
    start = time.time()
    act(t)
    while t.p.poll() is None and time.time() - start < limit + 5:
        time.sleep(0.05)
    took = time.time() - start
    code, _ = t.finish()
    return code, took


@case
def the_timeout_holds_while_stdout_is_stuck():
    """run -t --timeout 3 with a stdout pipe nobody reads: lbbox still kills the command at
    the deadline and exits (the relay waits for stdout in its loop, it never blocks in it)."""
    code, took = stuck_stdout(run_t("exec yes $0", flags=("-t", "--timeout", "3")),
                              lambda t: None, 2)
    assert code == 124 and took < 2 + 1, (code, took)  # 3 s from the start, 1 s of it gone


@case
def sigterm_is_served_while_stdout_is_stuck():
    """The same stuck stdout, and SIGTERM to lbbox (run -t, session exec -t): it reaches the
    command at once, and lbbox ends without waiting for the reader."""
    code, took = stuck_stdout(run_t("exec yes $0"), lambda t: t.p.send_signal(signal.SIGTERM),
                              0)
    assert code == 143 and took < 1, ("run", code, took)
    # the command ended by itself, its output not yet all out: lbbox waits for the reader,
    # but a signal ends the waiting (the rest is dropped)
    done = tempfile.mkdtemp(dir=TMP)  # the command says it ended: not a guess from a sleep
    code, took = stuck_stdout(run_t("head -c 75000 /dev/zero; touch /tmp/done/x; exit 0",
                                    flags=("-t", "-v", done + ":/tmp/done")),
                              lambda t: t.p.send_signal(signal.SIGTERM), 0,
                              lambda: os.path.exists(os.path.join(done, "x")))
    assert code == 0 and took < 1, ("run, ended", code, took)
    name = new_session()
    try:
        code, took = stuck_stdout(["session", "exec", "-t", name, "sh", "-c", "exec yes $0",
                                   "MARK"], lambda t: t.p.send_signal(signal.SIGTERM), 0)
        assert code == 143 and took < 1, ("session exec", code, took)
        code, took = stuck_stdout(["session", "exec", "-t", "--timeout", "3", name, "sh", "-c",
                                   "exec yes $0", "MARK"], lambda t: None, 2)
        # (a session's timeout also destroys it: ~1.5 s more here, without -t as well)
        assert code == 124 and took < 2 + 3, ("session exec --timeout", code, took)
    finally:
        subprocess.run([LBBOX, "session", "rm", name], env=ENV, capture_output=True)


@case
def a_slow_reader_still_gets_everything():
    """The other side of not blocking: a command that ends by itself while its reader lags
    behind gets all its output to it (the relay holds the command back and drops nothing,
    also what is left when it ends); the user's terminal is never made non-blocking."""
    for n in (75000, 3000000):  # ends with output still in the relay; held back first
        t = Term(run_t("head -c %d /dev/zero | tr '\\0' x; echo END" % n), stdout_pipe=True)
        time.sleep(1.5)
        code, out = t.finish()
        assert code == 0 and out.count("x") == n and out.endswith("END\n"), (n, code, len(out))
    t = Term(run_t("echo ready; sleep 1"))
    t.read_until("ready")
    flags = fcntl.fcntl(t.slave, fcntl.F_GETFL)  # the same open file as lbbox's stdout
    code, out = t.finish()
    assert code == 0 and not flags & os.O_NONBLOCK, (code, out, flags)
    with open(os.path.join(TMP, "out.txt"), "w+") as f:  # a file: written as it is
        p = subprocess.run([LBBOX, "run", "-t", "--rootfs", ROOTFS, "--", "echo", "to-a-file"],
                           env=ENV, stdin=subprocess.DEVNULL, stdout=f, timeout=60)
        flags = fcntl.fcntl(f.fileno(), fcntl.F_GETFL)
        f.seek(0)
        got = f.read()
    assert p.returncode == 0 and got.replace("\r", "") == "to-a-file\n", (p, got)
    assert not flags & os.O_NONBLOCK, flags
    mine, theirs = socket.socketpair()  # a socket: O_NONBLOCK on its own, and given back
    with mine, theirs:
        p = subprocess.run([LBBOX, "run", "-t", "--rootfs", ROOTFS, "--", "echo", "to-a-socket"],
                           env=ENV, stdin=subprocess.DEVNULL, stdout=theirs, timeout=60)
        flags = fcntl.fcntl(theirs.fileno(), fcntl.F_GETFL)
        mine.settimeout(5)
        got = mine.recv(100).decode()
    assert p.returncode == 0 and got.replace("\r", "") == "to-a-socket\n", (p, got)
    assert not flags & os.O_NONBLOCK, flags


def proc_info(name, pid):
    p = subprocess.run([LBBOX, "proc", "inspect", name, pid], env=ENV, capture_output=True,
                       text=True, timeout=30)
    return p.stdout


@case
def a_managed_process_with_a_terminal():
    """proc start -t: the keeper holds the pty's master; proc attach -t relays it with this
    terminal raw, sends the window size (at once and on SIGWINCH), ^C reaches the process
    through its pty, ^P^Q detaches and leaves it running. attach -t on a process without a
    terminal says so in one line."""
    name = new_session()

    def start(pid, script, tty=True):
        p = subprocess.run([LBBOX, "proc", "start"] + (["-t"] if tty else []) +
                           ["--id", pid, name, "--", "sh", "-c", script, "MARK"], env=ENV,
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p
    try:
        start("p1", "test -t 0 && echo T0; echo ready; read x; echo got=$x; stty size; sleep 100")
        t = Term(["proc", "attach", "-t", name, "p1"], size=(25, 80))
        t.read_until("ready")
        os.write(t.master, b"hi\r")  # raw here: the pty inside makes \r a newline
        t.read_until("25 80")
        assert "T0" in t.out.decode() and "got=hi" in t.out.decode(), t.out
        time.sleep(0.5)
        os.write(t.master, b"\x03")
        code, out = t.finish()
        assert code == 0 and t.after == t.before, (code, out)
        assert '"exit_code":130' in proc_info(name, "p1"), proc_info(name, "p1")

        start("p2", "trap 'stty size' WINCH; echo ready; while :; do sleep 0.1; done")
        t = Term(["proc", "attach", "-t", name, "p2"], size=(25, 80))
        t.read_until("ready")
        set_size(t.master, 30, 90)  # SIGWINCH to attach, the size to the keeper
        t.read_until("30 90")
        os.write(t.master, b"\x10\x11")
        code, out = t.finish()
        assert code == 0 and t.after == t.before, (code, out)
        assert '"status":"running"' in proc_info(name, "p2"), proc_info(name, "p2")

        start("p3", "sleep 100", tty=False)
        p = subprocess.run([LBBOX, "proc", "attach", "-t", name, "p3"], env=ENV,
                           capture_output=True, text=True, timeout=30)
        lines = p.stderr.splitlines()
        assert p.returncode == 125 and len(lines) == 1 and "has no terminal" in lines[0], p
    finally:
        subprocess.run([LBBOX, "session", "rm", name], env=ENV, capture_output=True)


@case
def proc_attach_detaches_while_stdout_is_stuck():
    """proc attach -t with a stdout pipe nobody reads, on a process that writes without end:
    SIGTERM still detaches at once (the process keeps running)."""
    name = new_session()
    try:
        p = subprocess.run([LBBOX, "proc", "start", "-t", "--id", "y", name, "--", "sh", "-c",
                            "exec yes $0", "MARK"], env=ENV, capture_output=True, text=True,
                           timeout=60)
        assert p.returncode == 0, p
        code, took = stuck_stdout(["proc", "attach", "-t", name, "y"],
                                  lambda t: t.p.send_signal(signal.SIGTERM), 0)
        assert code == 0 and took < 1, (code, took)
        assert '"status":"running"' in proc_info(name, "y"), proc_info(name, "y")
    finally:
        subprocess.run([LBBOX, "session", "rm", name], env=ENV, capture_output=True)


def main():
    failed = 0
    only = os.environ.get("LBBOX_TTY_FILTER", "")
    for fn in CASES:
        if only not in fn.__name__:
            continue
        start = time.time()
        try:
            fn()
            check_clean()
            print("ok   %s (%.1fs)" % (fn.__name__, time.time() - start), flush=True)
        except Exception as e:  # noqa: BLE001 - every failure is reported, the next case runs
            failed += 1
            print("FAIL %s: %s" % (fn.__name__, e), flush=True)
            for t in TERMS:
                if t.p.poll() is None:  # SIGTERM: lbbox then removes its sandbox
                    t.p.terminate()
                    try:
                        t.p.wait(10)
                    except subprocess.TimeoutExpired:
                        t.p.kill()
                        t.p.wait()
        TERMS.clear()
    subprocess.run(["rm", "-rf", TMP])
    print("%d of %d failed" % (failed, len(CASES)) if failed else "all passed")
    return 1 if failed else 0


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("skipped: needs root")
        sys.exit(77)
    sys.exit(main())
