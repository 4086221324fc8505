/*
 * cgroup v2: one directory, controllers enabled in the parent's cgroup.subtree_control, killing
 * with cgroup.kill. The parent is lbbox's own cgroup by default, which on v2 runs into the
 * "no internal processes" rule: a cgroup that has processes cannot enable controllers for its
 * children, so lbbox first moves those processes (itself included) into a leaf beside the
 * sandboxes.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"
#include "cgroup_internal.h"

/* How often the move into the leaf is retried while the parent keeps forking. */
#define CG_LEAF_ROUNDS 64

static void cg_dir_fdclose(struct cg_dir *d)
{
	if (d->fd >= 0)
		close(d->fd);
	free(d->path);
}

static int cg_dir_open(struct cg_dir *d, const char *path, struct lb_err **err)
{
	d->path = strdup(path);
	if (!d->path)
		return lb_err_set(err, ENOMEM, "open %s", path);
	d->fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d->fd < 0)
		return lb_err_set(err, errno, "open %s", path);
	return 0;
}

static int cg_move_pids(const struct cg_dir *leaf, const pid_t *pids, size_t n, struct lb_err **err)
{
	char buf[24];

	for (size_t i = 0; i < n; i++) {
		snprintf(buf, sizeof(buf), "%d", (int)pids[i]);
		int r = cg_write_raw(leaf, "cgroup.procs", buf);
		if (r < 0 && r != -ESRCH) /* ESRCH: it exited meanwhile */
			return lb_err_set(err, -r, "move process %d into %s", (int)pids[i],
					  leaf->path);
	}
	return 0;
}

static int cg_open_leaf(const struct cg_dir *parent, struct cg_dir *leaf, struct lb_err **err)
{
	_cleanup_free_ char *path = cg_path_join(parent->path, CG_LEAF_NAME);

	if (!path)
		return lb_err_set(err, ENOMEM, "cgroup %s", parent->path);
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return lb_err_set(err, errno, "mkdir %s", path);
	return cg_dir_open(leaf, path, err);
}

/* Moves every process of parent into parent/lbbox-leaf (created when needed, kept afterwards). */
static int cg_move_to_leaf(const struct cg_dir *parent, struct lb_err **err)
{
	_cleanup_(cg_dir_fdclose) struct cg_dir leaf = {.fd = -1};

	for (int round = 0; round < CG_LEAF_ROUNDS; round++) {
		_cleanup_free_ pid_t *pids = NULL;
		size_t n = 0;
		if (cg_read_pids(parent, &pids, &n, err) < 0)
			return -1;
		if (n == 0)
			return 0;
		if (leaf.fd < 0 && cg_open_leaf(parent, &leaf, err) < 0)
			return -1;
		if (cg_move_pids(&leaf, pids, n, err) < 0)
			return -1;
	}
	return lb_err_set(err, EBUSY, "move the processes of %s into %s: new ones keep appearing",
			  parent->path, CG_LEAF_NAME);
}

/* "+memory +pids" for the controllers of roles not yet in subtree_control; checks availability. */
static int cg_controllers_to_enable(const struct cg_dir *parent, unsigned roles, char *buf,
				    size_t size, struct lb_err **err)
{
	_cleanup_free_ char *avail = NULL, *enabled = NULL;

	if (cg_read(parent, "cgroup.controllers", &avail, err) < 0 ||
	    cg_read(parent, "cgroup.subtree_control", &enabled, err) < 0)
		return -1;
	buf[0] = '\0';
	for (unsigned role = 1; role <= CG_CPUSET; role <<= 1) {
		const char *name = cg_role_name(role);
		if (!(roles & role & CG_V2_ROLES) || cg_has_word(enabled, name))
			continue;
		if (!cg_has_word(avail, name))
			return lb_err_set(err, 0,
					  "cannot enforce the %s limit: %s lacks the %s controller",
					  name, parent->path, name);
		snprintf(buf + strlen(buf), size - strlen(buf), "%s+%s", buf[0] ? " " : "", name);
	}
	return 0;
}

