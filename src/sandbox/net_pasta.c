/*
 * Network "on" without root. lbbox cannot create a veth, a bridge or a NAT rule then, so pasta
 * (Debian's passt) does what podman's rootless mode does: it joins the sandbox's user and
 * network namespaces, creates a tap interface there with the host's address and default route,
 * and carries every connection out through ordinary sockets of the calling user.
 *
 * pasta gives the sandbox the host's reach, so lbbox writes its own filter into the sandbox's
 * network namespace (owned by the sandbox's user namespace, so lbbox may; the command has no
 * CAP_NET_ADMIN to undo it): the same refusals as the bridge's table — the host's addresses,
 * 169.254.0.0/16, the private ranges unless --allow-host names them, IPv6 — on the output hook.
 * pasta itself is started with everything that would widen that reach switched off: no port
 * forwarding in either direction, no mapping of the gateway address to the host's loopback,
 * IPv4 only.
 *
 * pasta runs in the foreground as lbbox's child, with SIGKILL as its parent-death signal: it
 * ends with lbbox even when lbbox is killed. It writes its pid file once it has configured the
 * namespace; lbbox waits for that file (inotify) or for pasta's exit (pidfd), whichever first.
 */
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lbbox/cleanup.h"
#include "lbbox/net.h"
#include "lbbox/util.h"
#include "sandbox/engine.h"
#include "sandbox/net_internal.h"

#define PASTA_DEFAULT	 "/usr/bin/pasta"
#define PASTA_PIDFILE	 "pasta.pid"
#define PASTA_LOG	 "pasta.log"
#define PASTA_TIMEOUT_MS 10000
#define TUN		 "/dev/net/tun"

static const char *pasta_path(void)
{
	const char *p = getenv("LBBOX_PASTA");
	return p && *p ? p : PASTA_DEFAULT;
}

int lb_net_pasta_check(const struct lb_net_opts *opts, struct lb_err **err)
{
	struct lb_net_cfg cfg;
	lb_net_cfg_resolve(opts, NULL, &cfg);
	if (access(pasta_path(), X_OK) < 0)
		return lb_err_set(err, 0,
				  "--network on without root needs pasta (%s: %s; apt-get install "
				  "passt); lbbox does not fall back to --network host",
				  pasta_path(), strerror(errno));
	if (access(TUN, R_OK | W_OK) < 0)
		return lb_err_set(
		    err, 0,
		    "--network on without root: pasta needs %s, which this user cannot "
		    "open (%s; udev's default mode is 0666)",
		    TUN, strerror(errno));
	return lb_nft_check(&cfg, err);
}

/* Every IPv4 address of the host (of lbbox's network namespace), as an nft set's elements. */
static void put_host_addresses(FILE *f)
{
	struct ifaddrs *ifa = NULL;
	char ip[16];
	bool any = false;
	if (getifaddrs(&ifa) == 0)
		for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
			if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
				continue;
			const struct sockaddr_in *a = (const struct sockaddr_in *)i->ifa_addr;
			fprintf(f, "%s%s", any ? ", " : "",
				lb_ip4_str(ntohl(a->sin_addr.s_addr), ip));
			any = true;
		}
	freeifaddrs(ifa);
	if (!any)
		fprintf(f, "127.0.0.1");
}

static void put_allows(FILE *f, const struct lb_spec *spec)
{
	const struct lb_net_opts *o = &spec->net_opts;
	char ip[16];
	uint32_t dns[LB_MAX_DNS];
	size_t ndns = o->n_dns;
	for (size_t i = 0; i < o->n_allow; i++) {
		lb_ip4_str(o->allow[i].addr, ip);
		if (o->allow[i].port)
			fprintf(f, "add element inet lbbox allow_port { %s . %u }\n", ip,
				o->allow[i].port);
		else
			fprintf(f, "add element inet lbbox allow { %s }\n", ip);
	}
	if (ndns)
		memcpy(dns, o->dns, ndns * sizeof(dns[0]));
	else
		ndns = lb_dns_host_resolvers(dns, LB_MAX_DNS);
	for (size_t i = 0; i < ndns; i++)
		fprintf(f, "add element inet lbbox dns { %s }\n", lb_ip4_str(dns[i], ip));
}

