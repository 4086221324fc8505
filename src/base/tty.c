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
#include <unistd.h>

#include "lbbox/base/console.h"
#include "lbbox/base/tty.h"
#include "lbbox/base/util.h"

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* What the relay waits for next. */
static void arm(struct lb_tty *t)
{
	bool attached = t->master >= 0 && !t->master_done;
	t->pfd[0] = (struct pollfd){.fd = t->master >= 0 ? (attached ? t->master : -1) : t->sock,
				    .events = POLLIN | (attached && t->len ? POLLOUT : 0)};
	t->pfd[1] =
	    (struct pollfd){.fd = attached && t->in >= 0 && !t->len ? t->in : -1, .events = POLLIN};
	t->pfd[2] = (struct pollfd){.fd = t->sigfd, .events = POLLIN};
}

int lb_tty_open(struct lb_tty *t, bool interactive, struct lb_err **err)
{
	int sv[2];
	*t = (struct lb_tty){.sock = -1,
			     .child_sock = -1,
			     .master = -1,
			     .in = interactive ? 0 : -1,
			     .out = 1,
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
	if (t->resized) /* the size changed since the pty was opened with it */
		resize(t);
	make_raw(t);
}

/* 1: bytes passed on; 0: none for now; -1: the pty has ended (no slave left open). */
static int from_master(struct lb_tty *t)
{
	char buf[65536];
	ssize_t n = read(t->master, buf, sizeof(buf));
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0) { /* EIO: every slave is closed */
		t->master_done = true;
		return -1;
	}
	/* a reader of our stdout that went away: the rest is dropped, the command goes on */
	if (t->out >= 0 && lb_write_all(t->out, buf, (size_t)n) < 0)
		t->out = -1;
	return 1;
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
	if (sig != SIGWINCH)
		return false;
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
		if (fd->revents & (POLLIN | POLLHUP | POLLERR))
			from_master(t);
	} else if (i == 1) {
		from_stdin(t);
	} else if (i == 2) {
		on_sigfd(t);
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

static void restore(struct lb_tty *t)
{
	if (t->raw)
		tcsetattr(0, TCSADRAIN, &t->saved);
	t->raw = false;
}

void lb_tty_finish(struct lb_tty *t)
{
	/* the flip buffer is flushed before a read says "nothing": what the command wrote before
	 * it ended is all there; a background process still writing is not waited for */
	while (t->master >= 0 && !t->master_done && from_master(t) > 0)
		;
	restore(t);
}

void lb_tty_close(struct lb_tty *t)
{
	restore(t);
	close_fd(&t->sock);
	close_fd(&t->child_sock);
	close_fd(&t->master);
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
