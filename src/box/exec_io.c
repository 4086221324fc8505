/*
 * The terminal side of an exec (lb_box_exec_io): the caller's stdin pumped into the command and
 * its output passed through as it comes. Everything here runs inside the exec's wait loop, so
 * nothing may block on the command: a command that never reads its stdin must still meet its
 * deadline, hence the pump's one buffer and the non-blocking pipe.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include "box_internal.h"
#include "lbbox/base/util.h"

int box_pump_open(struct box_pump *p, int src, int *child_end, struct lb_err **err)
{
	int fds[2];
	*p = (struct box_pump){.src = -1, .dst = -1};
	*child_end = -1;
	if (src < 0)
		return 0;
	if (pipe2(fds, O_CLOEXEC) < 0)
		return lb_err_set(err, errno, "pipe");
	/* only our end: src's file description may be shared (a terminal), it stays as it is */
	fcntl(fds[1], F_SETFL, O_NONBLOCK);
	p->src = src;
	p->dst = fds[1];
	*child_end = fds[0];
	return 0;
}

void box_pump_close(struct box_pump *p)
{
	if (p->dst >= 0)
		close(p->dst);
	p->dst = -1;
	p->src = -1; /* the caller's: never closed here */
}

void box_pump_arm(const struct box_pump *p, struct pollfd *pfd)
{
	pfd->fd = p->dst < 0 ? -1 : p->len ? p->dst : p->src;
	pfd->events = p->len ? POLLOUT : POLLIN;
}

/* The caller's stdin ended (or failed): the command's stdin ends too. */
static void pump_read(struct box_pump *p)
{
	ssize_t n = read(p->src, p->buf, sizeof(p->buf));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		box_pump_close(p);
		return;
	}
	p->len = (size_t)n;
	p->off = 0;
}

/* The command closed its stdin (EPIPE): what is left of ours is dropped. */
static void pump_write(struct box_pump *p)
{
	ssize_t n = write(p->dst, p->buf + p->off, p->len - p->off);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n < 0) {
		box_pump_close(p);
		return;
	}
	p->off += (size_t)n;
	if (p->off == p->len)
		p->len = p->off = 0;
}

void box_pump_step(struct box_pump *p)
{
	if (p->dst < 0)
		return;
	if (p->len)
		pump_write(p);
	else
		pump_read(p);
}

bool box_pass_output(int fd, const char *buf, size_t n, uint64_t *written, uint64_t limit)
{
	if (limit) {
		uint64_t room = *written < limit ? limit - *written : 0;
		n = n < room ? n : (size_t)room;
	}
	*written += n;
	return n == 0 || lb_write_all(fd, buf, n) == 0;
}

void box_sigpipe_ignore(struct sigaction *old)
{
	struct sigaction ign = {.sa_handler = SIG_IGN};
	sigemptyset(&ign.sa_mask);
	sigaction(SIGPIPE, &ign, old);
}

void box_sigpipe_restore(const struct sigaction *old)
{
	sigaction(SIGPIPE, old, NULL);
}