int cg_v2_enable_controllers(const char *parent_path, unsigned roles, struct lb_err **err)
{
	_cleanup_(cg_dir_fdclose) struct cg_dir parent = {.fd = -1};
	char want[64];

	if (!roles)
		return 0;
	if (cg_dir_open(&parent, parent_path, err) < 0 ||
	    cg_controllers_to_enable(&parent, roles, want, sizeof(want), err) < 0)
		return -1;
	if (!want[0])
		return 0;
	/*
	 * Empty the parent first even where the kernel would not refuse: the threaded controllers
	 * (cpu, pids) can be enabled beside processes, but that makes the parent a thread root
	 * whose new children take no process (EOPNOTSUPP). The root cgroup is exempt.
	 */
	if (faccessat(parent.fd, "cgroup.type", F_OK, 0) == 0 && cg_move_to_leaf(&parent, err) < 0)
		return -1;
	int r = cg_write_raw(&parent, "cgroup.subtree_control", want);
	if (r == -EBUSY) { /* a process got in meanwhile */
		if (cg_move_to_leaf(&parent, err) < 0)
			return -1;
		r = cg_write_raw(&parent, "cgroup.subtree_control", want);
	}
	if (r < 0)
		return lb_err_set(err, -r, "write '%s' to %s/cgroup.subtree_control", want,
				  parent_path);
	return 0;
}

static int cg_v2_apply(const struct cg_dir *d, const struct lb_cgroup_limits *lim,
		       struct lb_err **err)
{
	char buf[64];

	if (lim->memory_bytes) {
		if (cg_write_u64(d, "memory.max", lim->memory_bytes, err) < 0)
			return -1;
		/* the limit is on memory, not memory + swap: no swap at all */
		if (faccessat(d->fd, "memory.swap.max", F_OK, 0) == 0 &&
		    cg_write(d, "memory.swap.max", "0", err) < 0)
			return -1;
	}
	if (lim->pids && cg_write_u64(d, "pids.max", lim->pids, err) < 0)
		return -1;
	if (lim->cpu_quota_us) {
		uint64_t period = lim->cpu_period_us ? lim->cpu_period_us : 100000;
		snprintf(buf, sizeof(buf), "%" PRIu64 " %" PRIu64, lim->cpu_quota_us, period);
		if (cg_write(d, "cpu.max", buf, err) < 0)
			return -1;
	}
	if (lim->cpu_shares &&
	    cg_write_u64(d, "cpu.weight", cg_shares_to_weight(lim->cpu_shares), err) < 0)
		return -1;
	if (lim->memory_reservation &&
	    cg_write_u64(d, "memory.low", lim->memory_reservation, err) < 0)
		return -1;
	return 0;
}

int cg_v2_create(struct lb_cgroup *cg, const struct lb_cgroup_limits *lim, struct lb_err **err)
{
	struct cg_dir *d = &cg->dirs[0];
	_cleanup_free_ char *parent = strdup(d->path);

	cg->version = LB_CGROUP_V2;
	if (!parent)
		return lb_err_set(err, ENOMEM, "cgroup %s", d->path);
	*strrchr(parent, '/') = '\0'; /* d->path is always "<base>/<name>" */
	if (cg_v2_enable_controllers(parent, cg_limits_roles(lim), err) < 0)
		return -1;
	if (cg_dir_make(d, err) < 0 || cg_v2_apply(d, lim, err) < 0 ||
	    cg_cpuset_v2_apply(d, lim, err) < 0)
		return -1;
	return geteuid() == 0 ? cg_devices_v2(d, lim, err) : 0;
}

int cg_v2_limit_child(const struct cg_dir *d, uint64_t memory_bytes, struct lb_err **err)
{
	const struct lb_cgroup_limits lim = {.memory_bytes = memory_bytes};

	if (cg_v2_apply(d, &lim, err) < 0)
		return -1;
	/* an OOM kill takes the command's whole tree, as its exit says it was killed */
	if (faccessat(d->fd, "memory.oom.group", F_OK, 0) == 0 &&
	    cg_write(d, "memory.oom.group", "1", err) < 0)
		return -1;
	return 0;
}

int cg_v2_attach(struct lb_cgroup *cg, pid_t pid, struct lb_err **err)
{
	char buf[24];
	snprintf(buf, sizeof(buf), "%d", (int)pid);
	return cg_write(&cg->dirs[0], "cgroup.procs", buf, err);
}

/* populated covers the whole subtree: tasks in child cgroups (per-exec ones) count too. */
static int cg_populated(int efd, bool *populated)
{
	char buf[256];
	ssize_t n = pread(efd, buf, sizeof(buf) - 1, 0);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	const char *p = strstr(buf, "populated ");
	if (!p)
		return -EINVAL;
	*populated = p[strlen("populated ")] != '0';
	return 0;
}

