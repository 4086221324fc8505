/*
 * Inside the sandbox's network namespace, run by pid 1: loopback up (every mode but "host"),
 * and for "on" the eth0 the parent created: up, its address, the default route.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/route.h>
#include <poll.h>
#include <string.h>

#include "lbbox/base/util.h"
#include "engine.h"

#define LOOPBACK_IFINDEX 1
#define ETH0_IFINDEX	 2 /* set by the parent when it created the pair */

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

static int eth0_up(struct nl_sock *sk, struct lb_err **err)
{
	struct rtnl_link *eth = rtnl_link_alloc(), *change = rtnl_link_alloc();
	int r = -NLE_NOMEM;
	if (eth && change) {
		rtnl_link_set_ifindex(eth, ETH0_IFINDEX);
		rtnl_link_set_flags(change, IFF_UP);
		r = rtnl_link_change(sk, eth, change, 0);
	}
	rtnl_link_put(change);
	rtnl_link_put(eth);
	return r < 0 ? lb_err_set(err, 0, "bring eth0 up: %s", nl_geterror(r)) : 0;
}

static int eth0_address(struct nl_sock *sk, const struct lb_net_lease *lease, struct lb_err **err)
{
	uint32_t a = htonl(lease->addr);
	struct rtnl_addr *addr = rtnl_addr_alloc();
	struct nl_addr *local = nl_addr_build(AF_INET, &a, sizeof(a));
	int r = -NLE_NOMEM;
	if (addr && local) {
		nl_addr_set_prefixlen(local, lease->prefix);
		rtnl_addr_set_ifindex(addr, ETH0_IFINDEX);
		rtnl_addr_set_local(addr, local);
		r = rtnl_addr_add(sk, addr, 0);
	}
	nl_addr_put(local);
	rtnl_addr_put(addr);
	return r < 0 ? lb_err_set(err, 0, "address of eth0: %s", nl_geterror(r)) : 0;
}

static int default_route(struct nl_sock *sk, const struct lb_net_lease *lease, struct lb_err **err)
{
	uint32_t gw = htonl(lease->gateway), any = 0;
	struct rtnl_route *route = rtnl_route_alloc();
	struct rtnl_nexthop *nh = rtnl_route_nh_alloc();
	struct nl_addr *via = nl_addr_build(AF_INET, &gw, sizeof(gw));
	struct nl_addr *dst = nl_addr_build(AF_INET, &any, sizeof(any));
	int r = -NLE_NOMEM;
	if (route && nh && via && dst) {
		nl_addr_set_prefixlen(dst, 0);
		rtnl_route_set_dst(route, dst);
		rtnl_route_nh_set_ifindex(nh, ETH0_IFINDEX);
		rtnl_route_nh_set_gateway(nh, via);
		rtnl_route_add_nexthop(route, nh);
		nh = NULL; /* owned by the route now */
		r = rtnl_route_add(sk, route, NLM_F_EXCL);
	}
	if (nh)
		rtnl_route_nh_free(nh);
	nl_addr_put(dst);
	nl_addr_put(via);
	rtnl_route_put(route);
	return r < 0 ? lb_err_set(err, 0, "default route via eth0: %s", nl_geterror(r)) : 0;
}

int lb_net_eth_configure(const struct lb_net_lease *lease, struct lb_err **err)
{
	struct nl_sock *sk = nl_socket_alloc();
	int r = -1;
	if (!sk)
		return lb_err_set(err, ENOMEM, "netlink socket");
	if (nl_connect(sk, NETLINK_ROUTE) < 0)
		lb_err_set(err, errno, "netlink connect");
	else if (eth0_up(sk, err) == 0 && eth0_address(sk, lease, err) == 0 &&
		 default_route(sk, lease, err) == 0)
		r = 0;
	nl_socket_free(sk);
	return r;
}

/* eth0's IPv4 address (host byte order), 0 when it has none. */
static uint32_t eth0_address_now(void)
{
	struct ifaddrs *ifa = NULL;
	uint32_t addr = 0;
	if (getifaddrs(&ifa) < 0)
		return 0;
	for (struct ifaddrs *i = ifa; i && !addr; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    strcmp(i->ifa_name, "eth0") == 0)
			addr = ntohl(((const struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr);
	freeifaddrs(ifa);
	return addr;
}

/* *e < 0 when the routes could not be read. */
static bool has_default_route(struct nl_sock *sk, int *e)
{
	struct nl_cache *cache = NULL;
	bool found = false;
	if ((*e = rtnl_route_alloc_cache(sk, AF_INET, 0, &cache)) < 0)
		return false;
	for (struct nl_object *o = nl_cache_get_first(cache); o && !found;
	     o = nl_cache_get_next(o)) {
		struct nl_addr *dst = rtnl_route_get_dst((struct rtnl_route *)o);
		found = rtnl_route_get_table((struct rtnl_route *)o) == RT_TABLE_MAIN &&
			(!dst || nl_addr_get_prefixlen(dst) == 0);
	}
	nl_cache_free(cache);
	return found;
}

/*
 * pasta configures eth0 from outside: link up, address, then the default route (the last step
 * in Debian 12's pasta; newer ones copy the host's routes in dump order, default first, which
 * the kernel accepts only once the link is up with an address, so waiting for it still means
 * a usable eth0). Route notifications wake the wait; each is followed by a fresh look.
 */
int lb_net_wait_pasta(int timeout_ms, uint32_t *addr, struct lb_err **err)
{
	struct nl_sock *events = nl_socket_alloc(), *query = nl_socket_alloc();
	uint64_t deadline = lb_now_ns() + (uint64_t)timeout_ms * 1000000;
	int r = -1;
	if (!events || !query) {
		lb_err_set(err, ENOMEM, "netlink socket");
		goto out;
	}
	nl_socket_disable_seq_check(events);
	int e;
	if ((e = nl_connect(events, NETLINK_ROUTE)) < 0 ||
	    (e = nl_connect(query, NETLINK_ROUTE)) < 0 ||
	    (e = nl_socket_add_membership(events, RTNLGRP_IPV4_ROUTE)) < 0) {
		lb_err_set(err, 0, "netlink: %s", nl_geterror(e));
		goto out;
	}
	struct pollfd p = {.fd = nl_socket_get_fd(events), .events = POLLIN};
	bool found;
	while (!(found = has_default_route(query, &e))) {
		uint64_t now = lb_now_ns();
		if (now >= deadline) {
			lb_err_set(err, 0, "pasta did not configure the sandbox's network in %d s",
				   timeout_ms / 1000);
			goto out;
		}
		/* a dump that failed is retried soon, not only on the next route change */
		int wait = (int)((deadline - now) / 1000000) + 1;
		if (poll(&p, 1, e < 0 && wait > 100 ? 100 : wait) > 0) {
			char buf[8192];
			while (recv(p.fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
				;
		}
	}
	*addr = eth0_address_now();
	r = 0;
out:
	nl_socket_free(events);
	nl_socket_free(query);
	return r;
}
