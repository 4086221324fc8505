/*
 * The filter and NAT of a network "on": one nftables table "inet <bridge>", written with the
 * nft command line, a whole ruleset piped on stdin so each change is one atomic transaction.
 * Why the CLI and not libnftables: nft runs only when a network is created or pruned and when
 * a sandbox with --allow-host/--dns starts or ends, never on the common path; lbbox's own
 * binary stays free of libnftables (and its static linking), and a missing nftables is a clean
 * "not installed" error. The existence check on every start uses a netfilter netlink request
 * instead (~50 us), so a table flushed by someone else is put back before a sandbox relies on it.
 *
 * What the table enforces for traffic coming from the bridge:
 *   - to the host itself (any of its addresses): rejected, except replies and allowed hosts;
 *   - to other sandboxes, 169.254.0.0/16 (cloud metadata), the private and special ranges and
 *     any IPv6 (fd00:ec2::254 included): rejected, except --allow-host and the resolvers;
 *   - everything else: accepted and masqueraded. Each reject counts in a named counter.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"
#include "net_internal.h"

#define NFT_OUT_MAX (1 << 20)
/* from <linux/netfilter.h>, which clashes with <netinet/in.h> (pulled in by libnl) */
#define LB_NFPROTO_INET 1

static const char *const counters[] = {"host",	  "sandboxes", "metadata", "link_local",
				       "private", "ipv6",      "inbound"};

int lb_nft_check(const struct lb_net_cfg *cfg, struct lb_err **err)
{
	if (access(cfg->nft, X_OK) < 0)
		return lb_err_set(
		    err, 0,
		    "nftables is not installed (%s: %s); --network on needs it for NAT and filtering (apt-get install nftables)",
		    cfg->nft, strerror(errno));
	return 0;
}

/* Reads fd to EOF into a NUL-terminated buffer of at most max bytes. */
static char *drain(int fd, size_t max)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);
	ssize_t n;
	while (buf && (n = read(fd, buf + len, cap - len - 1)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		len += (size_t)n;
		if (cap - len < 1024 && cap < max) {
			char *nb = realloc(buf, cap * 2);
			if (!nb)
				break;
			buf = nb, cap *= 2;
		} else if (cap - len < 2) {
			len = 0; /* too long: not ours to parse */
		}
	}
	if (buf)
		buf[len] = '\0';
	return buf;
}

/*
 * Runs nft ARGS with input on stdin; stdout into *out (when out), stderr into the error. With
 * nsfd (a pidfd) >= 0, nft runs in that process's user and network namespaces.
 */
static int run_nft_in(int nsfd, const struct lb_net_cfg *cfg, const char *const *args,
		      const char *input, char **out, struct lb_err **err)
{
	int in[2], o[2], e[2];
	if (pipe2(in, O_CLOEXEC) < 0)
		return lb_err_set(err, errno, "pipe");
	if (pipe2(o, O_CLOEXEC) < 0 || pipe2(e, O_CLOEXEC) < 0) {
		close(in[0]), close(in[1]);
		return lb_err_set(err, errno, "pipe");
	}
	pid_t pid = fork();
	if (pid == 0) {
		dup2(in[0], 0), dup2(o[1], 1), dup2(e[1], 2);
		if (nsfd >= 0 && setns(nsfd, CLONE_NEWUSER | CLONE_NEWNET) < 0) {
			dprintf(2, "cannot enter the sandbox's namespaces: %s\n", strerror(errno));
			_exit(126);
		}
		const char *argv[8] = {cfg->nft};
		for (int i = 0; args[i] && i < 6; i++)
			argv[i + 1] = args[i];
		execv(cfg->nft, (char *const *)argv);
		_exit(127);
	}
	close(in[0]), close(o[1]), close(e[1]);
	/* an nft that exits early (it could not enter the namespaces) must not kill lbbox */
	struct sigaction ign = {.sa_handler = SIG_IGN}, old;
	sigaction(SIGPIPE, &ign, &old);
	if (input && pid > 0)
		lb_write_all(in[1], input, strlen(input));
	sigaction(SIGPIPE, &old, NULL);
	close(in[1]);
	_cleanup_free_ char *sout = pid > 0 ? drain(o[0], NFT_OUT_MAX) : NULL;
	_cleanup_free_ char *serr = pid > 0 ? drain(e[0], 65536) : NULL;
	close(o[0]), close(e[0]);
	if (pid < 0)
		return lb_err_set(err, errno, "fork nft");
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		const char *line = serr && *serr ? serr : "failed";
		return lb_err_set(err, 0, "nft %s: %.*s", args[0], (int)strcspn(line, "\n"), line);
	}
	if (out)
		*out = LB_TAKE_PTR(sout);
	return 0;
}

