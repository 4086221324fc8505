/*
 * Network "on" without root. lbbox cannot create a veth, a bridge or a NAT rule then, so pasta
 * (Debian's passt) does what podman's rootless mode does: it joins the sandbox's user and
 * network namespaces, creates a tap interface there with the host's address and default route,
 * and carries every connection out through ordinary sockets of the calling user.
 *
 * pasta gives the sandbox the host's reach, so lbbox writes its own filter into the sandbox's
 * network namespace (owned by the sandbox's user namespace, so lbbox may; the command cannot
 * get CAP_NET_ADMIN or CAP_NET_RAW to undo or bypass it, see userns.c): the same refusals as the
 * bridge's table — the host's addresses, 169.254.0.0/16, the private ranges unless --allow-host
 * names them, IPv6 — on the output hook. pasta itself is started with everything that would widen
 * that reach switched off: no port forwarding but the TCP ports -p publishes (on the host's
 * 127.0.0.1 only), no mapping of the gateway address to the host's loopback, IPv4 only.
 *
 * pasta runs in the foreground as lbbox's child, with SIGKILL as its parent-death signal: for
 * `lbbox run` it ends with lbbox even when lbbox is killed. A session's pasta outlives the
 * lbbox that starts it: recorded (by lbbox, before exec) in the session's state directory, it
 * is killed when the session goes (gc.c). pasta itself writes no file (no pid file, no log):
 * AppArmor's profile for pasta lets it write only under /tmp and $HOME.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/sandbox/net.h"
#include "lbbox/base/util.h"
#include "engine.h"
#include "net_internal.h"

#define PASTA_DEFAULT "/usr/bin/pasta"
#define TUN	      "/dev/net/tun"

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

/* Every IPv4 address of the host (of lbbox's network namespace), as an nft set's elements;
 * false (no filter, no sandbox) when they cannot be read. */
static bool put_host_addresses(FILE *f)
{
	struct ifaddrs *ifa = NULL;
	char ip[16];
	bool any = false;
	if (getifaddrs(&ifa) < 0)
		return false;
	for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
			continue;
		const struct sockaddr_in *a = (const struct sockaddr_in *)i->ifa_addr;
		fprintf(f, "%s%s", any ? ", " : "", lb_ip4_str(ntohl(a->sin_addr.s_addr), ip));
		any = true;
	}
	freeifaddrs(ifa);
	if (!any)
		fprintf(f, "127.0.0.1");
	return true;
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
static char *ruleset(const struct lb_spec *spec, struct lb_err **err)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f) {
		lb_err_set(err, ENOMEM, "nftables ruleset");
		return NULL;
	}
	fprintf(f, "table inet lbbox {\n"
		   "\tset allow {\n\t\ttype ipv4_addr\n\t}\n"
		   "\tset allow_port {\n\t\ttype ipv4_addr . inet_service\n\t}\n"
		   "\tset dns {\n\t\ttype ipv4_addr\n\t}\n");
	static const char *const names[] = {"host", "metadata", "link_local", "private", "ipv6"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		fprintf(f, "\tcounter %s {\n\t}\n", names[i]);
	fprintf(f, "\tchain output {\n\t\ttype filter hook output priority filter; policy accept;\n"
		   "\t\toifname \"lo\" accept\n"
		   "\t\tct direction reply accept\n"
		   "\t\tmeta nfproto ipv6 counter name ipv6 " LB_NFT_REJECT "\n"
		   "\t\tip daddr @allow accept\n"
		   "\t\tmeta l4proto { tcp, udp } ip daddr . th dport @allow_port accept\n"
		   "\t\tip daddr 169.254.169.254 counter name metadata " LB_NFT_REJECT "\n"
		   "\t\tip daddr 169.254.0.0/16 counter name link_local " LB_NFT_REJECT "\n"
		   "\t\tmeta l4proto { tcp, udp } th dport 53 ip daddr @dns accept\n"
		   "\t\tip daddr { ");
	bool hosts = put_host_addresses(f);
	fprintf(f, " } counter name host " LB_NFT_REJECT "\n"
		   "\t\tip daddr " LB_NET_PRIVATE_RANGES " counter name private " LB_NFT_REJECT
		   "\n\t}\n}\n");
	put_allows(f, spec);
	if (fclose(f) != 0 || !hosts) {
		lb_err_set(err, hosts ? ENOMEM : errno,
			   hosts ? "nftables ruleset" : "the host's addresses (getifaddrs)");
		free(text);
		return NULL;
	}
	return text;
}