/* Waits for "populated 0", woken by the kernel's notification on cgroup.events. */
static int cg_wait_empty(const struct cg_dir *d, struct lb_err **err)
{
	uint64_t deadline = lb_now_ns() + CG_KILL_TIMEOUT_NS;
	_cleanup_close_ int efd = openat(d->fd, "cgroup.events", O_RDONLY | O_CLOEXEC);

	if (efd < 0)
		return lb_err_set(err, errno, "open %s/cgroup.events", d->path);
	for (;;) {
		bool populated = true;
		int r = cg_populated(efd, &populated);
		if (r < 0)
			return lb_err_set(err, -r, "read %s/cgroup.events", d->path);
		if (!populated)
			return 0;
		if (lb_now_ns() >= deadline)
			return lb_err_set(err, ETIMEDOUT, "kill cgroup %s: tasks left after 5 s",
					  d->path);
		struct pollfd p = {.fd = efd, .events = POLLPRI};
		poll(&p, 1, 20); /* short timeout too: never rely on the wakeup alone */
	}
}

/* Kernels before 5.14 have no cgroup.kill: SIGKILL what is listed until nothing is. */
static int cg_kill_by_signal(const struct cg_dir *d, struct lb_err **err)
{
	uint64_t deadline = lb_now_ns() + CG_KILL_TIMEOUT_NS;
	unsigned round = 0;

	for (;;) {
		size_t found = 0;
		if (cg_signal_tree(d, SIGKILL, &found, err) < 0)
			return -1;
		if (found == 0)
			return 0;
		if (lb_now_ns() >= deadline)
			return lb_err_set(err, ETIMEDOUT, "kill cgroup %s: tasks left after 5 s",
					  d->path);
		cg_backoff(&round);
	}
}

int cg_v2_kill(struct lb_cgroup *cg, struct lb_err **err)
{
	const struct cg_dir *d = &cg->dirs[0];
	int r = cg_write_raw(d, "cgroup.kill", "1");

	if (r == -ENOENT && faccessat(d->fd, "cgroup.procs", F_OK, 0) == 0)
		return cg_kill_by_signal(d, err);
	if (r == -ENOENT || r == -ENODEV) /* the cgroup itself is gone: nothing to kill */
		return 0;
	if (r < 0)
		return lb_err_set(err, -r, "write '1' to %s/cgroup.kill", d->path);
	return cg_wait_empty(d, err);
}

/* cgroup.freeze (5.2+) stops the whole subtree; cgroup.events' "frozen" says when it is done. */
int cg_v2_freeze(struct lb_cgroup *cg, bool freeze, struct lb_err **err)
{
	const struct cg_dir *d = &cg->dirs[0];
	uint64_t deadline = lb_now_ns() + CG_PAUSE_TIMEOUT_NS, frozen = !freeze;
	unsigned round = 0;
	int r = cg_write_raw(d, "cgroup.freeze", freeze ? "1" : "0");

	if (r == -ENOENT)
		return lb_err_set(err, ENOTSUP, "%s has no cgroup.freeze (kernel before 5.2)",
				  d->path);
	if (r < 0)
		return lb_err_set(err, -r, "write to %s/cgroup.freeze", d->path);
	for (;;) {
		if (cg_read_key(d, "cgroup.events", "frozen", &frozen, err) < 0)
			return -1;
		if (frozen == (uint64_t)freeze)
			return 0;
		if (lb_now_ns() >= deadline)
			return lb_err_set(err, ETIMEDOUT, "cgroup %s did not %s", d->path,
					  freeze ? "freeze" : "thaw");
		cg_backoff(&round);
	}
}

bool cg_v2_frozen(struct lb_cgroup *cg)
{
	uint64_t frozen = 0;
	return cg_read_key(&cg->dirs[0], "cgroup.events", "frozen", &frozen, NULL) == 0 && frozen;
}

bool cg_v2_is_empty(struct lb_cgroup *cg)
{
	_cleanup_close_ int efd = openat(cg->dirs[0].fd, "cgroup.events", O_RDONLY | O_CLOEXEC);
	bool populated = true;

	if (efd < 0)
		return errno == ENOENT || errno == ENODEV;
	return cg_populated(efd, &populated) == 0 && !populated;
}

int cg_v2_stats(struct lb_cgroup *cg, struct lb_cgroup_stats *st, struct lb_err **err)
{
	const struct cg_dir *d = &cg->dirs[0];

	/* memory.* and pids.* exist only when the controller is enabled for this cgroup */
	if (cg_read_u64_opt(d, "memory.peak", &st->memory_peak, err) < 0 ||
	    cg_read_key(d, "cpu.stat", "usage_usec", &st->cpu_usec, err) < 0 ||
	    cg_read_key_opt(d, "memory.events", "oom_kill", &st->oom_kills, err) < 0 ||
	    cg_read_u64_opt(d, "pids.peak", &st->pids_peak, err) < 0)
		return -1;
	return 0;
}
