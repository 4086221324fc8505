/*
 * The keeper's follower (lb_box_proc_follow): the one client that gets a history process's
 * output as it is read, stdout and stderr framed as the history's chunks. Unlike the history,
 * it loses nothing: while a chunk is not all sent the keeper reads no more output, so a fast
 * process waits for a slow follower (a foreground `lbbox run --name` shows every byte). The
 * socket is non-blocking, so a stalled follower never stops the keeper's loop: signals, stop and
 * the exit are handled all the same.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "box_internal.h"
#include "lbbox/base/cleanup.h"

/* Binds through /proc/self/fd/N so a long runroot never overflows sun_path. */
int box_keeper_listen(const char *path, int *fd, struct lb_err **err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char dir[LB_PATH_BUF];
	snprintf(dir, sizeof(dir), "%s", path);
	*strrchr(dir, '/') = '\0';
	const char *name = strrchr(path, '/') + 1;
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return lb_err_set(err, errno, "open %s", dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/%s", dfd, name);
	unlinkat(dfd, name, 0);
	*fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (*fd < 0 || bind(*fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(*fd, 8) < 0)
		return lb_err_set(err, errno, "listen on %s", path);
	return 0;
}

void box_follower_close(struct box_follower *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	f->len = f->off = 0;
}

void box_follower_accept(struct box_follower *f)
{
	if (f->fd >= 0 || f->lfd < 0)
		return;
	f->fd = accept4(f->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (f->fd >= 0)
		f->came = true;
}

bool box_follower_busy(const struct box_follower *f)
{
	return f->fd >= 0 && f->len > 0;
}

static void flush(struct box_follower *f)
{
	while (f->fd >= 0 && f->off < f->len) {
		ssize_t n = send(f->fd, f->buf + f->off, f->len - f->off, MSG_NOSIGNAL);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			box_follower_close(f); /* gone: the history goes on without it */
			return;
		}
		f->off += (size_t)n;
	}
	f->len = f->off = 0;
}

void box_follower_send(struct box_follower *f, int stream, const char *buf, size_t n)
{
	if (f->fd < 0 || n == 0)
		return;
	if (n > LB_BOX_LOG_CHUNK_MAX)
		n = LB_BOX_LOG_CHUNK_MAX;
	box_log_put_header((unsigned char *)f->buf, stream, n);
	memcpy(f->buf + 8, buf, n);
	f->len = 8 + n;
	f->off = 0;
	flush(f);
}

void box_follower_event(struct box_follower *f, short revents)
{
	char discard[512];
	if (revents & POLLOUT)
		flush(f);
	if (f->fd >= 0 && (revents & (POLLIN | POLLHUP | POLLERR))) {
		ssize_t n = recv(f->fd, discard, sizeof(discard), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			box_follower_close(f);
	}
}

void box_follower_drain(struct box_follower *f, int sigfd)
{
	while (box_follower_busy(f)) {
		struct pollfd p[2] = {{.fd = f->fd, .events = POLLOUT},
				      {.fd = sigfd, .events = POLLIN}};
		struct signalfd_siginfo si;
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents && read(sigfd, &si, sizeof(si)) > 0)
			break; /* told to end (stop, rm): the follower gets no more */
		if (p[0].revents & (POLLHUP | POLLERR))
			break;
		if (p[0].revents)
			flush(f);
	}
	if (box_follower_busy(f))
		box_follower_close(f);
}