#define PASTA_RECORD "pasta"

/*
 * The child: pasta in the foreground, in a session of its own (the terminal's ^C is the
 * sandbox's, not pasta's), its stderr into the pipe errw, dying with lbbox. For a session
 * (record), its pid and start time are written first and only then is the parent-death
 * signal cleared: whatever instant lbbox dies at, pasta is either killed or recorded.
 */
__attribute__((noreturn)) static void exec_pasta(pid_t target, pid_t parent, const char *record,
						 int errw, const char *tcp)
{
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)target);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(127);
	if (record) {
		char path[LB_PATH_BUF], text[64];
		snprintf(path, sizeof(path), "%s/" PASTA_RECORD, record);
		unsigned long long start = lb_proc_starttime(getpid());
		snprintf(text, sizeof(text), "%d %llu", (int)getpid(), start);
		if (start == 0 ||
		    lb_write_fileat(AT_FDCWD, path, text, strlen(text), O_CREAT | O_EXCL, 0600,
				    NULL) < 0 ||
		    prctl(PR_SET_PDEATHSIG, 0) < 0)
			_exit(127);
	}
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(errw, 2) < 0)
		_exit(127);
	/* nothing lbbox inherited from its caller goes on to pasta */
	syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
	setsid();
	/* the sandbox's signals were blocked for lbbox's signalfd; pasta needs its own */
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	const char *argv[] = {
	    "pasta",	   "--config-net", "--foreground", "--quiet", "--ipv4-only", "--no-map-gw",
	    "--ns-ifname", "eth0",	   "-t",	   tcp,	      "-u",	     "none",
	    "-T",	   "none",	   "-U",	   "none",    pid,	     NULL};
	execv(pasta_path(), (char *const *)argv);
	dprintf(2, "cannot execute %s: %s\n", pasta_path(), strerror(errno));
	_exit(127);
}

/* -p's ports as pasta's -t list ("127.0.0.1/8080:80,..."), or "none"; userns.c allowed only
 * TCP on 127.0.0.1. */
static void tcp_ports(const struct lb_net_opts *o, char *out, size_t len)
{
	size_t n = 0;
	char ip[16];
	snprintf(out, len, "none");
	for (size_t i = 0; i < o->n_publish && n < len; i++)
		n += (size_t)snprintf(out + n, len - n, "%s%s/%u:%u", i ? "," : "",
				      lb_ip4_str(o->publish[i].host_addr, ip),
				      o->publish[i].host_port, o->publish[i].port);
}

static int start_pasta(pid_t target, const char *record, const struct lb_net_opts *o,
		       struct lb_net_handle *h, struct lb_err **err)
{
	int p[2];
	char tcp[LB_MAX_PUBLISH * 32];
	tcp_ports(o, tcp, sizeof(tcp));
	if (pipe2(p, O_CLOEXEC) < 0)
		return lb_err_set(err, errno, "pipe");
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0)
		exec_pasta(target, parent, record, p[1], tcp);
	int e = errno;
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		return lb_err_set(err, e, "fork pasta");
	}
	h->pasta = pid;
	h->pasta_err = p[0];
	h->pasta_pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (h->pasta_pidfd < 0)
		return lb_err_set(err, errno, "pidfd of pasta");
	return 0;
}

static int apply_filter(const struct lb_spec *spec, const struct lb_net_cfg *cfg, pid_t pid,
			struct lb_err **err)
{
	_cleanup_free_ char *rules = ruleset(spec, err);
	if (!rules)
		return -1;
	_cleanup_close_ int nsfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (nsfd < 0)
		return lb_err_set(err, errno, "pidfd of the sandbox");
	if (lb_nft_run_in(nsfd, cfg, rules, err) < 0)
		return lb_err_wrap(err, "filter of the sandbox's network");
	return 0;
}

/*
 * pasta configures eth0 while lbbox writes the filter; pid 1, let go only once the filter is
 * in, builds the root meanwhile and then waits for eth0's default route (it writes the address
 * into /etc/hosts last). lbbox watches pasta meanwhile (start.c): an early exit fails the start
 * with pasta's own words.
 */
