// Network isolation: --network off (default) has only a working loopback; --network host.
// Never sends to real non-local addresses: 192.0.2.1 is TEST-NET-1 (RFC 5737).
#include "harness.h"

#include <stdlib.h>
#include <string.h>

LBT_SUITE(network);

// Interface names from /proc/net/dev ("lo eth0 ..."), as seen in the sandbox or on the host.
static char *ifaces_of(const char *procnetdev)
{
	char *res = strdup("");
	char *save = NULL, *copy = strdup(procnetdev);

	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *colon = strchr(l, ':'), *name = l;
		char *next;

		if (!colon || strchr(l, '|'))
			continue;
		*colon = '\0';
		name += strspn(name, " ");
		next = lbt_strdupf("%s%s%s", res, *res ? " " : "", name);
		free(res);
		res = next;
	}
	free(copy);
	return res;
}

LBT_TEST(network, only_loopback_in_sys_class_net)
{
	struct lb_run_out o;

	lbt_run(&o, "run", LBT_PROBE, "ls", "/sys/class/net", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "lo\n");
	lbt_out_free(&o);
}

LBT_TEST(network, only_loopback_in_proc_net_dev)
{
	struct lb_run_out o;
	char *names;

	lbt_run(&o, "run", "--", "cat", "/proc/net/dev", NULL);
	LBT_ASSERT_EXIT(o, 0);
	names = ifaces_of(o.out);
	cr_assert_str_eq(names, "lo", "interfaces: %s", names);
	free(names);
	lbt_out_free(&o);
}

LBT_TEST(network, loopback_is_up)
{
	struct lb_run_out o;

	lbt_run(&o, "run", LBT_PROBE, "listen-connect", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "ok\n");
	lbt_out_free(&o);
}

LBT_TEST(network, loopback_server_reachable_from_another_process)
{
	struct lb_run_out o;

	// busybox nc from the test rootfs: a listener in the background, a client in front.
	lbt_run(&o, "run", "--rootfs", lbt_rootfs(), "--", "sh", "-c",
		"nc -l -p 18080 -e echo pong & "
		"for i in 1 2 3 4 5 6 7 8 9 10; do "
		"  r=$(echo ping | nc 127.0.0.1 18080 2>/dev/null) && [ -n \"$r\" ] && break; "
		"  sleep 0.2; "
		"done; echo \"got $r\"",
		NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "got pong\n");
	lbt_out_free(&o);
}

LBT_TEST(network, outside_address_unreachable)
{
	struct lb_run_out o;

	lbt_run(&o, "run", LBT_PROBE, "connect", "192.0.2.1", "80", NULL);
	LBT_ASSERT_OUT(o, "ENETUNREACH\n");
	cr_assert_lt(o.secs, 2.5, "connect did not fail immediately (%.1f s)", o.secs);
	lbt_out_free(&o);
}

LBT_TEST(network, explicit_off_is_the_default)
{
	struct lb_run_out o;

	lbt_run(&o, "run", "--network", "off", LBT_PROBE, "ls", "/sys/class/net", NULL);
	LBT_ASSERT_EXIT(o, 0);
	LBT_ASSERT_OUT(o, "lo\n");
	lbt_out_free(&o);
}

LBT_TEST(network, host_network_sees_host_interfaces)
{
	struct lb_run_out o;
	char *host_dev = lbt_read_file("/proc/net/dev");
	char *host = ifaces_of(host_dev), *inside;

	lbt_run(&o, "run", "--network", "host", "--", "cat", "/proc/net/dev", NULL);
	LBT_ASSERT_EXIT(o, 0);
	inside = ifaces_of(o.out);
	cr_assert_str_eq(inside, host, "--network host sees %s, host has %s", inside, host);
	free(inside);
	free(host);
	free(host_dev);
	lbt_out_free(&o);
}

// LangBot's offline_readonly profile locks the network off: host (and on) are refused, not
// silently changed; its other locks and defaults hold on a one-shot run.
LBT_TEST(network, offline_readonly_profile_refuses_host)
{
	struct lb_run_out o;
	lbt_run(&o, "run", "--profile", "offline_readonly", "--network", "host", "--", "true",
		NULL);
	lbt_assert_error_line(&o, 125, "--network host is refused by the offline_readonly profile");
	lbt_out_free(&o);
	lbt_run(&o, "run", "--profile", "offline_readonly", "--network", "on", "--", "true", NULL);
	lbt_assert_error_line(&o, 125, "--network on is refused by the offline_readonly profile");
	lbt_out_free(&o);
	char *dir = lbt_mkdir_work("data");
	char *vol = lbt_strdupf("%s:/data", dir);
	lbt_run(&o, "run", "--profile", "offline_readonly", "--rootfs", lbt_rootfs(), "-v", vol,
		"--", "sh", "-c",
		"echo x > /data/f 2>/dev/null && echo writable; tail -n +3 /proc/net/dev | wc -l; "
		"cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || "
		"cat /sys/fs/cgroup/memory.max",
		NULL);
	LBT_ASSERT_OUT(o, "1\n268435456\n"); // volume forced read-only, only lo, 256 MiB
	lbt_out_free(&o);
	free(dir), free(vol);
	lbt_run(&o, "run", "--profile", "nope", "--", "true", NULL);
	lbt_assert_error_line(&o, 125, "unknown box profile 'nope'");
	lbt_out_free(&o);
}
