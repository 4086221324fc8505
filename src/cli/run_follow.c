/*
 * The output of a foreground `lbbox run --name`: main's stdout and stderr from its keeper's
 * follower socket (lb_box_proc_follow), not from the history. The history is a bounded ring a
 * fast command overruns; the follower is waited for, so every byte arrives, in order.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/box/run.h"
#include "runs_cli.h"

struct frames {
	unsigned char *buf;
	size_t have;
	bool any; /* a byte came */
};

/* Prints the whole chunks in f->buf; -1 on a header that is none (never from a keeper). */
static int emit_frames(struct frames *f)
{
	int stream;
	size_t n, off = 0;
	while (f->have - off >= 8) {
		if (lb_box_log_header_parse(f->buf + off, &stream, &n) < 0)
			return -1;
		if (f->have - off < 8 + n)
			break;
		lb_write_all(stream == 2 ? 2 : 1, f->buf + off + 8, n);
		off += 8 + n;
	}
	memmove(f->buf, f->buf + off, f->have - off);
	f->have -= off;
	return 0;
}

/* Reads fd to its end; a signal on sigfd goes to the run's main meanwhile. */
static int stream(struct lb_box *box, const char *name, int fd, int sigfd, struct frames *f)
{
	const size_t cap = 8 + LB_BOX_LOG_CHUNK_MAX;
	for (;;) {
		struct pollfd p[2] = {{.fd = fd, .events = POLLIN},
				      {.fd = sigfd, .events = POLLIN}};
		struct signalfd_siginfo si;
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (p[1].revents && read(sigfd, &si, sizeof(si)) == sizeof(si))
			lb_box_run_kill(box, name, (int)si.ssi_signo, NULL);
		if (!p[0].revents)
			continue;
		ssize_t n = read(fd, f->buf + f->have, cap - f->have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 0;
		f->have += (size_t)n;
		f->any = true;
		if (emit_frames(f) < 0)
			return -1;
	}
}

int cli_run_follow(struct lb_box *box, const char *name, int sigfd)
{
	_cleanup_close_ int fd = -1;
	struct frames f = {.buf = malloc(8 + LB_BOX_LOG_CHUNK_MAX)};
	int rc = 0;
	if (!f.buf)
		return cli_error("out of memory"), LB_EXIT_SETUP;
	/* main is held until we come: when it ended first, or its keeper before it took us, the
	 * history holds all it wrote */
	if (lb_box_proc_follow(box, name, LB_BOX_RUN_PROC, &fd, NULL) < 0)
		rc = 1;
	else if (stream(box, name, fd, sigfd, &f) < 0)
		rc = -1;
	free(f.buf);
	if (rc < 0)
		return cli_error("the output of run %s broke off", name), LB_EXIT_SETUP;
	if (rc > 0 || !f.any)
		return cli_logs_show(box, name, LB_BOX_RUN_PROC, false, -1, -1);
	return 0;
}
