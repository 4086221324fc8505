/*
 * The sandbox's link: one veth pair made by one netlink request, the host end enslaved to the
 * bridge and up, the peer created directly inside pid 1's network namespace as eth0 with
 * ifindex 2 (lo is 1), so pid 1 configures it without any lookup. The bridge port is then
 * marked "isolated": isolated ports cannot talk to each other at layer 2, which keeps sandboxes
 * apart whether or not br_netfilter passes bridged traffic through the nftables filter.
 */
#include <errno.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netlink/msg.h>
#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>
#include <string.h>

#include "net_internal.h"

#define SANDBOX_IFINDEX 2

static int isolate_port(struct nl_sock *sk, const char *host_if, struct lb_err **err)
{
	struct ifinfomsg ifi = {.ifi_family = AF_BRIDGE};
	ifi.ifi_index = (int)if_nametoindex(host_if);
	if (ifi.ifi_index == 0)
		return lb_err_set(err, errno, "look up %s", host_if);
	struct nl_msg *msg = nlmsg_alloc_simple(RTM_SETLINK, NLM_F_REQUEST | NLM_F_ACK);
	struct nlattr *info;
	int r = -NLE_NOMEM;
	if (!msg || nlmsg_append(msg, &ifi, sizeof(ifi), NLMSG_ALIGNTO) < 0 ||
	    !(info = nla_nest_start(msg, IFLA_PROTINFO | NLA_F_NESTED)) ||
	    nla_put_u8(msg, IFLA_BRPORT_ISOLATED, 1) < 0)
		goto out;
	nla_nest_end(msg, info);
	if ((r = nl_send_auto(sk, msg)) >= 0)
		r = nl_wait_for_ack(sk);
out:
	nlmsg_free(msg);
	if (r < 0)
		return lb_err_set(err, 0, "isolate bridge port %s: %s", host_if, nl_geterror(r));
	return 0;
}

/* 0a:58:<address>, as CNI's bridge plugin: an address reused later keeps its MAC. */
static struct nl_addr *mac_of(uint32_t addr)
{
	unsigned char mac[6] = {
	    0x0a, 0x58, addr >> 24, (addr >> 16) & 0xff, (addr >> 8) & 0xff, addr & 0xff};
	return nl_addr_build(AF_LLC, mac, sizeof(mac));
}

int lb_veth_create(struct nl_sock *sk, const struct lb_net_cfg *cfg, const char *host_if, pid_t pid,
		   uint32_t addr, struct lb_err **err)
{
	unsigned master = if_nametoindex(cfg->bridge);
	if (master == 0)
		return lb_err_set(err, errno, "look up bridge %s", cfg->bridge);
	struct rtnl_link *veth = rtnl_link_veth_alloc();
	struct nl_addr *mac = mac_of(addr);
	int r = -NLE_NOMEM;
	if (!veth || !mac)
		goto out;
	struct rtnl_link *peer = rtnl_link_veth_get_peer(veth);
	rtnl_link_set_name(veth, host_if);
	rtnl_link_set_master(veth, (int)master);
	rtnl_link_set_flags(veth, IFF_UP);
	rtnl_link_set_name(peer, "eth0");
	rtnl_link_set_ifindex(peer, SANDBOX_IFINDEX);
	rtnl_link_set_addr(peer, mac);
	rtnl_link_set_ns_pid(peer, pid);
	rtnl_link_put(peer);
	r = rtnl_link_add(sk, veth, NLM_F_CREATE | NLM_F_EXCL);
out:
	nl_addr_put(mac);
	rtnl_link_put(veth);
	if (r < 0)
		return lb_err_set(err, 0, "create veth %s: %s", host_if, nl_geterror(r));
	if (isolate_port(sk, host_if, err) < 0) {
		lb_link_delete(sk, host_if, NULL);
		return -1;
	}
	return 0;
}

int lb_link_delete(struct nl_sock *sk, const char *name, struct lb_err **err)
{
	struct rtnl_link *link = rtnl_link_alloc();
	if (!link)
		return lb_err_set(err, ENOMEM, "delete %s", name);
	rtnl_link_set_name(link, name);
	int r = rtnl_link_delete(sk, link);
	rtnl_link_put(link);
	/* gone already: its namespace died with the sandbox, which takes the pair with it */
	if (r < 0 && r != -NLE_OBJ_NOTFOUND && r != -NLE_NODEV)
		return lb_err_set(err, 0, "delete link %s: %s", name, nl_geterror(r));
	return 0;
}
