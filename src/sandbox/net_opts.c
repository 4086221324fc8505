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
