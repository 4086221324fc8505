/*
 * net.ipv4.ip_forward: NAT needs the host to forward. lbbox turns it on when it creates a
 * network (as podman does) and records the previous value, so `lbbox network prune` can put a
 * host that had forwarding off back as it was once the last lbbox network is gone.
 */
#include <fcntl.h>
#include <stdlib.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"
#include "net_internal.h"

#define IP_FORWARD "/proc/sys/net/ipv4/ip_forward"

int lb_ip_forward_enable(int *was, struct lb_err **err)
{
	_cleanup_free_ char *v = NULL;
	if (lb_read_file(IP_FORWARD, 16, &v, NULL, err) < 0)
		return -1;
	*was = atoi(v);
	if (*was == 1)
		return 0;
	return lb_write_fileat(AT_FDCWD, IP_FORWARD, "1\n", 2, 0, 0, err);
}

void lb_ip_forward_restore(int was)
{
	if (was == 0)
		lb_write_fileat(AT_FDCWD, IP_FORWARD, "0\n", 2, 0, 0, NULL);
}
