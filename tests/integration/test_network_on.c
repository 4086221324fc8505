// --network on: veth + bridge + NAT, and the egress filter. Traffic never leaves this machine:
// every "outside" host is a test network namespace (lbt-up-<pid>) behind a veth, and a policy
// routing rule sends everything the test bridge forwards into that namespace, so even a filter
// bug could only reach the test's own servers. Addresses: the upstream link is 198.51.100.0/24
// (TEST-NET-2): host 198.51.100.1, upstream 198.51.100.2 (HTTP, DNS); in the upstream netns also
// 169.254.169.254 (fake metadata) and 192.168.253.2 (a private-range host). Each test has its
// own bridge lbtb<pid> and subnet 10.231.0.0/24 (LBBOX_NET_BRIDGE, LBBOX_NET_SUBNET); after it,
// no bridge, veth, nft table, route, rule, netns or allocation may remain.
#include "harness.h"
#include "harness_net.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define SUBNET	 "10.231.0.0/24"
#define GATEWAY	 "10.231.0.1"
#define UP_HOST	 "198.51.100.1"
#define UP_PEER	 "198.51.100.2"
#define META	 "169.254.169.254"
#define PRIVATE	 "192.168.253.2"
#define DNS_NAME "upstream.lbt.test"
#define DNS_ADDR "198.51.100.77"

static struct {
	char bridge[16], ns[32], uph[16], upn[16], table[8];
	bool up;
} N;

// The upstream netns with its HTTP servers (one CGI echoing the client address) and DNS.
static void upstream_up(void)
{
	char *www = lbt_mkdir_work("www");
	char *cgi = lbt_mkdir_work("www/cgi-bin");
	char *script = lbt_strdupf("%s/ip", cgi), *py = lbt_dns_responder();
	char *idx = lbt_strdupf("%s/index.html", www);

	lbt_write_file(script,
		       "#!/bin/sh\necho 'Content-Type: text/plain'\necho\necho \"$REMOTE_ADDR\"\n");
	chmod(script, 0755);
	lbt_write_file(idx, "upstream-ok\n");
	N.up = true;
	cr_assert_eq(lbt_sh("ip netns add %s && ip link add %s type veth peer name %s netns %s && "
			    "ip addr add " UP_HOST "/24 dev %s && ip link set %s up && "
			    "ip -n %s link set lo up && ip -n %s link set %s up && "
			    "ip -n %s addr add " UP_PEER "/24 dev %s && "
			    "ip -n %s addr add " META "/32 dev lo && ip -n %s addr add " PRIVATE
			    "/32 dev lo && "
			    "ip -n %s route add default via " UP_HOST " && "
			    "ip route add default via " UP_PEER " table %s && "
			    "ip rule add iif %s lookup %s pref 99",
			    N.ns, N.uph, N.upn, N.ns, N.uph, N.uph, N.ns, N.ns, N.upn, N.ns, N.upn,
			    N.ns, N.ns, N.ns, N.table, N.bridge, N.table),
		     0, "cannot build the upstream test netns");
	char *cmd = lbt_strdupf("exec ip netns exec %s busybox httpd -f -p " UP_PEER ":8080 -h %s",
				N.ns, www);
	lbt_serve(cmd), free(cmd);
	cmd = lbt_strdupf("exec ip netns exec %s busybox httpd -f -p " META ":80 -h %s", N.ns, www);
	lbt_serve(cmd), free(cmd);
	cmd = lbt_strdupf("exec ip netns exec %s busybox httpd -f -p " PRIVATE ":8080 -h %s", N.ns,
			  www);
	lbt_serve(cmd), free(cmd);
	cmd = lbt_strdupf("exec ip netns exec %s /usr/bin/python3 %s " UP_PEER " " DNS_ADDR, N.ns,
			  py);
	lbt_serve(cmd), free(cmd);
	cmd = lbt_strdupf("ip netns exec %s busybox wget -q -O - http://" UP_PEER ":8080/", N.ns);
	lbt_wait_ready(cmd), free(cmd);
	/* the DNS responder (Python) starts slower than httpd: wait for its answer too */
	cmd = lbt_strdupf("ip netns exec %s busybox nslookup " DNS_NAME " " UP_PEER, N.ns);
	lbt_wait_ready(cmd), free(cmd);
	free(www), free(cgi), free(script), free(py), free(idx);
}