static int run_nft(const struct lb_net_cfg *cfg, const char *const *args, const char *input,
		   char **out, struct lb_err **err)
{
	return run_nft_in(-1, cfg, args, input, out, err);
}

int lb_nft_run_in(int nsfd, const struct lb_net_cfg *cfg, const char *ruleset, struct lb_err **err)
{
	static const char *const args[] = {"-f", "-", NULL};
	return run_nft_in(nsfd, cfg, args, ruleset, NULL, err);
}

int lb_nft_table_exists(const char *table, bool *exists, struct lb_err **err)
{
	struct nl_sock *sk = nl_socket_alloc();
	struct nl_msg *msg = NULL;
	struct nfgenmsg nfg = {.nfgen_family = LB_NFPROTO_INET, .version = NFNETLINK_V0};
	int r = -NLE_NOMEM;
	if (!sk)
		goto out;
	if ((r = nl_connect(sk, NETLINK_NETFILTER)) < 0)
		goto out;
	msg = nlmsg_alloc_simple((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETTABLE,
				 NLM_F_REQUEST | NLM_F_ACK);
	r = -NLE_NOMEM;
	if (!msg || nlmsg_append(msg, &nfg, sizeof(nfg), NLMSG_ALIGNTO) < 0 ||
	    nla_put_string(msg, NFTA_TABLE_NAME, table) < 0)
		goto out;
	if ((r = nl_send_auto(sk, msg)) >= 0)
		r = nl_wait_for_ack(sk);
out:
	nlmsg_free(msg);
	nl_socket_free(sk);
	*exists = r >= 0;
	if (r >= 0 || r == -NLE_OBJ_NOTFOUND)
		return 0;
	return lb_err_set(err, 0, "look up nftables table %s: %s", table, nl_geterror(r));
}

static void put_counters(FILE *f)
{
	for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++)
		fprintf(f, "\tcounter %s {\n\t}\n", counters[i]);
}

static void put_dns(FILE *f, const struct lb_net_cfg *cfg, json_t *dns)
{
	size_t i;
	json_t *v;
	fprintf(f, "flush set inet %s dns\n", cfg->bridge);
	json_array_foreach(dns, i, v)
	{
		fprintf(f, "add element inet %s dns { %s }\n", cfg->bridge, json_string_value(v));
	}
}

/* The published ports (net_publish.c): DNAT from the maps, for traffic from elsewhere
 * (prerouting, never from the sandboxes' own bridge, never to 127/8: a loopback port is the
 * host's own, output only) and from the host itself (output). 127/8 arriving on any other
 * interface is dropped before NAT could turn it into a forwarded connection (the kernel's
 * martian check comes only after prerouting). */
static void put_publish_chains(FILE *f, const char *br)
{
	fprintf(f,
		"\tchain publish {\n"
		"\t\tmeta l4proto { tcp, udp } dnat ip to ip daddr . meta l4proto . th dport map "
		"@publish_addr\n"
		"\t\tfib daddr type local meta l4proto { tcp, udp } dnat ip to meta l4proto . th "
		"dport map @publish_any\n\t}\n"
		"\tchain publish_in {\n\t\ttype nat hook prerouting priority dstnat; policy "
		"accept;\n\t\tiifname \"%s\" return\n"
		"\t\tip daddr 127.0.0.0/8 return\n\t\tjump publish\n\t}\n"
		"\tchain publish_local {\n\t\ttype nat hook output priority -100; policy "
		"accept;\n\t\tjump publish\n\t}\n"
		"\tchain loopback_guard {\n\t\ttype filter hook prerouting priority raw; policy "
		"accept;\n\t\tiifname != \"lo\" ip daddr 127.0.0.0/8 drop\n\t}\n",
		br);
}

