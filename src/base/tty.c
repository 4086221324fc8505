/*
 * The caller's side of a sandbox command's terminal (run -t, session exec -t). The pty is the
 * sandbox's own (opened on its devpts by pid 1 or the exec, console.c); only its master comes
 * out, so nothing inside holds a descriptor of the caller's terminal. Ctrl-C is a byte like any
 * other: in raw mode the caller's terminal sends it on, and the pty's line discipline makes it
 * SIGINT for the foreground process group inside.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lbbox/base/console.h"
#include "lbbox/base/tty.h"
#include "lbbox/base/util.h"

#define FINISH_MAX (1 << 20) /* bytes read from the pty once the command has ended */

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* What the relay waits for next. The master is served only while obuf is empty: a stdout that
 * takes nothing holds the command back (its pty fills up), never the relay's caller. */
static void arm(struct lb_tty *t)
{
	bool attached = t->master >= 0 && !t->master_done;
	/* (the master polled for POLLOUT alone would still report POLLHUP, again and again) */
	short ev = attached && !t->olen ? (short)(POLLIN | (t->len ? POLLOUT : 0)) : 0;
	if (t->master < 0)
		t->pfd[0] = (struct pollfd){.fd = t->sock, .events = POLLIN};
	else /* no events must be no descriptor: lb_wait_exit takes 0 for POLLIN */
		t->pfd[0] = (struct pollfd){.fd = ev ? t->master : -1, .events = ev};
	t->pfd[1] =
	    (struct pollfd){.fd = attached && t->in >= 0 && !t->len ? t->in : -1, .events = POLLIN};
	t->pfd[2] = (struct pollfd){.fd = t->sigfd, .events = POLLIN};
	t->pfd[3] = (struct pollfd){.fd = t->olen ? t->out : -1, .events = POLLOUT};
}

/*
 * O_NONBLOCK belongs to the open file, which a terminal or a pipe shares with the user's shell
 * and its other commands: those are reopened (a file of our own, nothing to undo); anything
 * else (a socket) gets the flag on its own, given back by lb_tty_stdout_close. A regular file
 * never blocks anyway, and a reopening would lose its offset.
 */
int lb_tty_stdout_open(int *flags)
{
	struct stat st;
	*flags = -1;
	if (fstat(1, &st) < 0)
		return -1;
	if (S_ISREG(st.st_mode))
		return 1;
	if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
		int fd = open("/proc/self/fd/1", O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (fd >= 0)
			return fd;
	}
	int fl = fcntl(1, F_GETFL);
	if (fl >= 0 && !(fl & O_NONBLOCK) && fcntl(1, F_SETFL, fl | O_NONBLOCK) == 0)
		*flags = fl;
	return 1;
}

void lb_tty_stdout_close(int fd, int flags)
{
	if (fd >= 0 && fd != 1) /* (fd 1 is never a reopening's: it was open) */
		close(fd);
	else if (fd == 1 && flags >= 0)
		fcntl(1, F_SETFL, flags);
}

/* stdout, so that a reader that stops reading never holds up the wait (deadline, signals).
 * Opened once the master came, so after pid 1 or the exec was forked: no process inside
 * inherits the new descriptor. */
static void open_out(struct lb_tty *t)
{
	t->out = lb_tty_stdout_open(&t->out_flags);
}

static void close_out(struct lb_tty *t)
{
	lb_tty_stdout_close(t->out, t->out_flags);
	t->out = t->out_flags = -1;
	t->olen = t->ooff = 0;
}

int lb_tty_open(struct lb_tty *t, bool interactive, struct lb_err **err)
{
	int sv[2];
	*t = (struct lb_tty){.sock = -1,
			     .child_sock = -1,
			     .master = -1,
			     .in = interactive ? 0 : -1,
			     .out = -1,
			     .out_flags = -1,
			     .size_fd = -1,
			     .sigfd = -1};
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return lb_err_set(err, errno, "socketpair");
	t->sock = sv[0];
	t->child_sock = sv[1];
	/* the size of whichever of stdin, stdout, stderr is a terminal, followed from then on */
	for (int fd = 0; fd < 3 && t->size_fd < 0; fd++)
		if (isatty(fd))
			t->size_fd = fd;
	t->has_size = t->size_fd >= 0 && ioctl(t->size_fd, TIOCGWINSZ, &t->size) == 0 &&
		      t->size.ws_row && t->size.ws_col;
	t->want_raw = interactive && isatty(0);
	/* a reader of our stdout that went away is EPIPE, not the end of lbbox (and of the
	 * terminal's restoration) */
	struct sigaction ign = {.sa_handler = SIG_IGN};
	sigemptyset(&ign.sa_mask);
	t->pipe_set = sigaction(SIGPIPE, &ign, &t->oldpipe) == 0;
	arm(t);
	return 0;
}