int lb_net_pasta_setup(const struct lb_spec *spec, pid_t pid, const char *record,
		       struct lb_net_handle *h, struct lb_err **err)
{
	struct lb_net_cfg cfg;
	lb_net_cfg_resolve(&spec->net_opts, NULL, &cfg);
	if (start_pasta(pid, record, &spec->net_opts, h, err) < 0 ||
	    apply_filter(spec, &cfg, pid, err) < 0)
		return -1;
	h->lease = (struct lb_net_lease){.pasta = true};
	return 0;
}

bool lb_net_pasta_said(struct lb_net_handle *h, char *out, size_t size)
{
	char buf[4096];
	struct pollfd p = {.fd = h->pasta_err, .events = POLLIN};
	ssize_t n =
	    h->pasta_err >= 0 && poll(&p, 1, 0) > 0 ? read(h->pasta_err, buf, sizeof(buf) - 1) : -1;
	buf[n > 0 ? n : 0] = '\0';
	/* pasta also logs to syslog, and says so on stderr when there is none: not the reason */
	const char *line = buf;
	while (strncmp(line, "Failed to send ", 15) == 0 && strchr(line, '\n'))
		line = strchr(line, '\n') + 1;
	if (!*line || strncmp(line, "Failed to send ", 15) == 0)
		return false;
	snprintf(out, size, "%.*s", (int)strcspn(line, "\n"), line);
	return true;
}

int lb_net_pasta_failed(struct lb_net_handle *h, struct lb_err **err)
{
	char said[256] = "it exited";
	lb_net_pasta_said(h, said, sizeof(said));
	return lb_err_set(err, 0, "pasta could not connect the sandbox: %s", said);
}

void lb_net_pasta_ready(struct lb_net_handle *h)
{
	/* pasta ignores SIGPIPE: what it says from now on is dropped */
	if (h->pasta_err >= 0)
		close(h->pasta_err);
	h->pasta_err = -1;
}

/*
 * pasta keeps nothing that needs a clean exit. Its death is not waited for: closing its tap
 * device unregisters the interface in the exiting process (RCU grace periods, measured at
 * 30-40 ms here, more than the rest of the run). It is already killed, and its memory gone,
 * when lbbox returns; the zombie is reaped when lbbox exits (lbbox run) or by a caller that
 * reaps its children.
 */
void lb_net_pasta_detach(struct lb_net_handle *h)
{
	lb_net_pasta_ready(h);
	if (h->pasta_pidfd >= 0)
		close(h->pasta_pidfd);
	h->pasta_pidfd = -1;
	h->pasta = 0;
}

void lb_net_pasta_teardown(struct lb_net_handle *h)
{
	if (h->pasta <= 0)
		return;
	kill(h->pasta, SIGKILL);
	waitpid(h->pasta, NULL, WNOHANG);
	lb_net_pasta_detach(h);
}

/*
 * The recorded pasta as a pidfd: 0 = no record, 1 = running (*pfd), -1 = recorded but gone.
 * The record must be our own file and the process ours, with the recorded start time: never
 * a recycled pid, nor one a record planted by someone else names.
 */
static int recorded_pasta(const char *statedir, int *pfd)
{
	char buf[64];
	struct stat st;
	int pid = 0;
	unsigned long long start = 0;
	_cleanup_close_ int dirfd = open(statedir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_cleanup_close_ int fd =
	    dirfd < 0 ? -1 : openat(dirfd, PASTA_RECORD, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid() ||
	    sscanf(buf, "%d %llu", &pid, &start) != 2 || pid <= 0)
		return 0;
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/%d", pid);
	*pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (*pfd >= 0 && lb_proc_starttime(pid) == start && stat(proc, &st) == 0 &&
	    st.st_uid == geteuid())
		return 1;
	if (*pfd >= 0)
		close(*pfd);
	*pfd = -1;
	return -1;
}

void lb_net_pasta_reap_record(const char *statedir)
{
	int pfd = -1;
	if (recorded_pasta(statedir, &pfd) == 1) {
		syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0);
		close(pfd);
	}
}

bool lb_net_pasta_record_ok(const char *statedir)
{
	int pfd = -1;
	int r = recorded_pasta(statedir, &pfd);
	if (pfd >= 0)
		close(pfd);
	return r >= 0;
}
