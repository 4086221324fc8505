/*
 * Published ports (-p) of network "on", as root: each lease records its ports, and the table's
 * DNAT maps are rewritten from the live leases (lb_nft_sync_allow), so a port goes with its
 * sandbox on every exit path, a killed lbbox's included (the next one prunes the dead lease).
 *
 * A port on 127.0.0.1 (the default) or on every address (0.0.0.0) is reached from the host's
 * own loopback: after DNAT the packet leaves through the bridge with source 127.0.0.1, which
 * the kernel allows only with route_localnet on the bridge; it is on only while such a port is
 * published, and the table drops anything from the bridge addressed to 127.0.0.0/8 meanwhile
 * (a sandbox must not reach the host's loopback services through it, CVE-2020-8558).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"
#include "lbbox/sandbox/net.h"
#include "net_internal.h"

#define LOOPBACK 0x7f000001U

static int parse_port(const char *s, size_t len, uint16_t *out)
{
	char buf[8];
	uint64_t v;
	if (len == 0 || len >= sizeof(buf))
		return -1;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (lb_parse_u64(buf, &v, NULL) < 0 || v == 0 || v > 65535)
		return -1;
	*out = (uint16_t)v;
	return 0;
}

/* "[IP:][HOST_PORT:]PORT" with the protocol already cut off. */
static int parse_ports(char *s, struct lb_publish *out)
{
	char *last = strrchr(s, ':');
	if (!last)
		return parse_port(s, strlen(s), &out->port) < 0 ? -1
								: (out->host_port = out->port, 0);
	if (parse_port(last + 1, strlen(last + 1), &out->port) < 0)
		return -1;
	*last = '\0';
	char *mid = strrchr(s, ':');
	char *hp = mid ? mid + 1 : s;
	if (parse_port(hp, strlen(hp), &out->host_port) < 0)
		return -1;
	if (!mid)
		return 0;
	*mid = '\0';
	return lb_ip4_parse(s, &out->host_addr);
}

int lb_net_parse_publish(const char *arg, struct lb_publish *out, struct lb_err **err)
{
	char buf[64];
	if (strlen(arg) >= sizeof(buf))
		return lb_err_set(err, 0, "invalid --publish '%s'", arg);
	snprintf(buf, sizeof(buf), "%s", arg);
	*out = (struct lb_publish){.host_addr = LOOPBACK};
	char *proto = strchr(buf, '/');
	if (proto) {
		*proto++ = '\0';
		if (strcmp(proto, "tcp") && strcmp(proto, "udp"))
			return lb_err_set(err, 0, "invalid --publish '%s': protocol tcp or udp",
					  arg);
		out->udp = !strcmp(proto, "udp");
	}
	if (parse_ports(buf, out) < 0)
		return lb_err_set(
		    err, 0,
		    "invalid --publish '%s': expected [IP:][HOST_PORT:]PORT[/tcp|udp] "
		    "(IPv4, ports 1-65535)",
		    arg);
	return 0;
}

int lb_net_opts_add_publish(struct lb_net_opts *n, const char *arg, struct lb_err **err)
{
	if (n->n_publish >= LB_MAX_PUBLISH)
		return lb_err_set(err, 0, "too many published ports (at most %d)", LB_MAX_PUBLISH);
	if (lb_net_parse_publish(arg, &n->publish[n->n_publish], err) < 0)
		return -1;
	n->n_publish++;
	return 0;
}

/* A lease's record of one port: "tcp 127.0.0.1 8080 80". */
json_t *lb_publish_json(const struct lb_net_opts *o)
{
	json_t *a = json_array();
	char ip[16], s[64];
	for (size_t i = 0; a && i < o->n_publish; i++) {
		const struct lb_publish *p = &o->publish[i];
		snprintf(s, sizeof(s), "%s %s %u %u", p->udp ? "udp" : "tcp",
			 lb_ip4_str(p->host_addr, ip), p->host_port, p->port);
		json_array_append_new(a, json_string(s));
	}
	return a;
}

static int record_parse(const char *s, struct lb_publish *p)
{
	char proto[4], ip[16];
	unsigned hp, cp;
	if (!s || sscanf(s, "%3s %15s %u %u", proto, ip, &hp, &cp) != 4 ||
	    lb_ip4_parse(ip, &p->host_addr) < 0 || hp > 65535 || cp > 65535)
		return -1;
	p->udp = !strcmp(proto, "udp");
	p->host_port = (uint16_t)hp;
	p->port = (uint16_t)cp;
	return 0;
}

