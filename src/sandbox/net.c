/* Network mode "off": the sandbox's own network namespace with only loopback, brought up. */
#include <errno.h>
#include <net/if.h>
#include <netlink/route/link.h>

#include "sandbox/engine.h"

#define LOOPBACK_IFINDEX 1

int lb_net_loopback_up(struct lb_err **err)
{
	struct nl_sock *sk = nl_socket_alloc();
	struct rtnl_link *lo = NULL, *change = NULL;
	int r = -1;

	if (!sk)
		return lb_err_set(err, ENOMEM, "netlink socket");
	if (nl_connect(sk, NETLINK_ROUTE) < 0) {
		lb_err_set(err, errno, "netlink connect");
		goto out;
	}
	/* The loopback device is always ifindex 1 in a new namespace: no lookup round trip. */
	if (!(lo = rtnl_link_alloc()) || !(change = rtnl_link_alloc())) {
		lb_err_set(err, ENOMEM, "bring loopback up");
		goto out;
	}
	rtnl_link_set_ifindex(lo, LOOPBACK_IFINDEX);
	rtnl_link_set_flags(change, IFF_UP);
	int nr = rtnl_link_change(sk, lo, change, 0);
	if (nr < 0) {
		lb_err_set(err, 0, "bring loopback up: %s", nl_geterror(nr));
		goto out;
	}
	r = 0;
out:
	rtnl_link_put(change);
	rtnl_link_put(lo);
	nl_socket_free(sk);
	return r;
}