static void net_env(const char *subnet)
{
	setenv("LBBOX_NET_BRIDGE", N.bridge, 1);
	setenv("LBBOX_NET_SUBNET", subnet, 1);
	unsetenv("LBBOX_NFT");
}

static void net_init(void)
{
	int p = (int)getpid() % 100000;

	lbt_setup();
	snprintf(N.bridge, sizeof(N.bridge), "lbtb%d", p);
	snprintf(N.ns, sizeof(N.ns), "lbt-up-%d", p);
	snprintf(N.uph, sizeof(N.uph), "lbtu%dh", p);
	snprintf(N.upn, sizeof(N.upn), "lbtu%dn", p);
	snprintf(N.table, sizeof(N.table), "%d", 20000 + p % 10000);
	net_env(SUBNET);
}

static void prune(void)
{
	struct lb_run_out o;

	lbt_run(&o, "network", "prune", NULL);
	lbt_out_free(&o);
}

// Removes everything this test made; safe to call twice, and after a failure.
static void net_cleanup(void)
{
	lbt_serve_stop_all();
	if (N.up) {
		lbt_sh("ip rule del pref 99 iif %s lookup %s 2>/dev/null; "
		       "ip route flush table %s 2>/dev/null; ip link del %s 2>/dev/null; "
		       "ip netns del %s 2>/dev/null",
		       N.bridge, N.table, N.table, N.uph, N.ns);
		N.up = false;
	}
	prune();
	unsetenv("LBBOX_NFT");
	lbt_sh("ip link del %s 2>/dev/null; nft delete table inet %s 2>/dev/null; true", N.bridge,
	       N.bridge);
}

static void net_fini(void)
{
	net_cleanup();
	lbt_teardown();
}

TestSuite(network_on, .init = net_init, .fini = net_fini, .timeout = 240);

// The veth pairs of finished sandboxes go with their netns, in the background: wait for that.
static int lbbox_links(void)
{
	int n = 0;

	for (int i = 0; i < 100; i++) {
		char *s = lbt_sh_out("ip -o link show | grep -c ': lbbox-'");
		n = s ? atoi(s) : -1;
		free(s);
		if (n == 0)
			break;
		usleep(50000);
	}
	return n;
}

// After prune: nothing of this test's network is left on the host.
static void assert_net_clean(void)
{
	net_cleanup();
	cr_assert_eq(lbbox_links(), 0, "lbbox-* veth left behind");
	cr_assert_neq(lbt_sh("ip link show %s >/dev/null 2>&1", N.bridge), 0,
		      "bridge %s left behind", N.bridge);
	cr_assert_neq(lbt_sh("nft list table inet %s >/dev/null 2>&1", N.bridge), 0,
		      "nft table %s left behind", N.bridge);
	cr_assert_neq(lbt_sh("ip netns list | grep -q '^%s'", N.ns), 0, "netns %s left behind",
		      N.ns);
	cr_assert_neq(lbt_sh("ip rule show | grep -q 'lookup %s'", N.table), 0,
		      "ip rule left behind");
	cr_assert_neq(lbt_sh("ip route show table all | grep -q '10\\.231\\.'"), 0,
		      "route of the test subnet left behind");
	cr_assert_neq(lbt_sh("ip -o addr show | grep -q '10\\.231\\.'"), 0,
		      "address of the test subnet left behind");
	char *dir = lbt_strdupf("%s/net", lbt_runroot());
	cr_assert_neq(access(dir, F_OK), 0, "allocation state %s left behind", dir);
	free(dir);
}

