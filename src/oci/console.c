/*
 * process.terminal: a new pty whose master is handed to the caller over its console socket
 * (SCM_RIGHTS, as runc does: conmon and containerd's shim read the terminal from it). The pty is
 * the host's; the slave becomes the container's stdio.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/oci/oci.h"
#include "oci_internal.h"

static int send_fd(int sock, int fd, const char *name, struct lb_err **err)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {.iov_base = (void *)name, .iov_len = strlen(name)};
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

static int connect_socket(const char *path, struct lb_err **err)
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

int lb_oci_console(const char *socket_path, int *slave, struct lb_err **err)
{
	_cleanup_close_ int master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master < 0)
		return lb_err_set(err, errno, "open /dev/ptmx");
	if (unlockpt(master) < 0)
		return lb_err_set(err, errno, "unlockpt");
	int s = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY);
	if (s < 0)
		return lb_err_set(err, errno, "open the pty's slave");
	_cleanup_close_ int sock = connect_socket(socket_path, err);
	if (sock < 0 || send_fd(sock, master, "/dev/ptmx", err) < 0) {
		close(s);
		return -1;
	}
	*slave = s;
	return 0;
}
