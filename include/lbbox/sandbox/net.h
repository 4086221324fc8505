/*
 * Network mode "on": its options (parsed, from the environment, as JSON), and the administration
 * verbs (lbbox network ls / inspect / prune). The per-sandbox setup is internal to the engine.
 */
#ifndef LBBOX_NET_H
#define LBBOX_NET_H

#include <jansson.h>

#include "lbbox/base/err.h"
#include "lbbox/sandbox/sandbox.h"
#include "lbbox/sandbox/spec.h"

/* "10.0.0.5" or "10.0.0.5:8080" (IPv4 only). */
int lb_net_parse_allow_host(const char *arg, struct lb_allow_host *out, struct lb_err **err);
/* "10.89.0.0/16": a network address, prefix 8..28 (at least 14 sandbox addresses). */
int lb_net_parse_subnet(const char *arg, uint32_t *subnet, uint8_t *prefix, struct lb_err **err);
/* A bridge name: 1..15 characters of [A-Za-z0-9_-] (it also names the nftables table). */
int lb_net_parse_bridge(const char *arg, char out[16], struct lb_err **err);
/* An IPv4 nameserver address. */
int lb_net_parse_dns(const char *arg, uint32_t *out, struct lb_err **err);
/* "[IP:][HOST_PORT:]PORT[/tcp|udp]" (IP 127.0.0.1 unless given, 0.0.0.0 = every address;
 * HOST_PORT = PORT unless given). */
int lb_net_parse_publish(const char *arg, struct lb_publish *out, struct lb_err **err);
int lb_net_opts_add_publish(struct lb_net_opts *n, const char *arg, struct lb_err **err);
/* One more allowed host / nameserver on n (parsed as above; refused beyond the maximum). */
int lb_net_opts_add_allow(struct lb_net_opts *n, const char *arg, struct lb_err **err);
int lb_net_opts_add_dns(struct lb_net_opts *n, const char *arg, struct lb_err **err);
/* The network chosen by the environment, for every program of lbbox: LBBOX_NET_BRIDGE (default
 * lbbox0), LBBOX_NET_SUBNET (10.89.0.0/16), LBBOX_NFT (/usr/sbin/nft). */
int lb_net_opts_env(struct lb_net_opts *n, struct lb_err **err);
/* {"bridge", "subnet", "gateway", "dns": [...], "allow_hosts": ["A.B.C.D[:PORT]", ...]}, the
 * defaults filled in. */
json_t *lb_net_opts_json(const struct lb_net_opts *o);

/*
 * Without root, network "on" goes through pasta: fails, saying what is missing, when pasta,
 * /dev/net/tun (for this user) or nft is not there. lbbox never falls back to "host".
 */
int lb_net_pasta_check(const struct lb_net_opts *opts, struct lb_err **err);

/* Every network of the runroot: [{bridge, subnet, gateway, sandboxes}] (*out: new reference). */
int lb_net_list(const struct lb_paths *paths, json_t **out, struct lb_err **err);
/*
 * One network in detail: its state (leases of live sandboxes, allowed hosts) and the counters
 * of traffic the filter dropped. bridge NULL = the default network.
 */
int lb_net_inspect(const struct lb_paths *paths, const struct lb_net_opts *opts, json_t **out,
		   struct lb_err **err);
/*
 * Removes every network of the runroot that no live sandbox uses: its bridge, its nftables
 * table and its state; restores net.ipv4.ip_forward when lbbox enabled it and no network is
 * left. *pruned: a JSON array of the bridge names removed.
 */
int lb_net_prune(const struct lb_paths *paths, const struct lb_net_opts *opts, json_t **pruned,
		 struct lb_err **err);

#endif
