/*
 * Network "on", parent side. After pid 1 is cloned into its new network namespace and before
 * it is let go, lbbox (under the runroot's network lock): makes sure the network exists
 * (bridge, nftables table, ip_forward), leases an address, and creates the veth pair with the
 * peer already inside pid 1's namespace. pid 1 then configures eth0 itself (net_inside.c). Teardown
 * frees the lease; the veth pair is not deleted by lbbox (16-20 ms here) but goes with the
 * sandbox's network namespace, a moment after pid 1 is reaped. A lease of a sandbox whose
 * lbbox was killed is freed by the next lbbox once its pid 1 is gone.
 */
#include <errno.h>
#include <netlink/netlink.h>
#include <stdio.h>
#include <string.h>

#include "lbbox/base/cleanup.h"
#include "engine.h"
#include "net_internal.h"

static void nl_freep(struct nl_sock **sk)
{
	if (*sk)
		nl_socket_free(*sk);
}

#define _cleanup_nl_ _cleanup_(nl_freep)

static json_t *resolvers_json(void)
{
	uint32_t dns[LB_MAX_DNS];
	size_t n = lb_dns_host_resolvers(dns, LB_MAX_DNS);
	json_t *a = json_array();
	char ip[16];
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(lb_ip4_str(dns[i], ip)));
	return a;
}

static int check_subnet(const struct lb_net_cfg *cfg, json_t *st, struct lb_err **err)
{
	char sub[16], cidr[24];
	snprintf(cidr, sizeof(cidr), "%s/%u", lb_ip4_str(cfg->subnet, sub), cfg->prefix);
	const char *have = json_string_value(json_object_get(st, "subnet")) ?: "?";
	if (strcmp(have, cidr) != 0)
		return lb_err_set(
		    err, 0,
		    "network %s exists with subnet %s, not %s (remove it first with lbbox network prune)",
		    cfg->bridge, have, cidr);
	return 0;
}

/* A network seen for the first time: bridge, table, forwarding; undone on failure. */
static int network_create(struct nl_sock *sk, const struct lb_net_cfg *cfg, json_t **out,
			  struct lb_err **err)
{
	bool created;
	int was;
	json_t *st = lb_net_state_new(cfg);
	if (!st)
		return lb_err_set(err, ENOMEM, "network state");
	json_object_set_new(st, "dns", resolvers_json());
	if (lb_bridge_ensure(sk, cfg, &created, err) < 0)
		goto fail;
	if (lb_nft_apply_table(cfg, json_object_get(st, "dns"), err) < 0 ||
	    lb_ip_forward_enable(&was, err) < 0) {
		lb_nft_delete_table(cfg, NULL);
		if (created)
			lb_bridge_delete(sk, cfg->bridge, NULL);
		goto fail;
	}
	json_object_set_new(st, "ip_forward_was", json_integer(was));
	*out = st;
	return 0;
fail:
	json_decref(st);
	return -1;
}

/*
 * A known network: the bridge and the table are put back if someone removed them (a sandbox
 * must never run without its filter), and the resolvers' set follows the host's resolv.conf.
 */
static int network_check(struct nl_sock *sk, const struct lb_net_cfg *cfg, json_t *st,
			 struct lb_err **err)
{
	bool created, exists;
	json_t *dns = resolvers_json();
	bool dns_changed = !json_equal(dns, json_object_get(st, "dns"));
	json_object_set_new(st, "dns", dns);
	if (check_subnet(cfg, st, err) < 0 || lb_bridge_ensure(sk, cfg, &created, err) < 0 ||
	    lb_nft_table_exists(cfg->bridge, &exists, err) < 0)
		return -1;
	/* a table an older lbbox wrote lacks what this one relies on */
	bool current = json_integer_value(json_object_get(st, "table")) == LB_NFT_TABLE_VERSION;
	if (exists && current)
		return dns_changed ? lb_nft_set_dns(cfg, dns, err) : 0;
	/* a recreated table has empty allow sets: refill them from the live leases */
	if (lb_nft_apply_table(cfg, dns, err) < 0)
		return -1;
	json_object_set_new(st, "table", json_integer(LB_NFT_TABLE_VERSION));
	return lb_nft_sync_allow(cfg, st, err);
}

