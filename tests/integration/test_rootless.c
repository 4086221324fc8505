// lbbox without root: a user namespace mapping the caller to uid 0, and --network on through
// pasta behind lbbox's own egress filter. lbbox runs as nobody (65534) through a wrapper that
// places it in a test "host" network namespace (lbt-rlh-<pid>), which reaches the "internet",
// another test namespace (lbt-rlu-<pid>), over a veth: traffic never leaves this machine.
//   host:     198.51.100.2/24 (its uplink), 203.0.113.7/32 (another of its addresses), routes
//             everything via 198.51.100.1; services on both addresses and on 127.0.0.1
//   upstream: 198.51.100.1/24 (HTTP :8080 with a CGI echoing the client, DNS :53),
//             169.254.169.254 (fake metadata, :80), 192.168.253.2 (a private host, :8080, and
//             a DNS server that is not the host's resolver), 2001:db8:1::1 (HTTP :8086 over
//             IPv6; the host has an IPv6 default route to it)
// The wrapper (its own mount namespace) also shows lbbox a /dev/net/tun it may open (this
// machine's is 0600, udev's default is 0666) and a resolv.conf naming the upstream's DNS; it
// enters the netns with nsenter, which keeps the host's /sys (and its cgroups) in view.
// Nothing of the host is changed. After each test: no pasta, no state, no link or nft table.
#include "harness.h"
#include "harness_net.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define NOBODY	   65534
#define HOST	   "198.51.100.2"
#define UP	   "198.51.100.1"
#define HOST_OTHER "203.0.113.7"
#define META	   "169.254.169.254"
#define PRIVATE	   "192.168.253.2"
#define DNS_NAME   "upstream.lbt.test"
#define DNS_ADDR   "198.51.100.77"
#define HOST6	   "2001:db8:1::2"
#define UP6	   "2001:db8:1::1"

static struct {
	char hns[32], uns[32], vh[16], vu[16];
	bool up;
} R;

static const char wrapper_fmt[] =
    "#!/bin/sh\n"
    "# lbbox as nobody in the test host's netns, seeing a usable tun and the test resolv.conf\n"
    "exec unshare -m /bin/sh -c '\n"
    "  [ -n \"$LBT_NO_TUN\" ] || mount --bind %s /dev/net/tun || exit 99\n"
    "  mount --bind %s /etc/resolv.conf || exit 99\n"
    "  exec nsenter --net=/run/netns/%s setpriv --reuid=%d --regid=%d --clear-groups \\\n"
    "    env HOME=%s XDG_RUNTIME_DIR= \"$@\"' sh \"$@\"\n";

static void write_wrapper(void)
{
	char *dir = lbt_mkdir_work("rl"), *tun = lbt_strdupf("%s/tun", dir);
	char *resolv = lbt_strdupf("%s/resolv.conf", dir), *home = lbt_mkdir_work("home");
	char *wrap = lbt_strdupf("%s/lbbox-as-nobody", dir);
	char *text = lbt_strdupf(wrapper_fmt, tun, resolv, R.hns, NOBODY, NOBODY, home);

	cr_assert_eq(mknod(tun, S_IFCHR | 0666, makedev(10, 200)), 0, "mknod %s", tun);
	cr_assert_eq(chmod(tun, 0666), 0);
	lbt_write_file(resolv, "nameserver " UP "\n");
	lbt_write_file(wrap, text);
	cr_assert_eq(chmod(wrap, 0755), 0);
	cr_assert_eq(chown(home, NOBODY, NOBODY), 0);
	lbt_set_wrapper(wrap);
	free(dir), free(tun), free(resolv), free(home), free(wrap), free(text);
}

static void serve_in(const char *ns, const char *addr_port, const char *www)
{
	char *cmd =
	    lbt_strdupf("exec ip netns exec %s busybox httpd -f -p %s -h %s", ns, addr_port, www);
	lbt_serve(cmd);
	free(cmd);
}

