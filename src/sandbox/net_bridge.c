/*
 * The bridge of a network "on" (libnl-route-3): created on first use with the gateway address,
 * and marked as lbbox's with its alias "lbbox:<runroot>", so a bridge of the same name made by
 * someone else (or by another runroot's lbbox) is refused instead of silently shared.
 */
#include <errno.h>
#include <net/if.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/bridge.h>
#include <stdio.h>
#include <string.h>

#include "net_internal.h"

int lb_nl_open(struct nl_sock **out, struct lb_err **err)
{
	struct nl_sock *sk = nl_socket_alloc();
	if (!sk)
		return lb_err_set(err, ENOMEM, "netlink socket");
	int r = nl_connect(sk, NETLINK_ROUTE);
	if (r < 0) {
		nl_socket_free(sk);
		return lb_err_set(err, 0, "netlink connect: %s", nl_geterror(r));
	}
	*out = sk;
	return 0;
}

static void owner_alias(const struct lb_net_cfg *cfg, char *buf, size_t len)
{
	snprintf(buf, len, "lbbox:%s", cfg->runroot);
}

int lb_link_lookup(struct nl_sock *sk, const char *name, bool *exists, bool *owned,
		   const struct lb_net_cfg *cfg, struct lb_err **err)
{
	struct rtnl_link *link = NULL;
	char alias[300];
	int r = rtnl_link_get_kernel(sk, 0, name, &link);
	*exists = *owned = false;
	if (r == -NLE_OBJ_NOTFOUND || r == -NLE_NODEV)
		return 0;
	if (r < 0)
		return lb_err_set(err, 0, "look up link %s: %s", name, nl_geterror(r));
	*exists = true;
	owner_alias(cfg, alias, sizeof(alias));
	const char *a = rtnl_link_get_ifalias(link);
	const char *type = rtnl_link_get_type(link);
	*owned = a && strcmp(a, alias) == 0 && type && strcmp(type, "bridge") == 0;
	rtnl_link_put(link);
	return 0;
}

/* A new subnet must not overlap any IPv4 network already configured on the host. */
static int check_overlap(struct nl_sock *sk, const struct lb_net_cfg *cfg, struct lb_err **err)
{
	struct nl_cache *cache = NULL;
	int r = rtnl_addr_alloc_cache(sk, &cache);
	if (r < 0)
		return lb_err_set(err, 0, "list addresses: %s", nl_geterror(r));
	r = 0;
	for (struct nl_object *o = nl_cache_get_first(cache); o && r == 0;
	     o = nl_cache_get_next(o)) {
		struct rtnl_addr *a = (struct rtnl_addr *)o;
		struct nl_addr *local = rtnl_addr_get_local(a);
		if (rtnl_addr_get_family(a) != AF_INET || !local)
			continue;
		uint32_t ip;
		memcpy(&ip, nl_addr_get_binary_addr(local), 4);
		ip = ntohl(ip);
		int p = rtnl_addr_get_prefixlen(a), m = p < cfg->prefix ? p : cfg->prefix;
		uint32_t mask = m ? ~0U << (32 - m) : 0;
		if ((ip & mask) != (cfg->subnet & mask))
			continue;
		char sub[16], ipb[16], ifn[IF_NAMESIZE] = "?";
		if_indextoname((unsigned)rtnl_addr_get_ifindex(a), ifn);
		r = lb_err_set(err, 0, "subnet %s/%u overlaps %s/%d on %s",
			       lb_ip4_str(cfg->subnet, sub), cfg->prefix, lb_ip4_str(ip, ipb), p,
			       ifn);
	}
	nl_cache_free(cache);
	return r;
}

static int nl_fail(struct lb_err **err, int r, const char *what, const char *name)
{
	if (r == -NLE_PERM)
		return lb_err_set(err, EPERM,
				  "%s %s: --network on needs CAP_NET_ADMIN on the host (rootless "
				  "networking with pasta is not implemented yet)",
				  what, name);
	return lb_err_set(err, 0, "%s %s: %s", what, name, nl_geterror(r));
}

static int bridge_configure(struct nl_sock *sk, const struct lb_net_cfg *cfg, struct lb_err **err)
{
	struct rtnl_link *link = NULL, *change = rtnl_link_alloc();
	struct rtnl_addr *addr = rtnl_addr_alloc();
	struct nl_addr *local = NULL;
	char alias[300];
	uint32_t gw = htonl(cfg->gateway);
	int r = rtnl_link_get_kernel(sk, 0, cfg->bridge, &link);
	if (r < 0 || !change || !addr)
		goto out;
	owner_alias(cfg, alias, sizeof(alias));
	rtnl_link_set_ifalias(change, alias);
	rtnl_link_set_flags(change, IFF_UP);
	if ((r = rtnl_link_change(sk, link, change, 0)) < 0)
		goto out;
	if (!(local = nl_addr_build(AF_INET, &gw, 4))) {
		r = -NLE_NOMEM;
		goto out;
	}
	nl_addr_set_prefixlen(local, cfg->prefix);
	rtnl_addr_set_ifindex(addr, rtnl_link_get_ifindex(link));
	rtnl_addr_set_local(addr, local);
	r = rtnl_addr_add(sk, addr, 0);
out:
	if (r < 0 || !change || !addr)
		nl_fail(err, r < 0 ? r : -NLE_NOMEM, "configure bridge", cfg->bridge);
	nl_addr_put(local);
	rtnl_addr_put(addr);
	rtnl_link_put(change);
	rtnl_link_put(link);
	return r < 0 || !change || !addr ? -1 : 0;
}

int lb_bridge_ensure(struct nl_sock *sk, const struct lb_net_cfg *cfg, bool *created,
		     struct lb_err **err)
{
	bool exists, owned;
	*created = false;
	if (lb_link_lookup(sk, cfg->bridge, &exists, &owned, cfg, err) < 0)
		return -1;
	if (exists && !owned)
		return lb_err_set(
		    err, 0,
		    "bridge %s already exists and is not this lbbox network's (a link of that "
		    "name is in use by something else, perhaps another lbbox with another "
		    "runroot): give this lbbox a bridge and subnet of its own "
		    "(LBBOX_NET_BRIDGE and LBBOX_NET_SUBNET, or box.lbbox.network)",
		    cfg->bridge);
	if (exists)
		return 0;
	if (check_overlap(sk, cfg, err) < 0)
		return -1;
	int r = rtnl_link_bridge_add(sk, cfg->bridge);
	if (r < 0)
		return nl_fail(err, r, "create bridge", cfg->bridge);
	*created = true;
	if (bridge_configure(sk, cfg, err) < 0) {
		lb_bridge_delete(sk, cfg->bridge, NULL);
		*created = false;
		return -1;
	}
	return 0;
}

int lb_bridge_delete(struct nl_sock *sk, const char *name, struct lb_err **err)
{
	return lb_link_delete(sk, name, err);
}