static bool same_port(const struct lb_publish *a, const struct lb_publish *b)
{
	return a->udp == b->udp && a->host_port == b->host_port &&
	       (a->host_addr == b->host_addr || !a->host_addr || !b->host_addr);
}

/* The port must be free on one of this host's own addresses: a host process holding it would
 * lose it to the DNAT silently, and a foreign address would divert the host's own outgoing
 * traffic to it (the output hook) into the sandbox. */
static int host_port_check(const struct lb_publish *p, const char *ip, struct lb_err **err)
{
	const char *proto = p->udp ? "udp" : "tcp";
	uint32_t a = p->host_addr;
	if ((a >> 28) == 0xe || a == 0xffffffffU)
		return lb_err_set(err, 0, "--publish %s: not a unicast address", ip);
	_cleanup_close_ int fd =
	    socket(AF_INET, (p->udp ? SOCK_DGRAM : SOCK_STREAM) | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {
	    .sin_family = AF_INET, .sin_port = htons(p->host_port), .sin_addr.s_addr = htonl(a)};
	if (fd < 0)
		return lb_err_set(err, errno, "socket");
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		return 0;
	if (errno == EADDRINUSE)
		return lb_err_set(err, 0, "port %s:%u/%s is in use on the host", ip, p->host_port,
				  proto);
	if (errno == EADDRNOTAVAIL)
		return lb_err_set(err, 0, "--publish %s: not an address of this host", ip);
	return lb_err_set(err, errno, "port %s:%u/%s", ip, p->host_port, proto);
}

int lb_publish_check(json_t *st, const struct lb_net_opts *o, struct lb_err **err)
{
	size_t i, k;
	json_t *l, *v;
	char ip[16];
	for (size_t n = 0; n < o->n_publish; n++) {
		const struct lb_publish *p = &o->publish[n];
		const char *proto = p->udp ? "udp" : "tcp";
		lb_ip4_str(p->host_addr, ip);
		for (size_t m = 0; m < n; m++)
			if (same_port(p, &o->publish[m]))
				return lb_err_set(err, 0, "port %s:%u/%s is published twice", ip,
						  p->host_port, proto);
		json_array_foreach(json_object_get(st, "leases"), i, l)
		{
			json_array_foreach(json_object_get(l, "publish"), k, v)
			{
				struct lb_publish q;
				if (record_parse(json_string_value(v), &q) == 0 && same_port(p, &q))
					return lb_err_set(
					    err, 0,
					    "port %s:%u/%s is already published by sandbox %s", ip,
					    p->host_port, proto,
					    json_string_value(json_object_get(l, "id")) ?: "?");
			}
		}
		if (host_port_check(p, ip, err) < 0)
			return -1;
	}
	return 0;
}

/* The DNAT map elements of one lease; *loopback: a port the host's loopback reaches. */
void lb_publish_put_elements(FILE *f, const struct lb_net_cfg *cfg, json_t *lease, bool *loopback)
{
	const char *addr = json_string_value(json_object_get(lease, "address"));
	size_t i;
	json_t *v;
	char ip[16], sb[16];
	uint32_t a;
	/* the state file's text never goes into the ruleset unparsed */
	if (!addr || lb_ip4_parse(addr, &a) < 0)
		return;
	lb_ip4_str(a, sb);
	json_array_foreach(json_object_get(lease, "publish"), i, v)
	{
		struct lb_publish p;
		if (record_parse(json_string_value(v), &p) < 0 || !p.port || !p.host_port)
			continue;
		const char *proto = p.udp ? "udp" : "tcp";
		*loopback |= !p.host_addr || (p.host_addr >> 24) == 127;
		if (p.host_addr)
			fprintf(f, "add element inet %s publish_addr { %s . %s . %u : %s . %u }\n",
				cfg->bridge, lb_ip4_str(p.host_addr, ip), proto, p.host_port, sb,
				p.port);
		else
			fprintf(f, "add element inet %s publish_any { %s . %u : %s . %u }\n",
				cfg->bridge, proto, p.host_port, sb, p.port);
	}
}

int lb_publish_route_localnet(const struct lb_net_cfg *cfg, bool on, struct lb_err **err)
{
	char path[96];
	snprintf(path, sizeof(path), "/proc/sys/net/ipv4/conf/%s/route_localnet", cfg->bridge);
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, on ? "1" : "0", 1) != 1)
		return lb_err_set(err, errno, "%s", path);
	return 0;
}