// Both namespaces, the veth between them, and every test service.
static void hosts_up(void)
{
	char *www = lbt_mkdir_work("www"), *cgi = lbt_mkdir_work("www/cgi-bin");
	char *script = lbt_strdupf("%s/ip", cgi), *idx = lbt_strdupf("%s/index.html", www);
	char *hwww = lbt_mkdir_work("hostwww"), *hidx = lbt_strdupf("%s/index.html", hwww);

	lbt_write_file(script,
		       "#!/bin/sh\necho 'Content-Type: text/plain'\necho\necho \"$REMOTE_ADDR\"\n");
	chmod(script, 0755);
	lbt_write_file(idx, "upstream-ok\n");
	lbt_write_file(hidx, "host-service\n");
	R.up = true;
	cr_assert_eq(lbt_sh("ip netns add %s && ip netns add %s && "
			    "ip link add %s netns %s type veth peer name %s netns %s && "
			    "ip -n %s link set lo up && ip -n %s link set %s up && "
			    "ip -n %s addr add " HOST "/24 dev %s && "
			    "ip -n %s addr add " HOST_OTHER "/32 dev lo && "
			    "ip -n %s route add default via " UP " && "
			    "ip -n %s link set lo up && ip -n %s link set %s up && "
			    "ip -n %s addr add " UP "/24 dev %s && "
			    "ip -n %s addr add " META "/32 dev lo && "
			    "ip -n %s addr add " PRIVATE "/32 dev lo && "
			    "ip -n %s route add " HOST_OTHER "/32 via " HOST " && "
			    "ip -n %s addr add " HOST6 "/64 dev %s nodad && "
			    "ip -n %s addr add " UP6 "/64 dev %s nodad && "
			    "ip -n %s -6 route add default via " UP6,
			    R.hns, R.uns, R.vh, R.hns, R.vu, R.uns, R.hns, R.hns, R.vh, R.hns, R.vh,
			    R.hns, R.hns, R.uns, R.uns, R.vu, R.uns, R.vu, R.uns, R.uns, R.uns,
			    R.hns, R.vh, R.uns, R.vu, R.hns),
		     0, "cannot build the test namespaces");
	serve_in(R.uns, UP ":8080", www);
	serve_in(R.uns, META ":80", www);
	serve_in(R.uns, PRIVATE ":8080", www);
	serve_in(R.hns, HOST ":18081", hwww);
	serve_in(R.hns, HOST_OTHER ":18081", hwww);
	serve_in(R.hns, "127.0.0.1:18082", hwww);
	char *py = lbt_dns_responder();
	char *cmd =
	    lbt_strdupf("exec ip netns exec %s /usr/bin/python3 %s " UP " " DNS_ADDR, R.uns, py);
	lbt_serve(cmd), free(cmd);
	cmd = lbt_strdupf("exec ip netns exec %s /usr/bin/python3 %s " PRIVATE " " DNS_ADDR, R.uns,
			  py);
	lbt_serve(cmd), free(cmd);
	cmd =
	    lbt_strdupf("cd %s && exec ip netns exec %s /usr/bin/python3 -m http.server --bind " UP6
			" 8086 >/dev/null 2>&1",
			www, R.uns);
	lbt_serve(cmd), free(cmd);
	// every service answers the host itself: the refusals below are the sandbox's filter
	const char *const urls[] = {UP ":8080",	     META ":80",	  PRIVATE ":8080",
				    HOST ":18081",   HOST_OTHER ":18081", "127.0.0.1:18082",
				    "[" UP6 "]:8086"};
	for (size_t i = 0; i < sizeof(urls) / sizeof(urls[0]); i++) {
		cmd = lbt_strdupf("ip netns exec %s busybox wget -q -O /dev/null http://%s/", R.hns,
				  urls[i]);
		lbt_wait_ready(cmd), free(cmd);
	}
	free(www), free(cgi), free(script), free(idx), free(hwww), free(hidx), free(py);
}

static void rl_init(void)
{
	int p = (int)getpid() % 100000;

	lbt_setup();
	snprintf(R.hns, sizeof(R.hns), "lbt-rlh-%d", p);
	snprintf(R.uns, sizeof(R.uns), "lbt-rlu-%d", p);
	snprintf(R.vh, sizeof(R.vh), "lbtr%dh", p);
	snprintf(R.vu, sizeof(R.vu), "lbtr%du", p);
	lbt_chown_dirs(NOBODY, NOBODY);
	write_wrapper();
	hosts_up();
}

static void rl_cleanup(void)
{
	lbt_serve_stop_all();
	if (R.up)
		lbt_sh("ip netns del %s 2>/dev/null; ip netns del %s 2>/dev/null; true", R.hns,
		       R.uns);
	R.up = false;
}

static void rl_fini(void)
{
	rl_cleanup();
	lbt_set_wrapper(NULL);
	lbt_teardown();
}

TestSuite(rootless, .init = rl_init, .fini = rl_fini, .timeout = 240);