#define NET_TEST(name, ...)                                                                        \
	static void net_body_##name(void);                                                         \
	LBT_TEST(network_on, name, ##__VA_ARGS__)                                                  \
	{                                                                                          \
		net_body_##name();                                                                 \
		assert_net_clean();                                                                \
	}                                                                                          \
	static void net_body_##name(void)

// A counter of dropped traffic from `lbbox network inspect`.
static long dropped(const char *counter)
{
	struct lb_run_out o;
	long v = -1;

	lbt_run(&o, "network", "inspect", NULL);
	LBT_ASSERT_EXIT(o, 0);
	char *key = lbt_strdupf("\"%s\": {", counter), *p = strstr(o.out, key);
	char *pk = p ? strstr(p, "\"packets\":") : NULL;
	if (pk)
		v = strtol(pk + 10, NULL, 10);
	free(key);
	lbt_out_free(&o);
	return v;
}

NET_TEST(reaches_upstream_through_nat)
{
	struct lb_run_out o;

	upstream_up();
	lbt_run_net(&o, "on", "timeout 5 wget -q -O - http://" UP_PEER ":8080/cgi-bin/ip", NULL,
		    NULL);
	LBT_ASSERT_EXIT(o, 0);
	// the upstream sees the host's address on that link, not the sandbox's 10.231.0.x
	LBT_ASSERT_OUT(o, UP_HOST "\n");
	lbt_out_free(&o);
}

NET_TEST(sandbox_gets_address_route_and_hosts)
{
	struct lb_run_out o;

	lbt_run_net(&o, "on",
		    "ip -4 -o addr show eth0 | awk '{print $4}'; ip route | head -1; "
		    "ls /sys/class/net | tr '\\n' ' '; echo; grep -c localhost /etc/hosts; "
		    "awk -v h=$(hostname) '$2 == h {print \"hosts \" $1}' /etc/hosts",
		    NULL, NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert(strstr(o.out, "10.231.0."), "no address in the subnet: %s", o.out);
	// the hostname names the sandbox's own address, as with docker and podman
	char addr[32] = "";
	sscanf(o.out, "%31[0-9.]", addr);
	char *want = lbt_strdupf("hosts %s\n", addr);
	cr_assert(strstr(o.out, want), "hostname not mapped to %s: %s", addr, o.out);
	free(want);
	cr_assert(strstr(o.out, "/24\n"), "prefix: %s", o.out);
	cr_assert(strstr(o.out, "default via " GATEWAY " dev eth0"), "route: %s", o.out);
	cr_assert(strstr(o.out, "eth0 lo \n"), "interfaces: %s", o.out);
	lbt_out_free(&o);
}

NET_TEST(host_addresses_unreachable)
{
	struct lb_run_out o;
	char *www = lbt_mkdir_work("hostwww"), *idx = lbt_strdupf("%s/index.html", www), *cmd;

	upstream_up();
	lbt_write_file(idx, "host-service\n");
	lbt_run_net(&o, "on", "true", NULL,
		    NULL); // creates the bridge, so the gateway address exists
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	char *eth =
	    lbt_sh_out("ip -4 -o route get 192.0.2.1 | sed -n 's/.* src \\([0-9.]*\\).*/\\1/p'");
	lbt_chomp(eth);
	const char *addrs[] = {GATEWAY, UP_HOST, eth};
	for (int i = 0; i < 3; i++) {
		if (!*addrs[i])
			continue;
		cmd = lbt_strdupf("exec busybox httpd -f -p %s:18081 -h %s", addrs[i], www);
		lbt_serve(cmd), free(cmd);
		cmd = lbt_strdupf("busybox wget -q -O - http://%s:18081/", addrs[i]);
		lbt_wait_ready(cmd), free(cmd);
		cmd = lbt_strdupf("timeout 3 wget -q -O - http://%s:18081/ 2>&1; echo rc=$?",
				  addrs[i]);
		lbt_run_net(&o, "on", cmd, NULL, NULL);
		free(cmd);
		LBT_ASSERT_EXIT(o, 0);
		cr_assert(!strstr(o.out, "host-service"), "reached the host at %s: %s", addrs[i],
			  o.out);
		cr_assert(!strstr(o.out, "rc=0"), "wget to %s succeeded: %s", addrs[i], o.out);
		lbt_out_free(&o);
	}
	cr_assert_gt(dropped("host"), 0, "the host counter did not count");
	free(eth), free(www), free(idx);
}

NET_TEST(other_sandbox_unreachable)
{
	char *dir = lbt_mkdir_work("a"), *vol = lbt_strdupf("%s:/w", dir);
	char *ipfile = lbt_strdupf("%s/ip", dir);
	struct lbt_proc a;
	struct lb_run_out o, oa;

	char *idx = lbt_strdupf("%s/index.html", dir);
	lbt_write_file(idx, "sandbox-a\n");
	free(idx);
	lbt_spawn(&a, "run", "--rootfs", lbt_rootfs(), "--network", "on", "--read-only=false", "-v",
		  vol, "--", "sh", "-c",
		  "ip -4 -o addr show eth0 | awk '{print $4}' | cut -d/ -f1 > /w/ip.tmp; "
		  "mv /w/ip.tmp /w/ip; exec httpd -f -p 8080 -h /w",
		  NULL);
	char *ip = NULL;
	for (int i = 0; i < 100 && !(ip = lbt_read_file(ipfile)); i++)
		usleep(50000);
	cr_assert_not_null(ip, "sandbox A did not start");
	lbt_chomp(ip);
	char *check = lbt_strdupf("busybox wget -q -O - http://%s:8080/", ip);
	lbt_wait_ready(check); // the host itself may reach a sandbox
	char *script = lbt_strdupf("timeout 3 wget -q -O - http://%s:8080/ 2>&1; echo rc=$?", ip);
	lbt_run_net(&o, "on", script, NULL, NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert(!strstr(o.out, "sandbox-a"), "reached the other sandbox: %s", o.out);
	cr_assert(!strstr(o.out, "rc=0"), "wget succeeded: %s", o.out);
	lbt_out_free(&o);
	kill(a.pid, SIGTERM);
	lbt_wait(&a, &oa, 10);
	lbt_out_free(&oa);
	free(dir), free(vol), free(ipfile), free(ip), free(check), free(script);
}

NET_TEST(metadata_unreachable)
{
	struct lb_run_out o;

	upstream_up();
	char *cmd = lbt_strdupf("ip netns exec %s busybox wget -q -O - http://" META "/", N.ns);
	lbt_wait_ready(cmd);
	free(cmd);
	lbt_run_net(&o, "on", "timeout 3 wget -q -O - http://" META "/ 2>&1; echo rc=$?", NULL,
		    NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert(!strstr(o.out, "upstream-ok"), "reached the metadata address: %s", o.out);
	cr_assert(!strstr(o.out, "rc=0"), "wget succeeded: %s", o.out);
	lbt_out_free(&o);
	cr_assert_gt(dropped("metadata"), 0, "the metadata counter did not count");
}

NET_TEST(private_range_only_with_allow_host)
{
	struct lb_run_out o;
	const char *get = "timeout 3 wget -q -O - http://" PRIVATE ":8080/ 2>&1; echo rc=$?";

	upstream_up();
	lbt_run_net(&o, "on", get, NULL, NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert(!strstr(o.out, "upstream-ok") && !strstr(o.out, "rc=0"),
		  "reached a private host without --allow-host: %s", o.out);
	lbt_out_free(&o);
	cr_assert_gt(dropped("private"), 0, "the private counter did not count");

	lbt_run_net(&o, "on", get, "--allow-host", PRIVATE ":9999"); // another port: still closed
	cr_assert(!strstr(o.out, "rc=0"), "--allow-host opened another port: %s", o.out);
	lbt_out_free(&o);

	lbt_run_net(&o, "on", get, "--allow-host", PRIVATE ":8080");
	LBT_ASSERT_EXIT(o, 0);
	cr_assert(strstr(o.out, "upstream-ok\nrc=0"), "--allow-host did not open it: %s", o.out);
	lbt_out_free(&o);

	lbt_run_net(&o, "on", get, "--allow-host", PRIVATE);
	cr_assert(strstr(o.out, "upstream-ok\nrc=0"), "--allow-host ADDR did not open it: %s",
		  o.out);
	lbt_out_free(&o);
	// the exception was the sandbox's own: it is gone with it
	lbt_run_net(&o, "on", get, NULL, NULL);
	cr_assert(!strstr(o.out, "rc=0"), "exception outlived its sandbox: %s", o.out);
	lbt_out_free(&o);
	char *cmd = lbt_strdupf("nft list set inet %s allow_port", N.bridge);
	char *sets = lbt_sh_out(cmd);
	free(cmd);
	cr_assert(!strstr(sets, PRIVATE), "allow element left: %s", sets);
	free(sets);
}

NET_TEST(dns_uses_configured_upstream)
{
	struct lb_run_out o;

	upstream_up();
	lbt_run_net(&o, "on", "cat /etc/resolv.conf; nslookup " DNS_NAME " 2>&1", "--dns", UP_PEER);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert(strstr(o.out, "nameserver " UP_PEER "\n"), "resolv.conf: %s", o.out);
	cr_assert(strstr(o.out, DNS_ADDR), "not resolved by the test resolver: %s", o.out);
	lbt_out_free(&o);
}

NET_TEST(default_resolvers_are_the_hosts_upstream)
{
	struct lb_run_out o;

	lbt_run_net(&o, "on", "grep nameserver /etc/resolv.conf", NULL, NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert(!strstr(o.out, "nameserver 127."), "a loopback stub in resolv.conf: %s", o.out);
	lbt_out_free(&o);
}

NET_TEST(off_still_has_only_lo)
{
	struct lb_run_out o;

	lbt_run_net(&o, "on", "true", NULL, NULL);
	lbt_out_free(&o);
	lbt_run(&o, "run", "--network", "off", LBT_PROBE, "ls", "/sys/class/net", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "lo\n");
	lbt_out_free(&o);
}

NET_TEST(fifty_in_parallel_get_distinct_addresses, .timeout = 200)
{
	enum { N_SB = 50 };
	struct lb_run_out o[N_SB];

	lbt_run_on_parallel(N_SB, "ip -4 -o addr show eth0 | awk '{print $4}'; sleep 1", o, 120);
	for (int i = 0; i < N_SB; i++) {
		LBT_ASSERT_EXIT(o[i], 0);
		cr_assert(strncmp(o[i].out, "10.231.0.", 9) == 0, "address: %s", o[i].out);
		for (int j = 0; j < i; j++)
			cr_assert_str_neq(o[i].out, o[j].out, "sandboxes %d and %d share %s", i, j,
					  o[i].out);
	}
	for (int i = 0; i < N_SB; i++)
		lbt_out_free(&o[i]);
	struct lb_run_out ls;
	lbt_run(&ls, "network", "ls", "--json", NULL);
	cr_assert(strstr(ls.out, "\"sandboxes\": 0"), "leases left: %s", ls.out);
	lbt_out_free(&ls);
}

// The runroot holds the network state and no sandbox state directory.
static bool only_net_in_runroot(void)
{
	char *cmd = lbt_strdupf("ls %s | grep -vx net | wc -l", lbt_runroot());
	char *n = lbt_sh_out(cmd);
	bool ok = n && atoi(n) == 0;

	free(cmd), free(n);
	return ok;
}

NET_TEST(killed_lbbox_lease_is_collected)
{
	struct lbt_proc p;
	struct lb_run_out o;

	lbt_add_marker("987652");
	lbt_spawn(&p, "run", "--rootfs", lbt_rootfs(), "--network", "on", "--", "sleep", "1.5",
		  NULL);
	for (int i = 0; i < 100 && lbt_count_procs_with_arg("1.5") == 0; i++)
		usleep(20000);
	usleep(200000);
	kill(p.pid, SIGKILL);
	lbt_wait(&p, &o, 10);
	lbt_out_free(&o);
	cr_assert_eq(lbt_wait_procs_with_arg("1.5", 0, 10), 0, "sandbox still running");
	// the next sandbox's start collects the dead one's state, cgroups and lease (once its pid
	// 1, orphaned when lbbox died, has been reaped by whoever inherited it)
	bool collected = false;
	for (int i = 0; i < 20 && !collected; i++) {
		usleep(100000);
		lbt_run_net(&o, "on", "true", NULL, NULL);
		LBT_ASSERT_EXIT(o, 0);
		lbt_out_free(&o);
		lbt_run(&o, "network", "ls", "--json", NULL);
		collected = strstr(o.out, "\"sandboxes\": 0") != NULL && only_net_in_runroot();
		lbt_out_free(&o);
	}
	cr_assert(collected, "lease of the killed sandbox left");
}

NET_TEST(removed_table_is_put_back)
{
	struct lb_run_out o;

	lbt_run_net(&o, "on", "true", NULL, NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	cr_assert_eq(lbt_sh("nft delete table inet %s", N.bridge), 0);
	lbt_run_net(&o, "on", "true", NULL, NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	cr_assert_eq(lbt_sh("nft list chain inet %s egress >/dev/null", N.bridge), 0,
		     "a sandbox ran without its filter");
}

NET_TEST(ls_and_inspect)
{
	struct lb_run_out o;

	lbt_run_net(&o, "on", "true", NULL, NULL);
	lbt_out_free(&o);
	lbt_run(&o, "network", "ls", NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert(strstr(o.out, N.bridge) && strstr(o.out, SUBNET), "ls: %s", o.out);
	lbt_out_free(&o);
	lbt_run(&o, "network", "inspect", NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert(strstr(o.out, "\"dropped\"") && strstr(o.out, "\"metadata\"") &&
		      strstr(o.out, "\"gateway\": \"" GATEWAY "\""),
		  "inspect: %s", o.out);
	lbt_out_free(&o);
}

NET_TEST(host_mode_warns)
{
	struct lb_run_out o;

	lbt_run(&o, "run", "--network", "host", "--", "true", NULL);
	LBT_ASSERT_EXIT(o, 0);
	cr_assert_eq(lbt_count_lines(o.err), 1, "stderr: %s", o.err);
	cr_assert(strstr(o.err, "lbbox: warning: --network host is unsafe"), "stderr: %s", o.err);
	lbt_out_free(&o);
	lbt_run(&o, "run", "--json", "--network", "host", "--", "true", NULL);
	cr_assert_str_empty(o.err, "--json printed: %s", o.err);
	lbt_out_free(&o);
}

// Bad input: exit 125, one "lbbox: " line, and nothing created.
static void assert_refused(const char *what, const char *opt1, const char *opt2)
{
	struct lb_run_out o;

	lbt_run_net(&o, "on", "true", opt1, opt2);
	lbt_assert_error_line(&o, 125, what);
	lbt_out_free(&o);
	cr_assert_neq(lbt_sh("ip link show %s >/dev/null 2>&1", N.bridge), 0, "bridge created");
	cr_assert_neq(lbt_sh("nft list table inet %s >/dev/null 2>&1", N.bridge), 0,
		      "table created");
	cr_assert_eq(lbbox_links(), 0, "veth left");
}

NET_TEST(bad_input_is_refused_cleanly)
{
	const char *bad_allow[] = {"1.2.3", "10.0.0.1:0", "10.0.0.1:70000", "host:80",
				   ":80",   "10.0.0.1:",  "10.0.0.1:8x",    "::1"};

	for (size_t i = 0; i < sizeof(bad_allow) / sizeof(bad_allow[0]); i++)
		assert_refused("--allow-host", "--allow-host", bad_allow[i]);
	assert_refused("--dns", "--dns", "nameserver");
	const char *bad_subnets[] = {"10.231.0.1/24", "10.231.0.0",   "10.231.0.0/33",
				     "10.231.0.0/30", "300.1.0.0/16", "garbage"};
	for (size_t i = 0; i < sizeof(bad_subnets) / sizeof(bad_subnets[0]); i++) {
		setenv("LBBOX_NET_SUBNET", bad_subnets[i], 1);
		assert_refused("invalid subnet", NULL, NULL);
	}
	// overlaps the host's own network
	char *route = lbt_sh_out("ip -4 -o addr show scope global | awk '{print $4; exit}'");
	lbt_chomp(route);
	if (*route) {
		char *cmd =
		    lbt_strdupf("busybox ipcalc -n -p %s | sed 's/.*=//' | paste -sd/", route);
		char *net = lbt_sh_out(cmd);
		free(cmd);
		lbt_chomp(net);
		setenv("LBBOX_NET_SUBNET", net, 1);
		assert_refused("overlaps", NULL, NULL);
		free(net);
	}
	free(route);
	net_env(SUBNET);
	struct lb_run_out o;
	lbt_run(&o, "run", "--allow-host", "10.0.0.1", "--", "true", NULL);
	lbt_assert_error_line(&o, 125, "--network on");
	lbt_out_free(&o);
}

NET_TEST(missing_nft_is_refused_cleanly)
{
	setenv("LBBOX_NFT", "/nonexistent/nft", 1);
	assert_refused("nftables is not installed", NULL, NULL);
	unsetenv("LBBOX_NFT");
}

NET_TEST(bridge_name_in_use_is_refused)
{
	// someone else's bridge of that name: no lbbox alias
	cr_assert_eq(lbt_sh("ip link add %s type bridge", N.bridge), 0);
	struct lb_run_out o;
	lbt_run_net(&o, "on", "true", NULL, NULL);
	lbt_assert_error_line(&o, 125, "in use by something else");
	lbt_out_free(&o);
	cr_assert_neq(lbt_sh("ip -o addr show dev %s | grep -q inet", N.bridge), 0,
		      "the foreign bridge got an address");
	cr_assert_neq(lbt_sh("nft list table inet %s >/dev/null 2>&1", N.bridge), 0,
		      "table created");
	lbt_run(&o, "network", "prune", NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	cr_assert_eq(lbt_sh("ip link show %s >/dev/null", N.bridge), 0,
		     "prune removed a foreign bridge");
	lbt_sh("ip link del %s", N.bridge);
}

NET_TEST(exhausted_pool_is_refused_cleanly)
{
	enum { POOL = 13 }; // a /28 has 16 addresses: network, gateway and broadcast are not given
	struct lbt_proc p[POOL];
	struct lb_run_out o;

	setenv("LBBOX_NET_SUBNET", "10.231.0.0/28", 1);
	lbt_add_marker("987653");
	for (int i = 0; i < POOL; i++)
		lbt_spawn(&p[i], "run", "--rootfs", lbt_rootfs(), "--network", "on", "--", "sleep",
			  "987653", NULL);
	cr_assert_eq(lbt_wait_procs_with_arg("987653", POOL, 30), POOL, "sandboxes did not start");
	// the processes are up; their leases were written before pid 1 was released
	lbt_run_net(&o, "on", "true", NULL, NULL);
	lbt_assert_error_line(&o, 125, "exhausted");
	lbt_out_free(&o);
	for (int i = 0; i < POOL; i++)
		kill(p[i].pid, SIGTERM);
	for (int i = 0; i < POOL; i++) {
		lbt_wait(&p[i], &o, 20);
		lbt_out_free(&o);
	}
	lbt_run(&o, "network", "ls", "--json", NULL);
	cr_assert(strstr(o.out, "\"sandboxes\": 0"), "leases left: %s", o.out);
	lbt_out_free(&o);
}
