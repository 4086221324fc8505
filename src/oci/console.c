/*
 * A pty for `exec --tty`: made through the host's /dev/ptmx (the container's own is used for the
 * container's command, src/sandbox/init.c), its master sent to the console socket.
 */
#include <unistd.h>

#include "lbbox/base/console.h"
#include "oci_internal.h"

int lb_oci_console(const char *socket_path, int *slave, struct lb_err **err)
{
	int sock = lb_console_connect(socket_path, err);
	if (sock < 0)
		return -1;
	int s = lb_console_send_pty(sock, "/dev/ptmx", err);
	close(sock);
	if (s < 0)
		return -1;
	*slave = s;
	return 0;
}