const struct winsize *lb_tty_size(const struct lb_tty *t)
{
	return t->has_size ? &t->size : NULL;
}

static void resize(struct lb_tty *t)
{
	struct winsize ws;
	if (t->master >= 0 && t->size_fd >= 0 && ioctl(t->size_fd, TIOCGWINSZ, &ws) == 0)
		ioctl(t->master, TIOCSWINSZ, &ws);
}

/* Only while attached, and only stdin: its own line discipline is the pty's inside. */
static void make_raw(struct lb_tty *t)
{
	struct termios raw;
	if (!t->want_raw || tcgetattr(0, &t->saved) < 0)
		return;
	raw = t->saved;
	cfmakeraw(&raw);
	t->raw = tcsetattr(0, TCSANOW, &raw) == 0;
}

/* The master, once: anything but a pty's master is refused (the relay then just ends). */
static void recv_master(struct lb_tty *t)
{
	int fd;
	int r = lb_console_recv_master(t->sock, true, &fd);
	if (r == 0)
		return;
	close_fd(&t->sock);
	if (r < 0 || fcntl(fd, F_SETFL, O_NONBLOCK) < 0) {
		close_fd(&fd);
		t->master_done = true;
		return;
	}
	t->master = fd;
	open_out(t);
	if (t->resized) /* the size changed since the pty was opened with it */
		resize(t);
	make_raw(t);
}

/* obuf to stdout, what it takes now. */
static void to_out(struct lb_tty *t)
{
	while (t->olen) {
		ssize_t n = write(t->out, t->obuf + t->ooff, t->olen - t->ooff);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		/* a reader that went away: the rest is dropped, the command goes on */
		if (n <= 0) {
			close_out(t);
			return;
		}
		t->ooff += (size_t)n;
		if (t->ooff == t->olen)
			t->olen = t->ooff = 0;
	}
}

/* Into obuf, which is empty, and on to stdout. The bytes read; 0: none for now; -1: the pty has
 * ended (no slave left open). */
static ssize_t from_master(struct lb_tty *t)
{
	ssize_t n = read(t->master, t->obuf, sizeof(t->obuf));
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0) { /* EIO: every slave is closed */
		t->master_done = true;
		return -1;
	}
	if (t->out >= 0) {
		t->olen = (size_t)n;
		t->ooff = 0;
		to_out(t);
	}
	return n;
}

/* stdin ended: a terminal's end is its own business; a pipe's or a file's becomes the pty's
 * end-of-file character, so `lbbox run -it ... cat < file` ends as it would without -t. */
static void stdin_ended(struct lb_tty *t)
{
	struct termios tio;
	bool term = isatty(t->in);
	t->in = -1;
	if (term)
		return;
	t->buf[0] = tcgetattr(t->master, &tio) == 0 && tio.c_cc[VEOF] ? (char)tio.c_cc[VEOF] : 4;
	t->len = 1;
	t->off = 0;
}

static void from_stdin(struct lb_tty *t)
{
	ssize_t n = read(t->in, t->buf, sizeof(t->buf));
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		stdin_ended(t);
		return;
	}
	t->len = (size_t)n;
	t->off = 0;
}

/* Never blocks: a command that reads nothing must not stop the relay. */
static void to_master(struct lb_tty *t)
{
	ssize_t n = write(t->master, t->buf + t->off, t->len - t->off);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n < 0) {
		t->len = t->off = 0;
		t->in = -1;
		return;
	}
	t->off += (size_t)n;
	if (t->off == t->len)
		t->len = t->off = 0;
}

bool lb_tty_on_signal(void *ctx, int sig)
{
	struct lb_tty *t = ctx;
	if (sig != SIGWINCH) {
		t->signalled |= sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT;
		return false;
	}
	t->resized = t->master < 0; /* until the master comes */
	resize(t); /* the kernel then signals the foreground process group inside */
	return true;
}