static void put_chains(FILE *f, const struct lb_net_cfg *cfg, const char *net)
{
	const char *br = cfg->bridge;
	fprintf(f,
		"\tchain forward {\n\t\ttype filter hook forward priority filter - 10; policy "
		"accept;\n"
		"\t\tiifname \"%s\" jump egress\n"
		"\t\toifname \"%s\" ct state established,related accept\n"
		"\t\toifname \"%s\" ct status dnat accept\n"
		"\t\toifname \"%s\" counter name inbound drop\n\t}\n",
		br, br, br, br);
	fprintf(f,
		"\tchain egress {\n"
		"\t\tct direction reply ct status dnat accept\n"
		"\t\tmeta nfproto ipv6 counter name ipv6 " LB_NFT_REJECT "\n"
		"\t\tip saddr . ip daddr @allow accept\n"
		"\t\tmeta l4proto { tcp, udp } ip saddr . ip daddr . th dport @allow_port accept\n"
		"\t\tip daddr %s counter name sandboxes " LB_NFT_REJECT "\n"
		"\t\tip daddr 169.254.169.254 counter name metadata " LB_NFT_REJECT "\n"
		"\t\tip daddr 169.254.0.0/16 counter name link_local " LB_NFT_REJECT "\n"
		"\t\tmeta l4proto { tcp, udp } th dport 53 ip daddr @dns accept\n"
		"\t\tip daddr " LB_NET_PRIVATE_RANGES " counter name private " LB_NFT_REJECT
		"\n\t}\n",
		net);
	fprintf(f,
		"\tchain input {\n\t\ttype filter hook input priority filter - 10; policy "
		"accept;\n\t\tiifname \"%s\" jump to_host\n\t}\n"
		"\tchain to_host {\n"
		"\t\tct state established,related accept\n"
		"\t\tip saddr . ip daddr @allow accept\n"
		"\t\tmeta l4proto { tcp, udp } ip saddr . ip daddr . th dport @allow_port accept\n"
		"\t\tmeta l4proto { tcp, udp } th dport 53 ip daddr @dns accept\n"
		"\t\tcounter name host " LB_NFT_REJECT "\n\t}\n",
		br);
	fprintf(f,
		"\tchain postrouting {\n\t\ttype nat hook postrouting priority srcnat; policy "
		"accept;\n\t\tip saddr %s ip daddr != %s masquerade\n"
		"\t\toifname \"%s\" ip saddr 127.0.0.0/8 ct status dnat masquerade\n\t}\n",
		net, net, br);
	put_publish_chains(f, br);
}

/*
 * "table ... {}" then "delete table" then the full table: creates it or replaces a stale one
 * (an older ruleset, or a half-flushed one) in the same transaction.
 */
int lb_nft_apply_table(const struct lb_net_cfg *cfg, json_t *dns, struct lb_err **err)
{
	char sub[16], net[24];
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return lb_err_set(err, ENOMEM, "nftables ruleset");
	snprintf(net, sizeof(net), "%s/%u", lb_ip4_str(cfg->subnet, sub), cfg->prefix);
	fprintf(f, "table inet %s {\n}\ndelete table inet %s\ntable inet %s {\n", cfg->bridge,
		cfg->bridge, cfg->bridge);
	fprintf(f, "\tset allow {\n\t\ttype ipv4_addr . ipv4_addr\n\t}\n"
		   "\tset allow_port {\n\t\ttype ipv4_addr . ipv4_addr . inet_service\n\t}\n"
		   "\tset dns {\n\t\ttype ipv4_addr\n\t}\n"
		   "\tmap publish_addr {\n\t\ttype ipv4_addr . inet_proto . inet_service : "
		   "ipv4_addr . inet_service\n\t}\n"
		   "\tmap publish_any {\n\t\ttype inet_proto . inet_service : ipv4_addr . "
		   "inet_service\n\t}\n");
	put_counters(f);
	put_chains(f, cfg, net);
	fprintf(f, "}\n");
	put_dns(f, cfg, dns);
	fclose(f);
	static const char *const args[] = {"-f", "-", NULL};
	int r = run_nft(cfg, args, text, NULL, err);
	free(text);
	return r < 0 ? lb_err_wrap(err, "network %s", cfg->bridge) : 0;
}

