// -p / --publish with --network on, as root: a host port DNAT'd to the sandbox. On 127.0.0.1
// unless an address is given (never reachable from another machine then), on every address
// with 0.0.0.0, TCP and UDP; refused when the port is taken; gone with its sandbox, also when
// lbbox was killed. The "other machine" is a test network namespace behind a veth; the test's
// own bridge and a subnet no host address is in; nothing of either may remain.
#include "harness.h"
#include "harness_net.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CLIENT_HOST "172.31.251.1"
#define CLIENT_PEER "172.31.251.2"

static struct {
	char bridge[16], ns[32], vh[16], vn[16], subnet[24];
	int port; // a base host port for the test: port, port + 1, ...
	bool client;
} N;

// 10.234.M.0/24 with no host address in it (a killed earlier run may still hold one).
static void pick_subnet(void)
{
	for (int i = 0; i < 250; i++) {
		int m = ((int)getpid() + i) % 250 + 1;
		char *cmd = lbt_strdupf("ip -4 -o addr | grep -q ' 10\\.234\\.%d\\.'", m);
		bool used = lbt_sh("%s", cmd) == 0;
		free(cmd);
		if (!used) {
			snprintf(N.subnet, sizeof(N.subnet), "10.234.%d.0/24", m);
			return;
		}
	}
	cr_assert_fail("no free 10.234.M.0/24 subnet");
}

static void pub_init(void)
{
	int p = (int)getpid() % 100000;
	lbt_setup();
	snprintf(N.bridge, sizeof(N.bridge), "lbtp%d", p);
	snprintf(N.ns, sizeof(N.ns), "lbt-pubc-%d", p);
	snprintf(N.vh, sizeof(N.vh), "lbtc%dh", p);
	snprintf(N.vn, sizeof(N.vn), "lbtc%dn", p);
	N.port = 20000 + (int)(getpid() % 20000);
	pick_subnet();
	setenv("LBBOX_NET_BRIDGE", N.bridge, 1);
	setenv("LBBOX_NET_SUBNET", N.subnet, 1);
}

static void pub_cleanup(void)
{
	struct lb_run_out o;
	if (N.client) {
		lbt_sh("ip link del %s 2>/dev/null; ip netns del %s 2>/dev/null; true", N.vh, N.ns);
		N.client = false;
	}
	lbt_run(&o, "network", "prune", NULL);
	lbt_out_free(&o);
	lbt_sh("ip link del %s 2>/dev/null; nft delete table inet %s 2>/dev/null; true", N.bridge,
	       N.bridge);
}

static void pub_fini(void)
{
	pub_cleanup();
	lbt_teardown();
}

TestSuite(publish, .init = pub_init, .fini = pub_fini, .timeout = 240);

// A host on another machine, as far as the host can tell: a netns behind a veth.
static void client_up(void)
{
	N.client = true;
	cr_assert_eq(lbt_sh("ip netns add %s && ip link add %s type veth peer name %s netns %s && "
			    "ip addr add " CLIENT_HOST "/30 dev %s && ip link set %s up && "
			    "ip -n %s link set %s up && ip -n %s addr add " CLIENT_PEER
			    "/30 dev %s",
			    N.ns, N.vh, N.vn, N.ns, N.vh, N.vh, N.ns, N.vn, N.ns, N.vn),
		     0, "cannot build the client netns");
}

static char *map_elements(void)
{
	char *cmd = lbt_strdupf("(nft list map inet %s publish_addr; nft list map inet %s "
				"publish_any) | grep -c 'elements = ' || true",
				N.bridge, N.bridge);
	char *out = lbt_sh_out(cmd);
	free(cmd);
	return out;
}

// After the sandboxes are gone: no published port in the maps, route_localnet off.
static void assert_ports_gone(void)
{
	char *n = map_elements();
	cr_assert(n && atoi(n) == 0, "map elements left: %s", n ? n : "?");
	free(n);
	char *cmd = lbt_strdupf("cat /proc/sys/net/ipv4/conf/%s/route_localnet", N.bridge);
	char *v = lbt_sh_out(cmd);
	cr_assert(v && atoi(v) == 0, "route_localnet still %s", v ? v : "?");
	free(v), free(cmd);
}

// After prune: nothing of the test's network on the host.
static void assert_net_clean(void)
{
	pub_cleanup();
	cr_assert_neq(lbt_sh("ip link show %s >/dev/null 2>&1", N.bridge), 0, "bridge left");
	cr_assert_neq(lbt_sh("nft list table inet %s >/dev/null 2>&1", N.bridge), 0, "table left");
	cr_assert_neq(lbt_sh("ip netns list | grep -q '^%s'", N.ns), 0, "netns left");
}

