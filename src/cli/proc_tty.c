/*
 * lbbox proc attach -t: this terminal attached to a managed process started with one (proc
 * start -t, whose keeper holds the pty's master). Raw mode while attached, so Ctrl-C is a byte
 * the pty inside turns into SIGINT; the window size goes to the keeper's tty socket at once and
 * on every SIGWINCH. Ctrl-P Ctrl-Q detaches (docker's keys), as does the end of stdin once the
 * process has been quiet; the process keeps running.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <unistd.h>

#include "cli.h"
#include "runs_cli.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/tty.h"
#include "lbbox/box/box.h"
#include "lbbox/base/util.h"

#define DETACH_1  0x10 /* ^P */
#define DETACH_2  0x11 /* ^Q */
#define LINGER_MS 1000 /* after stdin's end, as a plain attach */

struct attach {
	int sock, wfd, sigfd;
	int out, out_flags; /* lb_tty_stdout_open's: a reader that stops never holds up a detach */
	char obuf[65536];
	size_t olen, ooff; /* of obuf, what stdout has not taken yet; the socket waits meanwhile */
	bool in_open, ctrl_p; /* ctrl_p: a ^P read and held back, maybe the first detach key */
	bool raw;
	struct termios saved;
	sigset_t oldmask;
	struct sigaction oldpipe;
};

static void send_size(const struct attach *a)
{
	struct winsize ws;
	for (int fd = 0; fd < 3; fd++)
		if (isatty(fd) && ioctl(fd, TIOCGWINSZ, &ws) == 0) {
			(void)!write(a->wfd, &ws, sizeof(ws));
			return;
		}
}

/* stdin -> the process, the detach keys taken out: 1 go on, 0 detach, -1 the process is gone. */
static int from_stdin(struct attach *a)
{
	char in[4096], out[sizeof(in) + 1];
	size_t k = 0;
	ssize_t n = read(0, in, sizeof(in));
	if (n < 0 && errno == EINTR)
		return 1;
	if (n <= 0) {
		a->in_open = false;
		return 1;
	}
	for (ssize_t i = 0; i < n; i++) {
		if (a->ctrl_p) {
			a->ctrl_p = false;
			if (in[i] == DETACH_2)
				return 0;
			out[k++] = DETACH_1;
		}
		if (in[i] == DETACH_1)
			a->ctrl_p = true;
		else
			out[k++] = in[i];
	}
	return k && lb_write_all(a->sock, out, k) < 0 ? -1 : 1;
}

/* obuf -> stdout, what it takes now: 1 go on, 0 stdout is gone. */
static int flush_out(struct attach *a)
{
	while (a->olen) {
		ssize_t n = write(a->out, a->obuf + a->ooff, a->olen - a->ooff);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			return 1;
		if (n <= 0)
			return 0;
		a->ooff += (size_t)n;
		if (a->ooff == a->olen)
			a->olen = a->ooff = 0;
	}
	return 1;
}

/* The process's output -> obuf (empty) -> stdout: 1 go on, 0 it exited (or stdout is gone). */
static int to_stdout(struct attach *a)
{
	ssize_t n = read(a->sock, a->obuf, sizeof(a->obuf));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 1;
	if (n <= 0 || a->out < 0)
		return 0;
	a->olen = (size_t)n;
	a->ooff = 0;
	return flush_out(a);
}

/* A signal: SIGWINCH resizes, the others detach (0). */
static int on_signal(const struct attach *a)
{
	struct signalfd_siginfo si;
	while (read(a->sigfd, &si, sizeof(si)) == sizeof(si))
		if (si.ssi_signo != SIGWINCH)
			return 0;
	send_size(a);
	return 1;
}

static void relay(struct attach *a)
{
	for (int r = 1; r > 0;) {
		struct pollfd p[4] = {{.fd = a->in_open ? 0 : -1, .events = POLLIN},
				      {.fd = a->olen ? -1 : a->sock, .events = POLLIN},
				      {.fd = a->sigfd, .events = POLLIN},
				      {.fd = a->olen ? a->out : -1, .events = POLLOUT}};
		int n = poll(p, 4, a->in_open ? -1 : LINGER_MS);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return; /* quiet after stdin's end, or poll failed: detach */
		if (p[3].revents)
			r = flush_out(a);
		if (r > 0 && p[1].revents)
			r = to_stdout(a);
		if (r > 0 && p[0].revents)
			r = from_stdin(a);
		if (r > 0 && p[2].revents)
			r = on_signal(a);
	}
}

/* Signals taken by the relay, SIGPIPE ignored, stdin raw when it is a terminal. */
static int take_terminal(struct attach *a, struct lb_err **err)
{
	sigset_t set;
	struct sigaction ign = {.sa_handler = SIG_IGN};
	sigemptyset(&set);
	sigaddset(&set, SIGWINCH), sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM), sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, &a->oldmask) < 0)
		return lb_err_set(err, errno, "block signals");
	if ((a->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
		int e = errno;
		sigprocmask(SIG_SETMASK, &a->oldmask, NULL);
		return lb_err_set(err, e, "signalfd");
	}
	sigemptyset(&ign.sa_mask);
	sigaction(SIGPIPE, &ign, &a->oldpipe);
	a->out = lb_tty_stdout_open(&a->out_flags);
	struct termios raw;
	if (isatty(0) && tcgetattr(0, &a->saved) == 0) {
		raw = a->saved;
		cfmakeraw(&raw);
		a->raw = tcsetattr(0, TCSANOW, &raw) == 0;
	}
	return 0;
}

static void give_back(struct attach *a)
{
	if (a->raw) /* TCSADRAIN, not TCSAFLUSH: why in base/tty.c */
		tcsetattr(0, TCSADRAIN, &a->saved);
	if (a->sigfd >= 0) {
		struct signalfd_siginfo si;
		while (read(a->sigfd, &si, sizeof(si)) == sizeof(si))
			;
		close(a->sigfd);
		sigprocmask(SIG_SETMASK, &a->oldmask, NULL);
		sigaction(SIGPIPE, &a->oldpipe, NULL);
		lb_tty_stdout_close(a->out, a->out_flags);
	}
}

int cli_proc_attach_tty(struct lb_box *box, const char *session, const char *id)
{
	_cleanup_err_ struct lb_err *err = NULL;
	struct attach a = {.sock = -1, .wfd = -1, .sigfd = -1, .out = -1, .in_open = true};
	int r = lb_box_proc_tty(box, session, id, &a.wfd, &err);
	if (r == 0)
		r = lb_box_proc_attach(box, session, id, false, &a.sock, &err);
	if (r == 0)
		r = take_terminal(&a, &err);
	if (r == 0) {
		send_size(&a);
		relay(&a);
	}
	give_back(&a);
	if (a.sock >= 0)
		close(a.sock);
	if (a.wfd >= 0)
		close(a.wfd);
	return r < 0 ? cli_box_error(err) : 0;
}
