/* A terminal handed to another process, as OCI runtimes do with --console-socket. */
#ifndef LBBOX_CONSOLE_H
#define LBBOX_CONSOLE_H

#include <stdbool.h>
#include <sys/ioctl.h>

#include "lbbox/base/err.h"

/* Connects to the unix socket at path (a stream socket); returns its fd. */
int lb_console_connect(const char *path, struct lb_err **err);
/*
 * Opens a new pty through ptmx (a path: "/dev/ptmx", or the sandbox's own after pivot_root),
 * sends its master over sock with SCM_RIGHTS (runc's protocol: the fd, and the name
 * "/dev/ptmx" as the message) and returns the slave, opened with O_NOCTTY. size: the pty's
 * window size to start with (NULL: the kernel's 0x0).
 */
int lb_console_send_pty(int sock, const char *ptmx, const struct winsize *size,
			struct lb_err **err);
/* The other end: 1 with a pty's master in *master (close-on-exec); 0 when nothing came yet
 * (nonblock); -1 when none will (EOF, an error, or a descriptor that is no pty master). */
int lb_console_recv_master(int sock, bool nonblock, int *master);

#endif