static void stop(struct lbt_proc *p)
{
	struct lb_run_out o;
	kill(p->pid, SIGTERM);
	lbt_wait(p, &o, 20);
	lbt_out_free(&o);
}

Test(publish, tcp_on_loopback_by_default_and_every_address_with_0_0_0_0)
{
	struct lbt_proc p;
	char *lo = lbt_strdupf("%d:8000", N.port),
	     *any = lbt_strdupf("0.0.0.0:%d:8001", N.port + 1);
	client_up();
	lbt_spawn(&p, "run", "--network", "on", "-p", lo, "-p", any, "--rootfs", lbt_rootfs(), "--",
		  "sh", "-c",
		  "nc -ll -p 8000 -e echo loopback & nc -ll -p 8001 -e echo every & sleep 60",
		  NULL);
	char *cmd = lbt_strdupf("busybox nc 127.0.0.1 %d </dev/null | grep -q loopback", N.port);
	lbt_wait_ready(cmd);
	free(cmd);
	// the host's own loopback reaches both ports
	char *out = lbt_sh_out(lbt_strdupf("busybox nc 127.0.0.1 %d </dev/null", N.port + 1));
	cr_assert(out && strstr(out, "every"), "0.0.0.0 port from loopback: %s", out ?: "");
	free(out);
	// another machine reaches the 0.0.0.0 port on the host's address, never the loopback one
	out = lbt_sh_out(lbt_strdupf(
	    "ip netns exec %s busybox nc -w 2 " CLIENT_HOST " %d </dev/null", N.ns, N.port + 1));
	cr_assert(out && strstr(out, "every"), "0.0.0.0 port from the client: %s", out ?: "");
	free(out);
	cr_assert_neq(lbt_sh("ip netns exec %s busybox nc -w 2 " CLIENT_HOST " %d </dev/null "
			     "2>/dev/null | grep -q loopback",
			     N.ns, N.port),
		      0, "a 127.0.0.1 port was reachable from another machine");
	// nor with 127.0.0.1 as the destination, framed for the host by a neighbour on its link
	// (DNAT in prerouting would come before the kernel's martian check)
	char *spoof =
	    lbt_strdupf("ip netns exec %s python3 %s/tests/helpers/spoof_syn.py %s " CLIENT_PEER
			" $(cat /sys/class/net/%s/address) 127.0.0.1 %d",
			N.ns, LBBOX_SOURCE_DIR, N.vn, N.vh, N.port);
	out = lbt_sh_out(spoof);
	cr_assert(out && strstr(out, "silent"), "127.0.0.1 from the link was answered: %s",
		  out ?: "");
	free(out), free(spoof);
	// while route_localnet lets 127.0.0.1 leave through the bridge, nothing from the bridge
	// may reach the host's loopback (the to_host filter, and this drop before it)
	cr_assert_eq(lbt_sh("test $(cat /proc/sys/net/ipv4/conf/%s/route_localnet) = 1 && "
			    "nft list chain inet %s loopback_guard | "
			    "grep -q 'iifname != \"lo\" ip daddr 127.0.0.0/8 drop'",
			    N.bridge, N.bridge),
		     0, "no guard while route_localnet is on");
	stop(&p);
	assert_ports_gone();
	assert_net_clean();
	free(lo), free(any);
	lbt_assert_clean();
}

Test(publish, udp_is_forwarded)
{
	struct lbt_proc p;
	char *spec = lbt_strdupf("%d:9000/udp", N.port + 2);
	char *vol = lbt_strdupf("%s", lbt_probe_vol());
	lbt_spawn(&p, "run", "--network", "on", "-p", spec, "--rootfs", lbt_rootfs(), "-v", vol,
		  "--", lbt_probe(), "udp-echo", "9000", NULL);
	// UDP has no handshake: send until the answer comes (the probe may not listen yet), all
	// from one socket: the probe echoes one datagram only, and an early one held back while
	// the sandbox's address resolved may be the one it answers, after a client gave up on it
	char *cmd = lbt_strdupf("python3 -c 'import socket\n"
				"s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
				"s.settimeout(0.5)\n"
				"for i in range(40):\n"
				"    s.sendto(b\"ping\", (\"127.0.0.1\", %d))\n"
				"    try:\n"
				"        print(s.recv(100).decode())\n"
				"        break\n"
				"    except socket.timeout:\n"
				"        pass' | grep -q echo:ping",
				N.port + 2);
	lbt_wait_ready(cmd);
	free(cmd);
	struct lb_run_out o;
	lbt_wait(&p, &o, 20);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	assert_ports_gone();
	assert_net_clean();
	free(spec), free(vol);
	lbt_assert_clean();
}

