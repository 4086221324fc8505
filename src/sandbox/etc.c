/* /etc files the sandbox gets from lbbox: hosts, resolv.conf, hostname, and for the host image
 * a passwd/group naming only root, nobody and the sandbox user (never the host's accounts). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"
#include "engine.h"
#include "net_internal.h"

static int write_etc(const char *statedir, const char *name, const char *content,
		     struct lb_err **err)
{
	char path[LB_PATH_BUF];
	snprintf(path, sizeof(path), "%s/etc/%s", statedir, name);
	return lb_write_fileat(AT_FDCWD, path, content, strlen(content), O_CREAT | O_TRUNC, 0644,
			       err);
}

/*
 * Which of the host's resolv.conf lines the sandbox keeps: all with the host's network; without
 * loopback resolvers otherwise (they cannot answer from another netns); with "on", no
 * nameserver line at all, since those come from --dns or the host's upstream list instead.
 */
static bool keep_line(const struct lb_spec *spec, const char *line)
{
	if (spec->net == LB_NET_ON)
		return strncmp(line, "nameserver", 10) != 0;
	return spec->net == LB_NET_HOST || strncmp(line, "nameserver 127.", 15) != 0;
}

/* Network "on": --dns servers, or the host's upstream resolvers (net_dns.c knows where
 * systemd-resolved keeps them). */
static void write_nameservers(FILE *f, const struct lb_spec *spec)
{
	uint32_t dns[LB_MAX_DNS];
	size_t n = spec->net_opts.n_dns;
	char ip[16];
	if (n)
		memcpy(dns, spec->net_opts.dns, n * sizeof(dns[0]));
	else
		n = lb_dns_host_resolvers(dns, LB_MAX_DNS);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "nameserver %s\n", lb_ip4_str(dns[i], ip));
}

static char *resolv_conf(const struct lb_spec *spec)
{
	_cleanup_free_ char *host = NULL;
	char *out = NULL;
	size_t len = 0;
	_cleanup_fclose_ FILE *f = open_memstream(&out, &len);
	if (!f)
		return NULL;
	if (spec->net == LB_NET_ON)
		write_nameservers(f, spec);
	if (lb_read_file("/etc/resolv.conf", 65536, &host, NULL, NULL) == 0)
		for (char *line = strtok(host, "\n"); line; line = strtok(NULL, "\n"))
			if (keep_line(spec, line))
				fprintf(f, "%s\n", line);
	fclose(f);
	f = NULL;
	return out;
}

static int write_users(const struct lb_spec *spec, const char *statedir, struct lb_err **err)
{
	char passwd[512], group[512];
	int n = snprintf(passwd, sizeof(passwd),
			 "root:x:0:0:root:/root:/bin/sh\n"
			 "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n");
	int g = snprintf(group, sizeof(group), "root:x:0:\nnogroup:x:65534:\n");
	if (spec->uid != 0 && spec->uid != 65534)
		snprintf(passwd + n, sizeof(passwd) - (size_t)n,
			 "sandbox:x:%u:%u:sandbox:/tmp:/bin/sh\n", spec->uid, spec->gid);
	if (spec->gid != 0 && spec->gid != 65534)
		snprintf(group + g, sizeof(group) - (size_t)g, "sandbox:x:%u:\n", spec->gid);
	if (write_etc(statedir, "passwd", passwd, err) < 0)
		return -1;
	return write_etc(statedir, "group", group, err);
}

static void hosts_text(const struct lb_spec *spec, const struct lb_net_lease *lease, char *out,
		       size_t size)
{
	char self[INET_ADDRSTRLEN] = "127.0.1.1";
	/* network "on": the hostname names the sandbox's own address, as docker and podman do */
	struct in_addr a = {.s_addr = htonl(lease ? lease->addr : 0)};
	if (spec->net == LB_NET_ON && lease && lease->addr)
		inet_ntop(AF_INET, &a, self, sizeof(self));
	snprintf(out, size,
		 "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n%s\t%s\n", self,
		 spec->hostname ? spec->hostname : "lbbox");
}

int lb_etc_generate(const struct lb_spec *spec, const struct lb_net_lease *lease,
		    const char *statedir, struct lb_err **err)
{
	char path[LB_PATH_BUF], hosts[512], hostname[300];
	const char *name = spec->hostname ? spec->hostname : "lbbox";

	snprintf(path, sizeof(path), "%s/etc", statedir);
	if (mkdir(path, 0755) < 0)
		return lb_err_set(err, errno, "mkdir %s", path);
	hosts_text(spec, lease, hosts, sizeof(hosts));
	snprintf(hostname, sizeof(hostname), "%s\n", name);
	_cleanup_free_ char *resolv = resolv_conf(spec);
	if (write_etc(statedir, "hosts", hosts, err) < 0 ||
	    write_etc(statedir, "hostname", hostname, err) < 0 ||
	    write_etc(statedir, "resolv.conf", resolv ? resolv : "", err) < 0)
		return -1;
	return lb_spec_is_host_image(spec) ? write_users(spec, statedir, err) : 0;
}

int lb_etc_hosts_update(int scratch, const struct lb_spec *spec, const struct lb_net_lease *lease,
			struct lb_err **err)
{
	char hosts[512];
	hosts_text(spec, lease, hosts, sizeof(hosts));
	return lb_write_fileat(scratch, "etc/hosts", hosts, strlen(hosts), O_TRUNC | O_NOFOLLOW, 0,
			       err);
}
