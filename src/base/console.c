/* --console-socket: a pty's master sent to the caller (conmon, containerd's shim) with
 * SCM_RIGHTS; the slave stays with whoever becomes the terminal's user. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/console.h"

int lb_console_connect(const char *path, struct lb_err **err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(sa.sun_path))
		return lb_err_set(err, ENAMETOOLONG, "console socket %s", path);
	strcpy(sa.sun_path, path);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return lb_err_set(err, errno, "socket");
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		close(s);
		return lb_err_set(err, e, "connect to console socket %s", path);
	}
	return s;
}

static int send_fd(int sock, int fd, struct lb_err **err)
{
	static const char name[] = "/dev/ptmx";
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {.iov_base = (void *)name, .iov_len = sizeof(name) - 1};
	struct msghdr msg = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
	memset(cbuf, 0, sizeof(cbuf));
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	ssize_t n;
	while ((n = sendmsg(sock, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	return n < 0 ? lb_err_set(err, errno, "send the terminal to the console socket") : 0;
}

int lb_console_send_pty(int sock, const char *ptmx, const struct winsize *size, struct lb_err **err)
{
	_cleanup_close_ int master = open(ptmx, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master < 0)
		return lb_err_set(err, errno, "open %s", ptmx);
	if (unlockpt(master) < 0)
		return lb_err_set(err, errno, "unlockpt");
	/* before the command can ask: its first `stty size` sees the caller's */
	if (size && ioctl(master, TIOCSWINSZ, size) < 0)
		return lb_err_set(err, errno, "set the terminal's size");
	int slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (slave < 0)
		return lb_err_set(err, errno, "open the pty's slave");
	if (send_fd(sock, master, err) < 0) {
		close(slave);
		return -1;
	}
	return slave;
}

/* The first descriptor of the message; any other is closed. */
static int take_fd(struct msghdr *msg)
{
	int fd = -1;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int got;
			memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (fd < 0)
				fd = got;
			else
				close(got);
		}
	}
	return fd;
}

int lb_console_recv_master(int sock, bool nonblock, int *master)
{
	char name[64], cbuf[CMSG_SPACE(4 * sizeof(int))];
	struct iovec iov = {.iov_base = name, .iov_len = sizeof(name)};
	struct msghdr msg = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
	unsigned ptn;
	ssize_t n;
	*master = -1;
	while ((n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | (nonblock ? MSG_DONTWAIT : 0))) < 0 &&
	       errno == EINTR)
		;
	if (n < 0 && errno == EAGAIN)
		return 0;
	int fd = n < 0 ? -1 : take_fd(&msg);
	/* whatever the sandbox side sent, only a pty's master is taken */
	if (fd >= 0 && ioctl(fd, TIOCGPTN, &ptn) < 0) {
		close(fd);
		fd = -1;
	}
	*master = fd;
	return fd < 0 ? -1 : 1;
}
