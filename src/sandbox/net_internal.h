/* Private interfaces between the network "on" files (src/sandbox/net_*.c). */
#ifndef LBBOX_NET_INTERNAL_H
#define LBBOX_NET_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "lbbox/base/err.h"
#include "lbbox/sandbox/sandbox.h"
#include "lbbox/sandbox/spec.h"

#define LB_NET_DEFAULT_BRIDGE "lbbox0"
#define LB_NET_DEFAULT_SUBNET 0x0a590000U /* 10.89.0.0 */
#define LB_NET_DEFAULT_PREFIX 16
#define LB_NET_DEFAULT_NFT    "/usr/sbin/nft"

/* One network: the options resolved to their defaults. Addresses in host byte order. */
struct lb_net_cfg {
	char bridge[16];
	uint32_t subnet, gateway;
	uint8_t prefix;
	char nft[256];
	const char *runroot;
};

void lb_net_cfg_resolve(const struct lb_net_opts *o, const char *runroot, struct lb_net_cfg *out);
/* "a.b.c.d" of a host-order address into buf (16 bytes). */
const char *lb_ip4_str(uint32_t addr, char buf[16]);
int lb_ip4_parse(const char *s, uint32_t *out);

/* net_ipam.c: <runroot>/net/<bridge>.json, read and written under an flock of the runroot. */
int lb_net_lock(const char *runroot, int *fd, struct lb_err **err);
/* NULL (and 0) when the network has no state yet. */
int lb_net_state_load(const struct lb_net_cfg *cfg, json_t **out, struct lb_err **err);
int lb_net_state_save(const struct lb_net_cfg *cfg, json_t *st, struct lb_err **err);
int lb_net_state_remove(const struct lb_net_cfg *cfg, struct lb_err **err);
json_t *lb_net_state_new(const struct lb_net_cfg *cfg);
/* Drops the leases of sandboxes whose pid 1 is gone; true when one of them had allow rules. */
bool lb_ipam_prune_dead(json_t *st, bool *removed_any);
/* Picks a free address (round robin, so a just-freed address and its ARP entry rest). */
int lb_ipam_alloc(const struct lb_net_cfg *cfg, json_t *st, uint32_t *addr, struct lb_err **err);
void lb_ipam_add_lease(json_t *st, uint32_t addr, const char *id, pid_t pid,
		       const struct lb_net_opts *o);
/* Removes the lease of addr; true when it had allow rules. */
bool lb_ipam_release(json_t *st, uint32_t addr);
size_t lb_ipam_count(json_t *st);
bool lb_ipam_has_allows(json_t *st);

/* net_bridge.c (libnl-route-3). */
struct nl_sock;
int lb_nl_open(struct nl_sock **out, struct lb_err **err);
/* Creates the bridge, or checks that the existing one is this network's. */
int lb_bridge_ensure(struct nl_sock *sk, const struct lb_net_cfg *cfg, bool *created,
		     struct lb_err **err);
int lb_bridge_delete(struct nl_sock *sk, const char *name, struct lb_err **err);
/* Whether a link of that name exists; owned: its alias marks it as this runroot's network. */
int lb_link_lookup(struct nl_sock *sk, const char *name, bool *exists, bool *owned,
		   const struct lb_net_cfg *cfg, struct lb_err **err);

/* net_veth.c */
int lb_veth_create(struct nl_sock *sk, const struct lb_net_cfg *cfg, const char *host_if, pid_t pid,
		   uint32_t addr, struct lb_err **err);
int lb_link_delete(struct nl_sock *sk, const char *name, struct lb_err **err);

/* What network "on" never reaches unless --allow-host names it (the resolvers on port 53 aside). */
#define LB_NET_PRIVATE_RANGES                                                                      \
	"{ 0.0.0.0/8, 10.0.0.0/8, 100.64.0.0/10, 127.0.0.0/8, 172.16.0.0/12, 192.0.0.0/24, "       \
	"192.168.0.0/16, 198.18.0.0/15, 224.0.0.0/3 }"
#define LB_NFT_REJECT "reject with icmpx type admin-prohibited"

/* net_nft.c: the table "inet <bridge>", written with the nft CLI. */
int lb_nft_check(const struct lb_net_cfg *cfg, struct lb_err **err);
int lb_nft_table_exists(const char *table, bool *exists, struct lb_err **err);
int lb_nft_apply_table(const struct lb_net_cfg *cfg, json_t *dns, struct lb_err **err);
/* Replaces the elements of the resolvers' set only (counters and allow sets stay). */
int lb_nft_set_dns(const struct lb_net_cfg *cfg, json_t *dns, struct lb_err **err);
/* Rewrites the allow sets and the published ports' maps from the leases in st (one nft
 * transaction), and route_localnet with them. */
int lb_nft_sync_allow(const struct lb_net_cfg *cfg, json_t *st, struct lb_err **err);
int lb_nft_delete_table(const struct lb_net_cfg *cfg, struct lb_err **err);
/* Applies a ruleset (nft -f -) inside the user and network namespaces of the pidfd nsfd. */
int lb_nft_run_in(int nsfd, const struct lb_net_cfg *cfg, const char *ruleset, struct lb_err **err);
/* The named counters of table (in the namespaces of the pidfd nsfd when >= 0). */
int lb_nft_counters_in(int nsfd, const struct lb_net_cfg *cfg, const char *table, json_t **out,
		       struct lb_err **err);

/* net_publish.c: -p as root, DNAT maps in the table, written from the leases. */
json_t *lb_publish_json(const struct lb_net_opts *o);
/* Refuses ports published twice, by another live lease, or in use by a host process. */
int lb_publish_check(json_t *st, const struct lb_net_opts *o, struct lb_err **err);
void lb_publish_put_elements(FILE *f, const struct lb_net_cfg *cfg, json_t *lease, bool *loopback);
int lb_publish_route_localnet(const struct lb_net_cfg *cfg, bool on, struct lb_err **err);
/* The table's layout; a network whose state records another is given the table anew. */
#define LB_NFT_TABLE_VERSION 2

/* net_pasta_admin.c: lbbox network ls / inspect without root (pasta sandboxes). */
int lb_net_pasta_list(const struct lb_paths *paths, json_t **out, struct lb_err **err);
int lb_net_pasta_inspect(const struct lb_paths *paths, const struct lb_net_opts *opts, json_t **out,
			 struct lb_err **err);

/* net_dns.c: the host's upstream resolvers (never a 127.x stub); at most max. */
size_t lb_dns_host_resolvers(uint32_t *out, size_t max);

/* net_forward.c: net.ipv4.ip_forward, the one host sysctl network "on" needs. */
int lb_ip_forward_enable(int *was, struct lb_err **err);
void lb_ip_forward_restore(int was);

#endif