static int network_ensure(struct nl_sock *sk, const struct lb_net_cfg *cfg, json_t **st,
			  struct lb_err **err)
{
	if (lb_net_state_load(cfg, st, err) < 0)
		return -1;
	if (!*st)
		return network_create(sk, cfg, st, err);
	return network_check(sk, cfg, *st, err);
}

static int lease_and_link(struct nl_sock *sk, const struct lb_net_cfg *cfg,
			  const struct lb_spec *spec, const char *id, pid_t pid, json_t *st,
			  struct lb_net_handle *h, struct lb_err **err)
{
	bool removed, dead_allow = lb_ipam_prune_dead(st, &removed);
	uint32_t addr;
	const struct lb_net_opts *o = &spec->net_opts;
	if (lb_publish_check(st, o, err) < 0 || lb_ipam_alloc(cfg, st, &addr, err) < 0) {
		if (removed)
			lb_net_state_save(cfg, st, NULL);
		return -1;
	}
	lb_ipam_add_lease(st, addr, id, pid, o);
	if (lb_net_state_save(cfg, st, err) < 0)
		return -1;
	h->leased = true;
	h->lease =
	    (struct lb_net_lease){.addr = addr, .gateway = cfg->gateway, .prefix = cfg->prefix};
	snprintf(h->host_if, sizeof(h->host_if), "lbbox-%.8s", id);
	if (lb_veth_create(sk, cfg, h->host_if, pid, addr, err) < 0) {
		h->host_if[0] = '\0';
		return -1;
	}
	h->has_allow = o->n_allow > 0 || o->n_dns > 0 || o->n_publish > 0;
	if (h->has_allow || dead_allow)
		return lb_nft_sync_allow(cfg, st, err);
	return 0;
}

int lb_net_on_setup(const struct lb_spec *spec, const char *runroot, const char *id, pid_t pid,
		    struct lb_net_handle *h, struct lb_err **err)
{
	struct lb_net_cfg cfg;
	_cleanup_close_ int lock = -1;
	_cleanup_nl_ struct nl_sock *sk = NULL;
	json_auto_t *st = NULL;

	lb_net_cfg_resolve(&spec->net_opts, runroot, &cfg);
	if (lb_nft_check(&cfg, err) < 0 || lb_net_lock(runroot, &lock, err) < 0 ||
	    lb_nl_open(&sk, err) < 0 || network_ensure(sk, &cfg, &st, err) < 0)
		return -1;
	return lease_and_link(sk, &cfg, spec, id, pid, st, h, err);
}

static void release_lease(const struct lb_net_cfg *cfg, struct lb_net_handle *h)
{
	_cleanup_close_ int lock = -1;
	json_auto_t *st = NULL;
	if (lb_net_lock(cfg->runroot, &lock, NULL) < 0 || lb_net_state_load(cfg, &st, NULL) < 0 ||
	    !st)
		return;
	bool allow = lb_ipam_release(st, h->lease.addr);
	lb_net_state_save(cfg, st, NULL);
	if (allow)
		lb_nft_sync_allow(cfg, st, NULL);
}

/*
 * The veth pair is not deleted here: run_release has reaped pid 1, so the sandbox's network
 * namespace is dying and the kernel removes both ends with it, in the background. An explicit
 * RTM_DELLINK would wait for the same RCU grace periods in our process: measured at 16-20 ms,
 * five times the rest of network "on" together. Addresses are handed out round robin and eth0's
 * MAC follows its address, so a lingering pair never meets a new sandbox with its address.
 */
void lb_net_on_teardown(const struct lb_spec *spec, const char *runroot, struct lb_net_handle *h)
{
	struct lb_net_cfg cfg;
	lb_net_cfg_resolve(&spec->net_opts, runroot, &cfg);
	h->host_if[0] = '\0';
	if (h->leased)
		release_lease(&cfg, h);
	h->leased = false;
}
