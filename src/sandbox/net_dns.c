/*
 * The resolvers a network "on" sandbox uses: the host's upstream ones. A 127.x stub (systemd-
 * resolved's 127.0.0.53, a local dnsmasq) answers on the host's loopback, which the sandbox's
 * netns cannot reach; with systemd-resolved the real upstreams are in its own resolv.conf.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"
#include "net_internal.h"

#define RESOLVED_UPSTREAM "/run/systemd/resolve/resolv.conf"

/* IPv4 nameservers of one file; *stub set when a loopback one was skipped. */
static size_t read_resolvers(const char *path, uint32_t *out, size_t max, bool *stub)
{
	_cleanup_free_ char *text = NULL;
	size_t n = 0;
	if (lb_read_file(path, 65536, &text, NULL, NULL) < 0)
		return 0;
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line && n < max;
	     line = strtok_r(NULL, "\n", &save)) {
		char addr[64];
		uint32_t a;
		if (sscanf(line, " nameserver %63s", addr) != 1 || lb_ip4_parse(addr, &a) < 0)
			continue;
		if ((a >> 24) == 127) {
			*stub = true;
			continue;
		}
		out[n++] = a;
	}
	return n;
}

size_t lb_dns_host_resolvers(uint32_t *out, size_t max)
{
	bool stub = false;
	size_t n = read_resolvers("/etc/resolv.conf", out, max, &stub);
	if (n == 0 && stub)
		n = read_resolvers(RESOLVED_UPSTREAM, out, max, &stub);
	return n;
}