static void put_lease_allows(FILE *f, const struct lb_net_cfg *cfg, json_t *l)
{
	const char *sb = json_string_value(json_object_get(l, "address"));
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(l, "allow"), i, v)
	{
		char host[32];
		snprintf(host, sizeof(host), "%s", json_string_value(v) ?: "");
		char *colon = strchr(host, ':');
		if (colon)
			*colon = '\0';
		if (colon)
			fprintf(f, "add element inet %s allow_port { %s . %s . %s }\n", cfg->bridge,
				sb, host, colon + 1);
		else
			fprintf(f, "add element inet %s allow { %s . %s }\n", cfg->bridge, sb,
				host);
	}
	json_array_foreach(json_object_get(l, "dns"), i, v)
	{
		fprintf(f, "add element inet %s allow_port { %s . %s . 53 }\n", cfg->bridge, sb,
			json_string_value(v));
	}
}

int lb_nft_set_dns(const struct lb_net_cfg *cfg, json_t *dns, struct lb_err **err)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return lb_err_set(err, ENOMEM, "nftables ruleset");
	put_dns(f, cfg, dns);
	fclose(f);
	static const char *const args[] = {"-f", "-", NULL};
	int r = run_nft(cfg, args, text, NULL, err);
	free(text);
	return r;
}

int lb_nft_sync_allow(const struct lb_net_cfg *cfg, json_t *st, struct lb_err **err)
{
	char *text = NULL;
	size_t len = 0, i;
	json_t *l;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return lb_err_set(err, ENOMEM, "nftables ruleset");
	bool loopback = false;
	fprintf(f,
		"flush set inet %s allow\nflush set inet %s allow_port\n"
		"flush map inet %s publish_addr\nflush map inet %s publish_any\n",
		cfg->bridge, cfg->bridge, cfg->bridge, cfg->bridge);
	json_array_foreach(json_object_get(st, "leases"), i, l)
	{
		put_lease_allows(f, cfg, l);
		lb_publish_put_elements(f, cfg, l, &loopback);
	}
	fclose(f);
	static const char *const args[] = {"-f", "-", NULL};
	/* route_localnet on before the maps lead there, off after they stopped */
	int r = loopback ? lb_publish_route_localnet(cfg, true, err) : 0;
	if (r == 0)
		r = run_nft(cfg, args, text, NULL, err);
	if (r == 0 && !loopback)
		lb_publish_route_localnet(cfg, false, NULL);
	free(text);
	return r;
}

int lb_nft_delete_table(const struct lb_net_cfg *cfg, struct lb_err **err)
{
	bool exists;
	if (lb_nft_table_exists(cfg->bridge, &exists, err) < 0)
		return -1;
	if (!exists)
		return 0;
	const char *const args[] = {"delete", "table", "inet", cfg->bridge, NULL};
	return run_nft(cfg, args, NULL, NULL, err);
}

/* {"host": {"packets": N, "bytes": N}, ...} from `nft -j list counters table inet X`. */
int lb_nft_counters_in(int nsfd, const struct lb_net_cfg *cfg, const char *table, json_t **out,
		       struct lb_err **err)
{
	_cleanup_free_ char *text = NULL;
	const char *const args[] = {"-j", "list", "counters", "table", "inet", table, NULL};
	if (run_nft_in(nsfd, cfg, args, NULL, &text, err) < 0)
		return -1;
	json_t *doc = json_loads(text, 0, NULL), *res = json_object(), *item;
	size_t i;
	json_array_foreach(json_object_get(doc, "nftables"), i, item)
	{
		json_t *c = json_object_get(item, "counter");
		const char *name = json_string_value(json_object_get(c, "name"));
		if (!name)
			continue;
		json_object_set_new(res, name,
				    json_pack("{s:O, s:O}", "packets",
					      json_object_get(c, "packets") ?: json_null(), "bytes",
					      json_object_get(c, "bytes") ?: json_null()));
	}
	json_decref(doc);
	*out = res;
	return 0;
}