static void assert_refused(const char *want, const char *spec, const char *net)
{
	struct lb_run_out o;
	lbt_run(&o, "run", "--network", net, "-p", spec, "--rootfs", lbt_rootfs(), "--", "true",
		NULL);
	LBT_ASSERT_EXIT(o, 125);
	cr_assert(strstr(o.err, want), "-p %s: expected '%s' in: %s", spec, want, o.err);
	cr_assert_eq(lbt_count_lines(o.err), 1, "not one line: %s", o.err);
	lbt_out_free(&o);
}

Test(publish, bad_and_taken_ports_are_refused_and_leave_nothing)
{
	const char *bad[] = {"0:80",   "70000", "80/sctp", "1.2.3:80:80",
			     "::80",   "a:80",	"80:",	   "127.0.0.1:80:80:80",
			     "8080:0", "",	"80/",	   "300.1.1.1:80:80"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_refused("invalid --publish", bad[i], "on");
	assert_refused("need --network on", "8080:80", "off");
	// not an address of this host (its own outgoing traffic would be diverted), not unicast
	assert_refused("not an address of this host", "192.0.2.77:8080:80", "on");
	assert_refused("not a unicast address", "224.0.0.1:8080:80/udp", "on");
	// a port a host process holds
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)(N.port + 3)),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(fd, 1), 0);
	char *taken = lbt_strdupf("%d:80", N.port + 3);
	assert_refused("in use on the host", taken, "on");
	close(fd);
	// twice in one run, and a port another sandbox publishes
	char *twice = lbt_strdupf("%d:80", N.port + 4);
	struct lb_run_out o;
	lbt_run(&o, "run", "--network", "on", "-p", twice, "-p", twice, "--rootfs", lbt_rootfs(),
		"--", "true", NULL);
	LBT_ASSERT_EXIT(o, 125);
	cr_assert(strstr(o.err, "published twice"), "%s", o.err);
	lbt_out_free(&o);
	struct lbt_proc p;
	lbt_spawn(&p, "run", "--network", "on", "-p", twice, "--rootfs", lbt_rootfs(), "--", "sh",
		  "-c", "nc -ll -p 80 -e echo first & sleep 60", NULL);
	char *cmd = lbt_strdupf("busybox nc 127.0.0.1 %d </dev/null | grep -q first", N.port + 4);
	lbt_wait_ready(cmd);
	char *every = lbt_strdupf("0.0.0.0:%d:81", N.port + 4);
	assert_refused("already published", every, "on");
	stop(&p);
	assert_ports_gone();
	assert_net_clean();
	free(taken), free(twice), free(cmd), free(every);
	lbt_assert_clean();
}

Test(publish, a_killed_lbbox_s_ports_are_collected)
{
	struct lbt_proc p;
	char *spec = lbt_strdupf("%d:8000", N.port + 5);
	lbt_spawn(&p, "run", "--network", "on", "--die-with-parent", "-p", spec, "--rootfs",
		  lbt_rootfs(), "--", "sh", "-c", "nc -ll -p 8000 -e echo up & sleep 60", NULL);
	char *cmd = lbt_strdupf("busybox nc 127.0.0.1 %d </dev/null | grep -q up", N.port + 5);
	lbt_wait_ready(cmd);
	kill(p.pid, SIGKILL);
	struct lb_run_out o;
	lbt_wait(&p, &o, 20);
	lbt_out_free(&o);
	// the sandbox dies with lbbox; the next lbbox on the network prunes its lease and port
	for (int i = 0; i < 100 && lbt_sh("%s", cmd) == 0; i++)
		usleep(100000);
	lbt_run(&o, "run", "--network", "on", "--rootfs", lbt_rootfs(), "--", "true", NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	assert_ports_gone();
	cr_assert_neq(lbt_sh("%s", cmd), 0, "the port still answers");
	assert_net_clean();
	free(spec), free(cmd);
	lbt_assert_clean();
}

// A detached run (a session and its process main) keeps its ports until it is removed.
Test(publish, a_detached_run_publishes_until_removed)
{
	struct lb_run_out o;
	char *spec = lbt_strdupf("%d:8000", N.port + 6);
	lbt_run(&o, "run", "-d", "--name", "lbt-pub", "--network", "on", "-p", spec, "--rootfs",
		lbt_rootfs(), "--", "sh", "-c", "nc -ll -p 8000 -e echo detached", NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	char *cmd =
	    lbt_strdupf("busybox nc 127.0.0.1 %d </dev/null | grep -q detached", N.port + 6);
	lbt_wait_ready(cmd);
	lbt_run(&o, "rm", "-f", "lbt-pub", NULL);
	LBT_ASSERT_EXIT(o, 0);
	lbt_out_free(&o);
	assert_ports_gone();
	cr_assert_neq(lbt_sh("%s", cmd), 0, "the port outlived its run");
	assert_net_clean();
	free(spec), free(cmd);
	lbt_assert_clean();
}