static void on_sigfd(struct lb_tty *t)
{
	struct signalfd_siginfo si;
	while (read(t->sigfd, &si, sizeof(si)) == sizeof(si))
		if (!lb_tty_on_signal(t, (int)si.ssi_signo) && t->target > 0)
			kill(t->target, (int)si.ssi_signo);
}

void lb_tty_on_ready(void *ctx, struct pollfd *fd)
{
	struct lb_tty *t = ctx;
	long i = fd - t->pfd;
	if (i == 0 && t->master < 0) {
		recv_master(t);
	} else if (i == 0) {
		if (fd->revents & POLLOUT)
			to_master(t);
		if (fd->revents & (POLLIN | POLLHUP | POLLERR) && !t->olen)
			from_master(t);
	} else if (i == 1) {
		from_stdin(t);
	} else if (i == 2) {
		on_sigfd(t);
	} else if (i == 3) {
		to_out(t);
	}
	arm(t);
}

int lb_tty_catch_signals(struct lb_tty *t, pid_t pid, struct lb_err **err)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH};
	sigset_t set;
	sigemptyset(&set);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaddset(&set, sigs[i]);
	t->target = pid;
	if (t->sigfd >= 0)
		return 0;
	if (sigprocmask(SIG_BLOCK, &set, &t->oldmask) < 0)
		return lb_err_set(err, errno, "block signals");
	t->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (t->sigfd < 0) {
		int e = errno;
		sigprocmask(SIG_SETMASK, &t->oldmask, NULL);
		return lb_err_set(err, e, "signalfd");
	}
	arm(t);
	return 0;
}

/*
 * TCSADRAIN, not TCSAFLUSH (as docker and podman): the output is all out before the terminal
 * leaves raw mode, and what the user typed ahead for the shell is kept. TCSAFLUSH would drop
 * that input and still not stop a terminal's late answers to the command's escape-sequence
 * queries (they can arrive after the flush, over ssh say); those are the terminal's own fixed
 * replies, not text the command chooses, so the shell may get them either way.
 */
static void restore(struct lb_tty *t)
{
	if (t->raw)
		tcsetattr(0, TCSADRAIN, &t->saved);
	t->raw = false;
}

/* Until stdout takes more (true) or a signal other than SIGWINCH comes (false). */
static bool wait_out(struct lb_tty *t)
{
	struct signalfd_siginfo si;
	struct pollfd p[2] = {{.fd = t->out, .events = POLLOUT},
			      {.fd = t->sigfd, .events = POLLIN}};
	for (;;) {
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			return false;
		if (p[0].revents)
			return true;
		while (p[1].revents && read(t->sigfd, &si, sizeof(si)) == sizeof(si))
			if (si.ssi_signo != SIGWINCH)
				return false;
	}
}

void lb_tty_finish(struct lb_tty *t, bool wait)
{
	/* the flip buffer is flushed before a read says "nothing": what the command wrote before
	 * it ended is all there; a background process still writing is not waited for (nor read
	 * past FINISH_MAX) */
	size_t total = 0;
	wait = wait && !t->signalled;
	if (wait) /* the command is gone: signals only end the waiting */
		lb_tty_catch_signals(t, 0, NULL);
	for (ssize_t n = 0;; total += (size_t)n) {
		to_out(t);
		while (t->olen && wait && wait_out(t))
			to_out(t);
		if (t->olen || t->out < 0 || t->master < 0 || t->master_done ||
		    total >= FINISH_MAX || (n = from_master(t)) <= 0)
			break;
	}
	restore(t);
}

void lb_tty_close(struct lb_tty *t)
{
	restore(t);
	close_fd(&t->sock);
	close_fd(&t->child_sock);
	close_fd(&t->master);
	close_out(t);
	if (t->sigfd >= 0) { /* taken here, or the unblocking would deliver them */
		struct signalfd_siginfo si;
		while (read(t->sigfd, &si, sizeof(si)) == sizeof(si))
			;
		close_fd(&t->sigfd);
		sigprocmask(SIG_SETMASK, &t->oldmask, NULL);
	}
	if (t->pipe_set)
		sigaction(SIGPIPE, &t->oldpipe, NULL);
	t->pipe_set = false;
}