/* The filter of one rootless sandbox: its own table in its own namespace, on the output hook. */
static char *ruleset(const struct lb_spec *spec)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return NULL;
	fprintf(f, "table inet lbbox {\n"
		   "\tset allow {\n\t\ttype ipv4_addr\n\t}\n"
		   "\tset allow_port {\n\t\ttype ipv4_addr . inet_service\n\t}\n"
		   "\tset dns {\n\t\ttype ipv4_addr\n\t}\n");
	static const char *const names[] = {"host", "metadata", "link_local", "private", "ipv6"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		fprintf(f, "\tcounter %s {\n\t}\n", names[i]);
	fprintf(f, "\tchain output {\n\t\ttype filter hook output priority filter; policy accept;\n"
		   "\t\toifname \"lo\" accept\n"
		   "\t\tmeta nfproto ipv6 counter name ipv6 " LB_NFT_REJECT "\n"
		   "\t\tip daddr @allow accept\n"
		   "\t\tmeta l4proto { tcp, udp } ip daddr . th dport @allow_port accept\n"
		   "\t\tip daddr 169.254.169.254 counter name metadata " LB_NFT_REJECT "\n"
		   "\t\tip daddr 169.254.0.0/16 counter name link_local " LB_NFT_REJECT "\n"
		   "\t\tmeta l4proto { tcp, udp } th dport 53 ip daddr @dns accept\n"
		   "\t\tip daddr { ");
	put_host_addresses(f);
	fprintf(f, " } counter name host " LB_NFT_REJECT "\n"
		   "\t\tip daddr " LB_NET_PRIVATE_RANGES " counter name private " LB_NFT_REJECT
		   "\n\t}\n}\n");
	put_allows(f, spec);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

/* The child: pasta in the foreground, its output in the state directory, dying with lbbox. */
__attribute__((noreturn)) static void exec_pasta(const char *statedir, pid_t target, pid_t parent)
{
	char pidfile[4200], log[4200], pid[16];
	snprintf(pidfile, sizeof(pidfile), "%s/" PASTA_PIDFILE, statedir);
	snprintf(log, sizeof(log), "%s/" PASTA_LOG, statedir);
	snprintf(pid, sizeof(pid), "%d", (int)target);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(127);
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int out = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (null < 0 || out < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
		_exit(127);
	/* the sandbox's signals were blocked for lbbox's signalfd; pasta needs its own */
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	const char *argv[] = {
	    "pasta",	   "--config-net", "--foreground", "--quiet", "--ipv4-only",
	    "--no-map-gw", "--ns-ifname",  "eth0",	   "-t",      "none",
	    "-u",	   "none",	   "-T",	   "none",    "-U",
	    "none",	   "--pid",	   pidfile,	   pid,	      NULL};
	execv(pasta_path(), (char *const *)argv);
	dprintf(2, "cannot execute %s: %s\n", pasta_path(), strerror(errno));
	_exit(127);
}

/* pasta's own words when it failed: the first line of its log. */
static int pasta_failed(const char *statedir, const char *why, struct lb_err **err)
{
	char path[4200];
	_cleanup_free_ char *text = NULL;
	snprintf(path, sizeof(path), "%s/" PASTA_LOG, statedir);
	lb_read_file(path, 4096, &text, NULL, NULL);
	/* pasta also logs to syslog, and says so on stderr when there is none: not the reason */
	const char *line = text;
	while (line && strncmp(line, "Failed to send ", 15) == 0 && strchr(line, '\n'))
		line = strchr(line, '\n') + 1;
	if (!line || !*line || strncmp(line, "Failed to send ", 15) == 0)
		line = why;
	return lb_err_set(err, 0, "pasta could not connect the sandbox: %.*s",
			  (int)strcspn(line, "\n"), line);
}

/* Waits until pasta wrote its pid file (ready) or exited (failed). */
static int wait_ready(int ino, pid_t pasta, const char *statedir, struct lb_err **err)
{
	_cleanup_close_ int pfd = (int)syscall(SYS_pidfd_open, pasta, 0);
	struct pollfd p[2] = {{.fd = ino, .events = POLLIN}, {.fd = pfd, .events = POLLIN}};
	uint64_t deadline = lb_now_ns() + PASTA_TIMEOUT_MS * 1000000ULL;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	for (;;) {
		uint64_t now = lb_now_ns();
		if (now >= deadline)
			return pasta_failed(statedir, "timed out", err);
		int n = poll(p, pfd >= 0 ? 2 : 1, (int)((deadline - now) / 1000000) + 1);
		if (n < 0 && errno != EINTR)
			return lb_err_set(err, errno, "wait for pasta");
		if (pfd >= 0 && (p[1].revents & POLLIN))
			return pasta_failed(statedir, "exited", err);
		if (!(p[0].revents & POLLIN))
			continue;
		ssize_t len = read(ino, buf, sizeof(buf));
		for (ssize_t off = 0; off < len;) {
			const struct inotify_event *ev = (const void *)(buf + off);
			if (ev->len && strcmp(ev->name, PASTA_PIDFILE) == 0)
				return 0;
			off += (ssize_t)(sizeof(*ev) + ev->len);
		}
	}
}

/* Starts pasta; *ino watches the state directory for its pid file (see wait_ready). */
static int start_pasta(const char *statedir, pid_t target, pid_t *out, int *ino,
		       struct lb_err **err)
{
	*ino = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (*ino < 0 || inotify_add_watch(*ino, statedir, IN_CLOSE_WRITE | IN_MOVED_TO) < 0)
		return lb_err_set(err, errno, "watch %s", statedir);
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0)
		return lb_err_set(err, errno, "fork pasta");
	if (pid == 0)
		exec_pasta(statedir, target, parent);
	*out = pid;
	return 0;
}

static int apply_filter(const struct lb_spec *spec, const struct lb_net_cfg *cfg, pid_t pid,
			struct lb_err **err)
{
	_cleanup_free_ char *rules = ruleset(spec);
	_cleanup_close_ int nsfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (!rules)
		return lb_err_set(err, ENOMEM, "nftables ruleset");
	if (nsfd < 0)
		return lb_err_set(err, errno, "pidfd of the sandbox");
	if (lb_nft_run_in(nsfd, cfg, rules, err) < 0)
		return lb_err_wrap(err, "filter of the sandbox's network");
	return 0;
}

int lb_net_pasta_setup(const struct lb_spec *spec, const char *statedir, pid_t pid,
		       struct lb_net_handle *h, struct lb_err **err)
{
	struct lb_net_cfg cfg;
	_cleanup_close_ int ino = -1;
	lb_net_cfg_resolve(&spec->net_opts, NULL, &cfg);
	/* the filter goes in while pasta sets the interface up: neither needs the other, and
	 * the command starts only after both */
	if (lb_net_pasta_check(&spec->net_opts, err) < 0 ||
	    start_pasta(statedir, pid, &h->pasta, &ino, err) < 0 ||
	    apply_filter(spec, &cfg, pid, err) < 0 || wait_ready(ino, h->pasta, statedir, err) < 0)
		return -1;
	h->lease = (struct lb_net_lease){.pasta = true};
	return 0;
}

/*
 * pasta keeps nothing that needs a clean exit. Its death is not waited for: closing its tap
 * device unregisters the interface in the exiting process (RCU grace periods, measured at
 * 30-40 ms here, more than the rest of the run). It is already killed, and its memory gone,
 * when lbbox returns; the zombie is reaped when lbbox exits (lbbox run) or by a caller that
 * reaps its children.
 */
void lb_net_pasta_teardown(struct lb_net_handle *h)
{
	if (h->pasta <= 0)
		return;
	kill(h->pasta, SIGKILL);
	waitpid(h->pasta, NULL, WNOHANG);
	h->pasta = 0;
}
