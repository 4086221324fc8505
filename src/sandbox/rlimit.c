/* Resource limits of the command: sane defaults (nofile 1024, no core dumps), then the user's.
 * No RLIMIT_AS by default: it breaks runtimes that reserve address space (node, uv, Go).
 * Also its oom_score_adj. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/resource.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/sandbox/sandbox.h"
#include "engine.h"

/* Docker's --ulimit names; the OCI config's are these upper-cased after "RLIMIT_". */
static const char *const rlimit_names[RLIM_NLIMITS] = {
    [RLIMIT_CPU] = "cpu",	    [RLIMIT_FSIZE] = "fsize",
    [RLIMIT_DATA] = "data",	    [RLIMIT_STACK] = "stack",
    [RLIMIT_CORE] = "core",	    [RLIMIT_RSS] = "rss",
    [RLIMIT_NPROC] = "nproc",	    [RLIMIT_NOFILE] = "nofile",
    [RLIMIT_MEMLOCK] = "memlock",   [RLIMIT_AS] = "as",
    [RLIMIT_LOCKS] = "locks",	    [RLIMIT_SIGPENDING] = "sigpending",
    [RLIMIT_MSGQUEUE] = "msgqueue", [RLIMIT_NICE] = "nice",
    [RLIMIT_RTPRIO] = "rtprio",	    [RLIMIT_RTTIME] = "rttime"};

const char *lb_rlimit_name(int resource)
{
	return resource >= 0 && resource < RLIM_NLIMITS && rlimit_names[resource]
		   ? rlimit_names[resource]
		   : "?";
}

int lb_rlimit_by_name(const char *name)
{
	for (int i = 0; i < RLIM_NLIMITS; i++)
		if (rlimit_names[i] && !strcmp(name, rlimit_names[i]))
			return i;
	return -1;
}

/* The one refusal a user can act on: raising a hard limit needs CAP_SYS_RESOURCE. */
static int raise_refused(int resource, rlim_t soft, rlim_t hard, rlim_t cur, struct lb_err **err)
{
	return lb_err_set(err, 0,
			  "rlimit %s=%llu:%llu: raising the hard limit (%llu) needs "
			  "CAP_SYS_RESOURCE, which lbbox does not have here",
			  lb_rlimit_name(resource), (unsigned long long)soft,
			  (unsigned long long)hard, (unsigned long long)cur);
}

/* fs.nr_open: no hard limit of open files above it, whatever the capabilities */
static rlim_t nr_open(void)
{
	char buf[32] = "";
	_cleanup_close_ int fd = open("/proc/sys/fs/nr_open", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	return n > 0 ? (rlim_t)strtoull(buf, NULL, 10) : RLIM_INFINITY;
}

int lb_spec_check_rlimits(const struct lb_spec *spec, struct lb_err **err)
{
	bool userns = spec->n_uid_map || spec->userns_path || lb_rootless();
	for (size_t i = 0; i < spec->n_rlimits; i++) {
		const struct lb_rlimit *r = &spec->rlimits[i];
		struct rlimit cur;
		/* the first would lower the hard limit the second then cannot reach */
		for (size_t k = 0; k < i; k++)
			if (spec->rlimits[k].resource == r->resource)
				return lb_err_set(err, 0, "rlimit %s given twice",
						  lb_rlimit_name(r->resource));
		rlim_t most = r->resource == RLIMIT_NOFILE && r->hard != RLIM_INFINITY
				  ? nr_open()
				  : RLIM_INFINITY;
		if (r->hard > most)
			return lb_err_set(err, 0,
					  "rlimit nofile=%llu:%llu: above the kernel's fs.nr_open "
					  "(%llu)",
					  (unsigned long long)r->soft, (unsigned long long)r->hard,
					  (unsigned long long)most);
		if (getrlimit(r->resource, &cur) < 0)
			return lb_err_set(err, errno, "getrlimit %s", lb_rlimit_name(r->resource));
		/* CAP_SYS_RESOURCE of the initial user namespace, which a command in a user
		 * namespace of its own never has */
		if (cur.rlim_max != RLIM_INFINITY && r->hard > cur.rlim_max &&
		    (userns || !lb_cap_effective(CAP_SYS_RESOURCE)))
			return raise_refused(r->resource, r->soft, r->hard, cur.rlim_max, err);
	}
	return 0;
}

static int set_one(int resource, rlim_t soft, rlim_t hard, bool clamp, struct lb_err **err)
{
	struct rlimit cur, want = {soft, hard};
	if (getrlimit(resource, &cur) < 0)
		return lb_err_set(err, errno, "getrlimit %d", resource);
	/* Defaults never try to raise a hard limit: without CAP_SYS_RESOURCE that fails. */
	if (clamp && cur.rlim_max != RLIM_INFINITY && want.rlim_max > cur.rlim_max) {
		want.rlim_max = cur.rlim_max;
		if (want.rlim_cur > want.rlim_max)
			want.rlim_cur = want.rlim_max;
	}
	if (setrlimit(resource, &want) == 0)
		return 0;
	if (errno == EPERM && cur.rlim_max != RLIM_INFINITY && want.rlim_max > cur.rlim_max)
		return raise_refused(resource, soft, hard, cur.rlim_max, err);
	return lb_err_set(err, errno, "--ulimit %s=%llu:%llu", lb_rlimit_name(resource),
			  (unsigned long long)soft, (unsigned long long)hard);
}

static bool user_sets(const struct lb_spec *spec, int resource)
{
	for (size_t i = 0; i < spec->n_rlimits; i++)
		if (spec->rlimits[i].resource == resource)
			return true;
	return false;
}

int lb_apply_rlimits(const struct lb_spec *spec, struct lb_err **err)
{
	/* a default the user overrides is not applied first: lowering the hard limit to it
	 * would leave the user's value out of reach without CAP_SYS_RESOURCE */
	if ((!user_sets(spec, RLIMIT_NOFILE) &&
	     set_one(RLIMIT_NOFILE, 1024, 1024, true, err) < 0) ||
	    (!user_sets(spec, RLIMIT_CORE) && set_one(RLIMIT_CORE, 0, 0, true, err) < 0))
		return -1;
	for (size_t i = 0; i < spec->n_rlimits; i++) {
		const struct lb_rlimit *r = &spec->rlimits[i];
		if (set_one(r->resource, r->soft, r->hard, false, err) < 0)
			return -1;
	}
	return 0;
}

int lb_open_oom_score_adj(pid_t pid, int *out, struct lb_err **err)
{
	char path[64];
	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/oom_score_adj", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/oom_score_adj");
	*out = open(path, O_WRONLY | O_CLOEXEC);
	return *out < 0 ? lb_err_set(err, errno, "open %s", path) : 0;
}

int lb_write_oom_score_adj(int fd, int v, struct lb_err **err)
{
	char val[16];
	int len = snprintf(val, sizeof(val), "%d", v);
	if (write(fd, val, (size_t)len) == len)
		return 0;
	/* the kernel's floor is the lowest value a CAP_SYS_RESOURCE holder last set (inherited) */
	if (errno == EACCES)
		return lb_err_set(
		    err, 0, "oomScoreAdj %d: lowering oom_score_adj needs CAP_SYS_RESOURCE", v);
	return lb_err_set(err, errno, "oomScoreAdj %d", v);
}

int lb_set_oom_score_adj(pid_t pid, int v, struct lb_err **err)
{
	_cleanup_close_ int fd = -1;
	if (lb_open_oom_score_adj(pid, &fd, err) < 0)
		return -1;
	return lb_write_oom_score_adj(fd, v, err);
}