// pasta processes (comm "pasta" or "passt.avx2") in this test's private cgroups.
// `then` runs on each (as $p, /proc/PID), output counted.
static int pastas_in_our_cgroups(bool live_only, const char *then)
{
	char *cmd = lbt_strdupf(
	    "for p in /proc/[0-9]*; do grep -qs '^pas' $p/comm && "
	    "grep -qs ':/lbt-%d' $p/cgroup && %s %s; done | wc -l",
	    (int)getpid(), live_only ? "[ -n \"$(tr -d '\\0' <$p/cmdline 2>/dev/null)\" ] &&" : "",
	    then);
	char *out = lbt_sh_out(cmd);
	int n = out ? atoi(out) : -1;
	free(cmd), free(out);
	return n;
}

// Live pastas of this test (an exiting one has no command line any more).
static int pastas(void)
{
	return pastas_in_our_cgroups(true, "echo $p");
}

// The host namespace has only what the test gave it: lo and the uplink, no nft table.
static void assert_host_untouched(void)
{
	char *cmd = lbt_strdupf("ip -n %s -o link show | wc -l", R.hns);
	char *links = lbt_sh_out(cmd);
	cr_assert_eq(atoi(links), 2, "links added to the host namespace: %s", links);
	free(cmd), free(links);
	cmd = lbt_strdupf("ip netns exec %s nft list tables", R.hns);
	char *tables = lbt_sh_out(cmd);
	cr_assert_str_eq(tables, "", "nft tables in the host namespace: %s", tables);
	free(cmd), free(tables);
	cr_assert_eq(pastas(), 0, "a pasta is left");
}

// lbbox kills pasta without waiting for it: its exit unregisters the tap interface, which
// takes tens of ms (as the veth of root mode goes with its namespace, in the background).
// Wait until no pasta of this test is still exiting; then the usual checks, strict.
static void wait_pastas_exited(void)
{
	for (int i = 0; i < 100 && pastas_in_our_cgroups(false, "echo $p") > 0; i++)
		usleep(50000);
}

