/* Network "on" options: parsing of the command-line values, and their defaults. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbbox/sandbox/net.h"
#include "lbbox/base/util.h"
#include "net_internal.h"

const char *lb_ip4_str(uint32_t addr, char buf[16])
{
	struct in_addr a = {.s_addr = htonl(addr)};
	return inet_ntop(AF_INET, &a, buf, 16);
}

/* Strict dotted quad only: inet_aton would also take "10.1" or "0x0a000001". */
int lb_ip4_parse(const char *s, uint32_t *out)
{
	struct in_addr a;
	if (inet_pton(AF_INET, s, &a) != 1)
		return -1;
	*out = ntohl(a.s_addr);
	return 0;
}

void lb_net_cfg_resolve(const struct lb_net_opts *o, const char *runroot, struct lb_net_cfg *out)
{
	memset(out, 0, sizeof(*out));
	snprintf(out->bridge, sizeof(out->bridge), "%s",
		 o->bridge[0] ? o->bridge : LB_NET_DEFAULT_BRIDGE);
	out->subnet = o->prefix ? o->subnet : LB_NET_DEFAULT_SUBNET;
	out->prefix = o->prefix ? o->prefix : LB_NET_DEFAULT_PREFIX;
	out->gateway = out->subnet + 1;
	snprintf(out->nft, sizeof(out->nft), "%s", o->nft[0] ? o->nft : LB_NET_DEFAULT_NFT);
	out->runroot = runroot;
}

int lb_net_parse_allow_host(const char *arg, struct lb_allow_host *out, struct lb_err **err)
{
	char host[64];
	uint64_t port = 0;
	const char *colon = strchr(arg, ':');
	size_t len = colon ? (size_t)(colon - arg) : strlen(arg);

	if (len == 0 || len >= sizeof(host))
		return lb_err_set(err, 0, "invalid --allow-host '%s': expected IPV4[:PORT]", arg);
	memcpy(host, arg, len);
	host[len] = '\0';
	if (lb_ip4_parse(host, &out->addr) < 0)
		return lb_err_set(err, 0, "invalid --allow-host '%s': expected IPV4[:PORT]", arg);
	if (colon && (lb_parse_u64(colon + 1, &port, NULL) < 0 || port == 0 || port > 65535))
		return lb_err_set(err, 0, "invalid --allow-host '%s': port must be 1-65535", arg);
	out->port = (uint16_t)port;
	return 0;
}

int lb_net_parse_subnet(const char *arg, uint32_t *subnet, uint8_t *prefix, struct lb_err **err)
{
	char host[64];
	uint64_t p;
	const char *slash = strchr(arg, '/');
	size_t len = slash ? (size_t)(slash - arg) : 0;
	uint32_t a;

	if (!slash || len == 0 || len >= sizeof(host))
		return lb_err_set(err, 0, "invalid subnet '%s': expected A.B.C.D/PREFIX", arg);
	memcpy(host, arg, len);
	host[len] = '\0';
	if (lb_ip4_parse(host, &a) < 0 || lb_parse_u64(slash + 1, &p, NULL) < 0)
		return lb_err_set(err, 0, "invalid subnet '%s': expected A.B.C.D/PREFIX", arg);
	/* /28 leaves 13 sandbox addresses; below /8 the pool would not fit the lease file's sanity
	 */
	if (p < 8 || p > 28)
		return lb_err_set(err, 0, "invalid subnet '%s': prefix must be 8-28", arg);
	uint32_t mask = ~0U << (32 - p);
	if (a & ~mask)
		return lb_err_set(err, 0, "invalid subnet '%s': host bits set", arg);
	*subnet = a;
	*prefix = (uint8_t)p;
	return 0;
}

int lb_net_parse_bridge(const char *arg, char out[16], struct lb_err **err)
{
	size_t n = strlen(arg);
	if (n == 0 || n > 15 ||
	    strspn(arg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != n ||
	    arg[0] == '-' || (arg[0] >= '0' && arg[0] <= '9'))
		return lb_err_set(
		    err, 0, "invalid bridge name '%s': 1-15 letters, digits, '-' or '_'", arg);
	memcpy(out, arg, n + 1);
	return 0;
}

int lb_net_parse_dns(const char *arg, uint32_t *out, struct lb_err **err)
{
	if (lb_ip4_parse(arg, out) < 0)
		return lb_err_set(err, 0, "invalid --dns '%s': expected an IPv4 address", arg);
	return 0;
}

int lb_net_opts_env(struct lb_net_opts *n, struct lb_err **err)
{
	const char *br = getenv("LBBOX_NET_BRIDGE"), *sub = getenv("LBBOX_NET_SUBNET");
	const char *nft = getenv("LBBOX_NFT");
	if (br && *br && lb_net_parse_bridge(br, n->bridge, err) < 0)
		return lb_err_wrap(err, "LBBOX_NET_BRIDGE");
	if (sub && *sub && lb_net_parse_subnet(sub, &n->subnet, &n->prefix, err) < 0)
		return lb_err_wrap(err, "LBBOX_NET_SUBNET");
	if (nft && *nft) {
		if (strlen(nft) >= sizeof(n->nft))
			return lb_err_set(err, 0, "LBBOX_NFT: path too long");
		strcpy(n->nft, nft);
	}
	return 0;
}

int lb_net_opts_add_allow(struct lb_net_opts *n, const char *arg, struct lb_err **err)
{
	if (n->n_allow >= LB_MAX_ALLOW_HOSTS)
		return lb_err_set(err, 0, "too many allowed hosts (at most %d)",
				  LB_MAX_ALLOW_HOSTS);
	if (lb_net_parse_allow_host(arg, &n->allow[n->n_allow], err) < 0)
		return -1;
	n->n_allow++;
	return 0;
}

int lb_net_opts_add_dns(struct lb_net_opts *n, const char *arg, struct lb_err **err)
{
	if (n->n_dns >= LB_MAX_DNS)
		return lb_err_set(err, 0, "too many nameservers (at most %d)", LB_MAX_DNS);
	if (lb_net_parse_dns(arg, &n->dns[n->n_dns], err) < 0)
		return -1;
	n->n_dns++;
	return 0;
}

json_t *lb_net_opts_json(const struct lb_net_opts *o)
{
	struct lb_net_cfg c;
	char a[16], sub[24];
	json_t *dns = json_array(), *allow = json_array();
	lb_net_cfg_resolve(o, NULL, &c);
	snprintf(sub, sizeof(sub), "%s/%u", lb_ip4_str(c.subnet, a), (unsigned)c.prefix);
	for (size_t i = 0; i < o->n_dns; i++)
		json_array_append_new(dns, json_string(lb_ip4_str(o->dns[i], a)));
	for (size_t i = 0; i < o->n_allow; i++) {
		char item[24];
		lb_ip4_str(o->allow[i].addr, a);
		if (o->allow[i].port)
			snprintf(item, sizeof(item), "%s:%u", a, (unsigned)o->allow[i].port);
		else
			snprintf(item, sizeof(item), "%s", a);
		json_array_append_new(allow, json_string(item));
	}
	return json_pack("{s:s, s:s, s:s, s:o, s:o}", "bridge", c.bridge, "subnet", sub, "gateway",
			 lb_ip4_str(c.gateway, a), "dns", dns, "allow_hosts", allow);
}
