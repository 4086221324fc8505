/*
 * What this host really gives a sandbox, found by trying (not by guessing from versions):
 * namespaces (a child unshares all of them), cgroup limits (a probe cgroup with every limit is
 * created and removed), seccomp, overlayfs, the network modes. Reported by `lbbox info` and the
 * Box runtime's health, so a limit the host cannot enforce is said, never silently skipped.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/sandbox/cgroup.h"
#include "lbbox/sandbox/features.h"
#include "lbbox/sandbox/net.h"
#include "lbbox/sandbox/sandbox.h"
#include "lbbox/base/util.h"

#define ALL_NS                                                                                     \
	(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWCGROUP)

/* Rootless, the sandbox's namespaces come with a user namespace that owns them. */
static bool can_unshare(bool rootless)
{
	int status;
	pid_t pid = fork();
	if (pid == 0)
		_exit(unshare(ALL_NS | (rootless ? CLONE_NEWUSER : 0)) == 0 ? 0 : 1);
	if (pid < 0)
		return false;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* One probe cgroup per limit: which of memory, pids, cpu this host lets lbbox enforce. */
static bool can_limit(const struct lb_cgroup_limits *lim, enum lb_cgroup_version *v)
{
	char name[40] = "lbbox-probe-";
	struct lb_cgroup *cg = NULL;
	if (lb_random_hex(name + strlen(name), 12, NULL) < 0 ||
	    lb_cgroup_create(name, NULL, lim, &cg, NULL) < 0)
		return false;
	*v = lb_cgroup_version(cg);
	lb_cgroup_destroy(cg, NULL);
	return true;
}

static bool file_has(const char *path, const char *word)
{
	_cleanup_free_ char *s = NULL;
	return lb_read_file(path, 1 << 16, &s, NULL, NULL) == 0 && strstr(s, word);
}

json_t *lb_host_features(void)
{
	enum lb_cgroup_version v = LB_CGROUP_NONE;
	struct lb_cgroup_limits mem = {.memory_bytes = 64ull << 20}, pids = {.pids = 64},
				cpu = {.cpu_quota_us = 50000, .cpu_period_us = 100000}, none = {0};
	bool rootless = lb_rootless(), ns = can_unshare(rootless);
	bool m = can_limit(&mem, &v), p = can_limit(&pids, &v), c = can_limit(&cpu, &v);
	if (!m && !p && !c)
		can_limit(&none, &v);
	bool seccomp = prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0 &&
		       file_has("/proc/sys/kernel/seccomp/actions_avail", "errno");
	bool nft = access("/usr/sbin/nft", X_OK) == 0;
	struct lb_net_opts defaults = {0};
	bool on =
	    ns && (rootless ? lb_net_pasta_check(&defaults, NULL) == 0 : nft && geteuid() == 0);
	return json_pack("{s:b, s:b, s:{s:i, s:b, s:b, s:b}, s:b, s:b, s:{s:b, s:b, s:b}}",
			 "rootless", rootless, "namespaces", ns, "cgroups", "version", (int)v,
			 "memory", m, "pids", p, "cpu", c, "seccomp", seccomp, "overlay",
			 file_has("/proc/filesystems", "\toverlay\n"), "network", "off", ns, "on",
			 on, "host", true);
}