#define RL_TEST(name, ...)                                                                         \
	static void rl_body_##name(void);                                                          \
	Test(rootless, name, ##__VA_ARGS__)                                                        \
	{                                                                                          \
		rl_body_##name();                                                                  \
		wait_pastas_exited();                                                              \
		lbt_assert_clean();                                                                \
		assert_host_untouched();                                                           \
	}                                                                                          \
	static void rl_body_##name(void)

// "<url> ok" per line when the URL answered, "<url> no" when not (refused, unreachable or timed
// out).
#define PROBE(url)                                                                                 \
	"if timeout 3 wget -q -O /dev/null http://" url "/ 2>/dev/null; then echo " url " ok; "    \
	"else echo " url " no; fi; "

RL_TEST(off_is_a_user_namespace_with_only_lo)
{
	struct lb_run_out o;

	lbt_run_net(
	    &o, "off",
	    "id -u; cat /proc/self/uid_map /proc/self/gid_map | tr -s ' '; ls /sys/class/net; "
	    "grep CapEff /proc/self/status; "
	    "cat /proc/1/environ >/dev/null 2>&1 || echo no-environ; "
	    "ls /proc/1/ns/net >/dev/null 2>&1 && readlink /proc/1/ns/net || echo no-ns; "
	    "tr '\\0' ' ' </proc/1/cmdline",
	    NULL, NULL);
	LBT_ASSERT_EXIT(o, 0);
	// uid 0 inside is nobody outside, and nothing else is mapped
	cr_assert(strstr(o.out, "0\n 0 65534 1\n 0 65534 1\nlo\n"), "identity: %s", o.out);
	// the default capability set (Podman's, less SETFCAP/SETPCAP/SYS_CHROOT), not all of them
	cr_assert(strstr(o.out, "CapEff:\t00000000000004fb\n"), "caps: %s", o.out);
	// pid 1 (lbbox) stays dumpable for its owner, not for the command: it has fewer caps
	cr_assert(strstr(o.out, "no-environ\nno-ns\nlbbox-init"), "pid 1 is open: %s", o.out);
	lbt_out_free(&o);
}

RL_TEST(on_reaches_upstream_natted_and_says_pasta)
{
	struct lb_run_out o;

	lbt_run_net(&o, "on", "timeout 5 wget -q -O - http://" UP ":8080/cgi-bin/ip", NULL, NULL);
	LBT_ASSERT_EXIT(o, 0);
	// the upstream sees the host's own address: pasta's sockets are the user's
	LBT_ASSERT_OUT(o, HOST "\n");
	cr_assert(strstr(o.err, "pasta"), "no word of pasta: %s", o.err);
	lbt_out_free(&o);
}

RL_TEST(on_interface_route_resolvers_and_hosts)
{
	struct lb_run_out o;

	lbt_run_net(
	    &o, "on",
	    "ls /sys/class/net | tr '\\n' ' '; echo; ip -4 -o addr show eth0 | awk '{print $4}'; "
	    "ip route | grep default; cat /etc/resolv.conf; "
	    "awk -v h=$(hostname) '$2 == h {print \"hosts \" $1}' /etc/hosts",
	    NULL, NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert(strstr(o.out, "eth0 lo \n" HOST "/24\ndefault via " UP " dev eth0"),
		  "interface: %s", o.out);
	cr_assert(strstr(o.out, "nameserver " UP "\n"), "resolv.conf: %s", o.out);
	cr_assert(strstr(o.out, "hosts " HOST "\n"), "hostname not mapped: %s", o.out);
	lbt_out_free(&o);
}

RL_TEST(on_dns_resolves_through_the_hosts_resolver)
{
	struct lb_run_out o;

	lbt_run_net(&o, "on", "nslookup " DNS_NAME " 2>&1", NULL, NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert(strstr(o.out, DNS_ADDR), "not resolved by the test resolver: %s", o.out);
	lbt_out_free(&o);
	// port 53 is open to the resolvers only, not to any private address
	lbt_run_net(&o, "on", "timeout 5 nslookup " DNS_NAME " " PRIVATE " 2>&1; echo rc=$?", NULL,
		    NULL);
	cr_assert(!strstr(o.out, DNS_ADDR) && !strstr(o.out, "rc=0"),
		  "a private DNS server answered: %s", o.out);
	lbt_out_free(&o);
}

RL_TEST(on_refuses_host_metadata_and_private_ranges)
{
	struct lb_run_out o;

	// the very first connection is refused: the filter is in place before the command starts
	lbt_run_net(&o, "on",
		    PROBE(META ":80") PROBE(UP ":8080") PROBE(HOST_OTHER ":18081")
			PROBE(HOST ":18081") PROBE("127.0.0.1:18082") PROBE(UP ":18082")
			    PROBE(PRIVATE ":8080") PROBE("[" UP6 "]:8086"),
		    NULL, NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert(strstr(o.out, UP ":8080 ok\n"), "the upstream is not reachable: %s", o.out);
	// HOST and 127.0.0.1 are the sandbox's own (pasta copies the host's address); the host's
	// loopback service is not reachable by the gateway's address either (pasta's default)
	const char *const refused[] = {HOST_OTHER ":18081 no\n", HOST ":18081 no\n",
				       "127.0.0.1:18082 no\n",	 UP ":18082 no\n",
				       META ":80 no\n",		 PRIVATE ":8080 no\n",
				       "[" UP6 "]:8086 no\n"};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		cr_assert(strstr(o.out, refused[i]), "reached %s%s", refused[i], o.out);
	lbt_out_free(&o);
}

RL_TEST(allow_host_opens_one_exception)
{
	struct lb_run_out o;

	lbt_run_net(&o, "on", PROBE(PRIVATE ":8080") PROBE(META ":80"), "--allow-host",
		    PRIVATE ":8080");
	LBT_ASSERT_EXIT(o, 0);
	cr_assert(strstr(o.out, PRIVATE ":8080 ok\n"), "--allow-host did not open it: %s", o.out);
	cr_assert(strstr(o.out, META ":80 no\n"), "metadata opened too: %s", o.out);
	lbt_out_free(&o);
	lbt_run_net(&o, "on", PROBE(PRIVATE ":8080"), "--allow-host", PRIVATE ":9999");
	cr_assert(strstr(o.out, PRIVATE ":8080 no\n"), "another port was opened: %s", o.out);
	lbt_out_free(&o);
	lbt_run_net(&o, "on", PROBE(HOST_OTHER ":18081"), "--allow-host", HOST_OTHER);
	cr_assert(strstr(o.out, HOST_OTHER ":18081 ok\n"), "ADDR did not open the host: %s", o.out);
	lbt_out_free(&o);
}

// A rootless "on" sandbox in the background: it runs script with /w (a work directory of
// nobody's), then says ready and stays until the test lets it go (bg_stop).
struct bg {
	struct lbt_proc p;
	char *dir, *done;
};

static void bg_start(struct bg *b, const char *name, const char *script)
{
	char *vol, *ready, *full;

	b->dir = lbt_mkdir_work(name);
	b->done = lbt_strdupf("%s/done", b->dir);
	vol = lbt_strdupf("%s:/w", b->dir);
	ready = lbt_strdupf("%s/ready", b->dir);
	full = lbt_strdupf("%s touch /w/ready; while [ ! -e /w/done ]; do sleep 0.1; done", script);
	cr_assert_eq(chown(b->dir, NOBODY, NOBODY), 0);
	lbt_spawn(&b->p, "run", "--rootfs", lbt_rootfs(), "--network", "on", "-v", vol, "--", "sh",
		  "-c", full, NULL);
	for (int i = 0; i < 100 && access(ready, F_OK) != 0; i++)
		usleep(100000);
	cr_assert_eq(access(ready, F_OK), 0, "the background sandbox did not get ready");
	free(vol), free(ready), free(full);
}

static void bg_stop(struct bg *b)
{
	struct lb_run_out o;

	lbt_write_file(b->done, "");
	lbt_wait(&b->p, &o, 20);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	free(b->dir), free(b->done);
}

RL_TEST(nothing_reaches_a_sandbox_from_outside)
{
	struct bg a;
	struct lb_run_out o;

	bg_start(&a, "a", "echo sandbox-a > /w/index.html; httpd -p 8080 -h /w &&");
	// another sandbox, on the address both share, and the host itself: no port forwarding
	lbt_run_net(&o, "on", PROBE(HOST ":8080"), NULL, NULL);
	cr_assert(strstr(o.out, HOST ":8080 no\n"), "reached sandbox a: %s", o.out);
	lbt_out_free(&o);
	char *cmd = lbt_strdupf("ip netns exec %s busybox wget -q -O - http://" HOST ":8080/ "
				"2>/dev/null; ip netns exec %s busybox wget -q -O - "
				"http://127.0.0.1:8080/ 2>/dev/null; true",
				R.hns, R.hns);
	char *got = lbt_sh_out(cmd);
	cr_assert(!strstr(got, "sandbox-a"), "the host reached sandbox a: %s", got);
	bg_stop(&a);
	free(cmd), free(got);
}

// `lbbox network inspect` reads each live rootless sandbox's counters from its namespace.
RL_TEST(dropped_traffic_is_counted_in_inspect)
{
	struct bg c;
	struct lb_run_out o;

	bg_start(&c, "c", PROBE(META ":80") PROBE(PRIVATE ":8080"));
	lbt_run(&o, "network", "inspect", NULL);
	LBT_ASSERT_EXIT(o, 0);
	json_t *j = lbt_json(o.out), *d = json_object_get(j, "dropped");
	cr_assert_eq(json_array_size(json_object_get(j, "sandboxes")), 1, "%s", o.out);
	const char *const counted[] = {"metadata", "private"};
	for (size_t i = 0; i < 2; i++)
		cr_assert_gt(
		    json_integer_value(json_object_get(json_object_get(d, counted[i]), "packets")),
		    0, "%s not counted: %s", counted[i], o.out);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(d, "host"), "packets")), 0,
		     "%s", o.out);
	json_decref(j);
	lbt_out_free(&o);
	lbt_run(&o, "network", "ls", NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert(strstr(o.out, "pasta"), "%s", o.out);
	lbt_out_free(&o);
	bg_stop(&c);
}

// `echo ran` in an "on" sandbox, with var=value in lbbox's environment.
static void run_on_with(struct lb_run_out *o, const char *var, const char *value)
{
	setenv(var, value, 1);
	lbt_run_net(o, "on", "echo ran", NULL, NULL);
	unsetenv(var);
}

RL_TEST(missing_pasta_is_one_clear_error)
{
	struct lb_run_out o;

	run_on_with(&o, "LBBOX_PASTA", "/nonexistent/pasta");
	lbt_assert_error_line(&o, 125, "needs pasta");
	cr_assert(strstr(o.err, "does not fall back"), "%s", o.err);
	lbt_out_free(&o);
}

RL_TEST(unusable_tun_is_one_clear_error)
{
	struct lb_run_out o;

	run_on_with(&o, "LBT_NO_TUN", "1");
	lbt_assert_error_line(&o, 125, "/dev/net/tun");
	lbt_out_free(&o);
}

RL_TEST(other_users_are_refused)
{
	struct lb_run_out o;

	lbt_run(&o, "run", "--rootfs", lbt_rootfs(), "--user", "1000", "--", "true", NULL);
	lbt_assert_error_line(&o, 125, "maps only your own user");
	lbt_out_free(&o);
}

// Sessions without root: LangBot's default limits need a delegated cgroup (refused without);
// with one, a session with network "on" keeps its pasta after `session create` returned,
// its execs join its user namespace and reach the upstream through the filter, and
// `session rm` ends pasta with the sandbox.
RL_TEST(sessions_with_network_on)
{
	struct lb_run_out o;

	lbt_run(&o, "session", "create", "rl1", "--rootfs", lbt_rootfs(), NULL);
	lbt_assert_error_line(&o, 125, "no writable cgroup");
	lbt_out_free(&o);
	lbt_delegate_cgroups(NOBODY, NOBODY);
	lbt_run(&o, "session", "create", "rl1", "--rootfs", lbt_rootfs(), "--network", "on", NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	cr_assert_eq(pastas(), 1, "the session's pasta is not running");
	lbt_run(&o, "session", "exec", "rl1", "--", "sh", "-c",
		"id -u; timeout 5 wget -q -O - http://" UP ":8080/cgi-bin/ip; " PROBE(META ":80"),
		NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "0\n" HOST "\n" META ":80 no\n");
	lbt_out_free(&o);
	// its pasta killed (by a logout, say): the session counts as dead, and is replaced
	cr_assert_eq(pastas_in_our_cgroups(true, "kill -KILL ${p#/proc/} && echo $p"), 1);
	for (int i = 0; i < 50 && pastas() > 0; i++)
		usleep(100000);
	lbt_run(&o, "session", "create", "rl1", "--rootfs", lbt_rootfs(), "--network", "on", NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	cr_assert_eq(pastas(), 1, "the replaced session has no pasta");
	lbt_run(&o, "session", "exec", "rl1", "--", "sh", "-c",
		"timeout 5 wget -q -O - http://" UP ":8080/cgi-bin/ip", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, HOST "\n");
	lbt_out_free(&o);
	lbt_run(&o, "session", "rm", "rl1", NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	cr_assert_eq(pastas(), 0, "pasta outlived its session");
}

RL_TEST(pasta_dies_with_a_killed_lbbox)
{
	struct lbt_proc p;
	struct lb_run_out o;

	lbt_add_marker("987653");
	lbt_spawn(&p, "run", "--rootfs", lbt_rootfs(), "--network", "on", "--", "sleep", "987653",
		  NULL);
	for (int i = 0; i < 100 && (pastas() != 1 || lbt_count_procs_with_arg("987653") != 1); i++)
		usleep(100000);
	cr_assert_eq(pastas(), 1, "no pasta");
	kill(p.pid, SIGKILL);
	lbt_wait(&p, &o, 10);
	lbt_out_free(&o);
	for (int i = 0; i < 50 && pastas() > 0; i++)
		usleep(100000);
	cr_assert_eq(pastas(), 0, "pasta outlived lbbox");
	// the orphaned sandbox ends with its command; the next lbbox collects its state
	cr_assert_eq(lbt_kill_marked("987653"), 1);
	cr_assert_eq(lbt_wait_procs_with_arg("987653", 0, 10), 0);
	lbt_run_net(&o, "off", "true", NULL, NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
}

RL_TEST(parallel_sandboxes_all_connect_and_clean_up, .timeout = 200)
{
	enum { N_SB = 10 };
	struct lb_run_out o[N_SB];

	lbt_run_on_parallel(N_SB, "timeout 5 wget -q -O - http://" UP ":8080/cgi-bin/ip", o, 60);
	for (int i = 0; i < N_SB; i++) {
		LBT_ASSERT_EXIT(o[i], 0);
		LBT_ASSERT_OUT(o[i], HOST "\n");
		lbt_out_free(&o[i]);
	}
}

// -p without root: pasta forwards TCP on the host's 127.0.0.1 to the sandbox (and only
// there); UDP and other addresses are refused, not silently dropped.
RL_TEST(publish_tcp_on_loopback_through_pasta)
{
	struct lbt_proc p;
	struct lb_run_out o;
	char *dir = lbt_mkdir_work("pub"), *vol = lbt_strdupf("%s:/w", dir);
	char *ready = lbt_strdupf("%s/ready", dir), *done = lbt_strdupf("%s/done", dir);
	cr_assert_eq(chown(dir, NOBODY, NOBODY), 0);
	lbt_spawn(&p, "run", "--rootfs", lbt_rootfs(), "--network", "on", "-p", "18090:8000", "-v",
		  vol, "--", "sh", "-c",
		  "nc -ll -p 8000 -e echo rootless & touch /w/ready; "
		  "while [ ! -e /w/done ]; do sleep 0.1; done",
		  NULL);
	for (int i = 0; i < 100 && access(ready, F_OK) != 0; i++)
		usleep(100000);
	char *cmd = lbt_strdupf("ip netns exec %s busybox nc 127.0.0.1 18090 </dev/null | "
				"grep -q rootless",
				R.hns);
	lbt_wait_ready(cmd);
	// another address of the host does not have it
	cr_assert_neq(lbt_sh("ip netns exec %s busybox nc -w 2 " HOST " 18090 </dev/null "
			     "2>/dev/null | grep -q rootless",
			     R.hns),
		      0, "published beyond 127.0.0.1");
	lbt_write_file(done, "");
	lbt_wait(&p, &o, 20);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	cr_assert_neq(lbt_sh("%s", cmd), 0, "the port outlived its sandbox");
	const char *refused[] = {"18091:80/udp", "0.0.0.0:18091:80", HOST ":18091:80"};
	for (size_t i = 0; i < 3; i++) {
		lbt_run(&o, "run", "--rootfs", lbt_rootfs(), "--network", "on", "-p", refused[i],
			"--", "true", NULL);
		lbt_assert_error_line(&o, 125, "TCP on 127.0.0.1 only");
		lbt_out_free(&o);
	}
	free(dir), free(vol), free(ready), free(done), free(cmd);
}

RL_TEST(cap_add_that_reaches_past_the_isolation_is_refused)
{
	struct lb_run_out o;

	// the filter lives in the sandbox's own namespace: these would undo or bypass it
	// (SYS_ADMIN: remount /proc/sys writable, then net sysctls of the namespace the user owns)
	const char *const net[] = {"NET_ADMIN", "NET_RAW", "SYS_ADMIN"};
	for (size_t i = 0; i < 3; i++) {
		lbt_run(&o, "run", "--rootfs", lbt_rootfs(), "--network", "on", "--cap-add", net[i],
			"--", "true", NULL);
		lbt_assert_error_line(&o, 125, net[i]);
		lbt_out_free(&o);
		// without network "on" there is nothing of the host's to reach
		lbt_run(&o, "run", "--rootfs", lbt_rootfs(), "--cap-add", net[i], "--", "true",
			NULL);
		LBT_ASSERT_EXIT(o, 0);
		lbt_out_free(&o);
	}
	// pid 1 holds every capability of the user namespace: tracing it would hand them over
	const char *const any[] = {"SYS_PTRACE", "ALL"};
	for (size_t i = 0; i < 2; i++) {
		lbt_run(&o, "run", "--rootfs", lbt_rootfs(), "--cap-add", any[i], "--", "true",
			NULL);
		lbt_assert_error_line(&o, 125, "SYS_PTRACE");
		lbt_out_free(&o);
	}
}

// An "on" run with a fake pasta (a shell script): exit 125, the command never ran, and the
// error names what pasta said.
static void run_fake_pasta(const char *script, const char *want_err)
{
	struct lb_run_out o;
	char *fake = lbt_strdupf("%s/rl/pasta-fake", lbt_workdir());

	lbt_write_file(fake, script);
	cr_assert_eq(chmod(fake, 0755), 0);
	run_on_with(&o, "LBBOX_PASTA", fake);
	LBT_ASSERT_EXIT(o, 125);
	cr_assert_str_eq(o.out, "", "the command ran: %s", o.out);
	cr_assert(strstr(o.err, want_err), "%s", o.err);
	lbt_out_free(&o);
	free(fake);
}

RL_TEST(pasta_failing_after_its_start_is_one_clear_error)
{
	run_fake_pasta("#!/bin/sh\necho 'Cannot frobnicate the tap' >&2\nexit 1\n",
		       "lbbox: pasta could not connect the sandbox: Cannot frobnicate the tap\n");
	// one that complains and stays, never configuring the interface: pid 1 gives up after
	// 10 s, with pasta's words; the fake pasta (lbbox's child) is killed, nothing is left
	lbt_add_marker("987654");
	run_fake_pasta("#!/bin/sh\necho 'Cannot add the route' >&2\nexec sleep 987654\n",
		       "did not configure the sandbox's network in 10 s (pasta: Cannot add the "
		       "route)\n");
	cr_assert_eq(lbt_wait_procs_with_arg("987654", 0, 5), 0, "the fake pasta is left");
}

// Without --root and --runroot: $HOME/.local/share/lbbox and $XDG_RUNTIME_DIR/lbbox, or a
// /tmp/lbbox-run-UID that must be the user's own.
RL_TEST(default_paths_are_the_users)
{
	char *xdg = lbt_mkdir_work("xdg"), *home = lbt_strdupf("%s/home", lbt_workdir());
	char *wrap = lbt_strdupf("%s/rl/lbbox-as-nobody", lbt_workdir());

	cr_assert_eq(chown(xdg, NOBODY, NOBODY), 0);
	char *cmd = lbt_strdupf("%s env XDG_RUNTIME_DIR=%s %s run --rootfs %s -- true 2>&1; echo "
				"rc=$?; ls -A %s/lbbox; ls -d %s/.local/share/lbbox/cache/seccomp",
				wrap, xdg, lbt_bin(), lbt_rootfs(), xdg, home);
	char *out = lbt_sh_out(cmd);
	// ran, left nothing in the runtime directory, used the store in $HOME (seccomp cache)
	char *want = lbt_strdupf("rc=0\n%s/.local/share/lbbox/cache/seccomp\n", home);
	cr_assert_str_eq(out, want, "%s", cmd);
	free(cmd), free(out), free(want);

	// someone else made /tmp/lbbox-run-65534 first: refused
	const char *tmp_run = "/tmp/lbbox-run-65534";
	cr_assert_eq(mkdir(tmp_run, 0755), 0, "%s exists on this host; the test needs it absent",
		     tmp_run);
	cmd = lbt_strdupf("%s %s run --rootfs %s -- true 2>&1; echo rc=$?", wrap, lbt_bin(),
			  lbt_rootfs());
	out = lbt_sh_out(cmd);
	rmdir(tmp_run);
	cr_assert_str_eq(out,
			 "lbbox: runtime directory /tmp/lbbox-run-65534 is not a private directory "
			 "of this user; set XDG_RUNTIME_DIR or --runroot\nrc=125\n",
			 "%s", out);
	free(cmd), free(out), free(xdg), free(home), free(wrap);
}

// Limits need a cgroup the user may write: refused without one, enforced in one delegated to
// the user (here the test's own private cgroups, handed to nobody), nested below it.
RL_TEST(limits_need_and_use_a_delegated_cgroup)
{
	struct lb_run_out o;

	lbt_run(&o, "run", "--memory", "64m", LBT_PROBE, "memhog", "16", NULL);
	lbt_assert_error_line(&o, 125, "no writable");
	lbt_out_free(&o);
	lbt_delegate_cgroups(NOBODY, NOBODY);
	lbt_run(&o, "run", "--json", "--memory", "64m", LBT_PROBE, "memhog", "200", NULL);
	LBT_ASSERT_EXIT(o, 137);
	cr_assert(strstr(o.out, "\"oom_killed\":true"), "not OOM-killed: %s", o.out);
	lbt_out_free(&o);
	lbt_run(&o, "run", "--pids", "32", LBT_PROBE, "forkbomb", "100", NULL);
	LBT_ASSERT_EXIT(o, 0);
	int forked = -1;
	cr_assert_eq(sscanf(o.out, "forked=%d", &forked), 1, "%s", o.out);
	cr_assert(forked > 0 && forked <= 32, "forked %d under --pids 32", forked);
	lbt_out_free(&o);
}

// An image whose files belong to root (every image does), with a whiteout and an opaque
// directory in its second layer: unpacked into the user's store without chown (only the user's
// uid exists here), its setuid bits dropped, the markers as user.overlay.* xattrs for a
// "userxattr" overlay. Inside, the files are root's (the user is uid 0 there).
RL_TEST(image_with_root_owned_files_and_whiteouts)
{
	struct lb_run_out o;
	char *layout = lbt_strdupf("%s/layout", lbt_workdir());
	const char *argv[] = {"python3",
			      LBBOX_SOURCE_DIR "/tests/security/mkimage.py",
			      layout,
			      "localhost/lbt-rl:1",
			      "--base",
			      lbt_rootfs(),
			      "file:bin/.wh.vi:644:",
			      "file:etc/.wh..wh..opq:644:",
			      "file:etc/only-new:644:new",
			      "file:bin/suid:4755:x",
			      NULL};
	cr_assert_eq(lbt_system(argv), 0);
	lbt_run(&o, "load", "--oci-dir", layout, NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	lbt_run(&o, "run", "--image", "localhost/lbt-rl:1", "--", "sh", "-c",
		"id -u; stat -c '%u %a' /bin/busybox /bin/suid; test -e /bin/vi || echo vi-gone; "
		"cat /etc/only-new; echo; test -e /etc/group || echo group-gone",
		NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "0\n0 755\n0 755\nvi-gone\nnew\ngroup-gone\n");
	lbt_out_free(&o);
	free(layout);
}

// --device without root: mknod is refused in the user namespace, so the host's node is bound
// (the wrapper's 0666 tun, which pid 1 checked is 10:200, at another path inside); it opens
// there.
RL_TEST(device_is_the_hosts_node_bound)
{
	struct lb_run_out o;

	lbt_run_net(&o, "off", "stat -c '%t:%T %a' /dev/tun2; (exec 3<>/dev/tun2) && echo opened",
		    "--device", "/dev/net/tun:/dev/tun2");
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "a:c8 666\nopened\n");
	lbt_out_free(&o);
}
