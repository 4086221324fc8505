/*
 * cgroup v1 (hybrid and legacy hosts): one directory per hierarchy (memory, pids, cpu, cpuacct,
 * freezer; cpu and cpuacct may share one), a task is attached to each. There is no cgroup.kill:
 * the freezer stops every task (so nothing can fork while we look) before each is SIGKILLed.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"
#include "cgroup_internal.h"

/* How long a kill waits for FREEZING to become FROZEN before killing anyway. */
#define CG_FREEZE_TIMEOUT_NS (1000ull * 1000 * 1000)

static int cg_v1_apply_memory(const struct cg_dir *d, uint64_t bytes, struct lb_err **err)
{
	if (cg_write_u64(d, "memory.limit_in_bytes", bytes, err) < 0)
		return -1;
	/*
	 * memsw = memory + swap; the same value means no swap. It must never be below
	 * limit_in_bytes, so on this fresh (unlimited) cgroup it is set second. Without swap
	 * accounting the file is missing: keep the cgroup away from swap as far as we can.
	 */
	if (faccessat(d->fd, "memory.memsw.limit_in_bytes", F_OK, 0) == 0)
		return cg_write_u64(d, "memory.memsw.limit_in_bytes", bytes, err);
	cg_write_raw(d, "memory.swappiness", "0");
	return 0;
}

static int cg_v1_apply_cpu(const struct cg_dir *d, const struct lb_cgroup_limits *lim,
			   struct lb_err **err)
{
	uint64_t period = lim->cpu_period_us ? lim->cpu_period_us : 100000;

	/* the quota is checked against the current period: period first */
	if (cg_write_u64(d, "cpu.cfs_period_us", period, err) < 0)
		return -1;
	return cg_write_u64(d, "cpu.cfs_quota_us", lim->cpu_quota_us, err);
}

static int cg_v1_apply(const struct cg_dir *d, const struct lb_cgroup_limits *lim,
		       struct lb_err **err)
{
	if ((d->roles & CG_MEMORY) && lim->memory_bytes &&
	    cg_v1_apply_memory(d, lim->memory_bytes, err) < 0)
		return -1;
	if ((d->roles & CG_PIDS) && lim->pids && cg_write_u64(d, "pids.max", lim->pids, err) < 0)
		return -1;
	if ((d->roles & CG_CPU) && lim->cpu_quota_us && cg_v1_apply_cpu(d, lim, err) < 0)
		return -1;
	if ((d->roles & CG_CPU) && lim->cpu_shares &&
	    cg_write_u64(d, "cpu.shares", lim->cpu_shares, err) < 0)
		return -1;
	if ((d->roles & CG_MEMORY) && lim->memory_reservation &&
	    cg_write_u64(d, "memory.soft_limit_in_bytes", lim->memory_reservation, err) < 0)
		return -1;
	return 0;
}

int cg_v1_create(struct lb_cgroup *cg, const struct lb_cgroup_limits *lim, struct lb_err **err)
{
	unsigned have = 0;

	cg->version = LB_CGROUP_V1;
	for (size_t i = 0; i < cg->ndirs; i++)
		have |= cg->dirs[i].roles;
	unsigned missing = cg_limits_roles(lim) & ~have;
	const char *name = cg_role_name(missing & -missing);
	if (missing)
		return lb_err_set(
		    err, 0, "cannot enforce the %s limit: no writable v1 %s hierarchy", name, name);
	for (size_t i = 0; i < cg->ndirs; i++) {
		struct cg_dir *d = &cg->dirs[i];
		int r = d->roles & CG_CPUSET ? cg_cpuset_v1_make(d, lim, err) : cg_dir_make(d, err);
		if (r < 0 || cg_v1_apply(d, lim, err) < 0)
			return -1;
	}
	struct cg_dir *dev = cg_find_dir(cg, CG_DEVICES);
	if (dev && geteuid() == 0 && cg_devices_v1(dev, lim, err) < 0)
		return -1;
	return 0;
}

int cg_v1_limit_child(const struct cg_dir *d, uint64_t memory_bytes, struct lb_err **err)
{
	return cg_v1_apply_memory(d, memory_bytes, err);
}

int cg_v1_attach(struct lb_cgroup *cg, pid_t pid, struct lb_err **err)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%d", (int)pid);
	for (size_t i = 0; i < cg->ndirs; i++)
		if (cg_write(&cg->dirs[i], "cgroup.procs", buf, err) < 0)
			return -1;
	return 0;
}

/*
 * A process writing its own pid to cgroup.procs (or another's pid anywhere) makes the kernel
 * take cgroup_threadgroup_rwsem for writing, and the first such take after a quiet moment waits
 * for an RCU grace period: 2-15 ms on these hosts, the largest single cost of a run. A thread
 * moving itself ("0" to tasks) is exempt (cgroup_procs_write_start): for a single-threaded
 * process that moves the whole process.
 */
int cg_v1_join(const struct lb_cgroup *cg, struct lb_err **err)
{
	for (size_t i = 0; i < cg->ndirs; i++)
		if (cg_write(&cg->dirs[i], "tasks", "0", err) < 0)
			return -1;
	return 0;
}

/* Number of tasks in every hierarchy's subtree, each SIGKILLed first when sig is SIGKILL. A
 * shared directory is skipped (a child's, its sandbox's: cgroup_child.c), and so is a
 * cpuset-only one; the other hierarchies hold the same tasks anyway. */
static int cg_v1_signal_all(struct lb_cgroup *cg, int sig, size_t *found, struct lb_err **err)
{
	*found = 0;
	for (size_t i = 0; i < cg->ndirs; i++)
		if (cg->dirs[i].roles != CG_CPUSET && !cg->dirs[i].shared &&
		    cg_signal_tree(&cg->dirs[i], sig, found, err) < 0)
			return -1;
	return 0;
}

/* Sets the freezer (hierarchical in v1) to state and waits until the kernel reports it: FROZEN
 * takes a while when a task sits in the kernel, so the wait is bounded by timeout_ns. */
static int cg_v1_set_freezer(const struct cg_dir *fz, const char *state, uint64_t timeout_ns,
			     struct lb_err **err)
{
	uint64_t deadline = lb_now_ns() + timeout_ns;
	unsigned round = 0;

	if (cg_write(fz, "freezer.state", state, err) < 0)
		return -1;
	for (;;) {
		_cleanup_free_ char *now = NULL;
		if (cg_read(fz, "freezer.state", &now, err) < 0)
			return -1;
		if (!strncmp(now, state, strlen(state)))
			return 0;
		if (lb_now_ns() >= deadline)
			return lb_err_set(err, ETIMEDOUT, "cgroup %s did not become %s", fz->path,
					  state);
		cg_backoff(&round);
	}
}

int cg_v1_freeze(struct lb_cgroup *cg, bool freeze, struct lb_err **err)
{
	const struct cg_dir *fz = cg_find_dir(cg, CG_FREEZER);
	if (!fz)
		return lb_err_set(err, ENOTSUP, "cgroup %s has no freezer hierarchy",
				  cg_display_path(cg));
	return cg_v1_set_freezer(fz, freeze ? "FROZEN" : "THAWED", CG_PAUSE_TIMEOUT_NS, err);
}

bool cg_v1_frozen(struct lb_cgroup *cg)
{
	const struct cg_dir *fz = cg_find_dir(cg, CG_FREEZER);
	_cleanup_free_ char *now = NULL;
	return fz && cg_read(fz, "freezer.state", &now, NULL) == 0 && !strncmp(now, "FROZEN", 6);
}

/*
 * One round: freeze, SIGKILL every task seen, thaw (frozen tasks only die once thawed). A freezer
 * that fails to freeze only makes the round racier, so the SIGKILLs are sent regardless.
 */
static int cg_v1_kill_round(struct lb_cgroup *cg, size_t *found, struct lb_err **err)
{
	struct cg_dir *fz = cg_find_dir(cg, CG_FREEZER);

	if (fz) /* one stuck in FREEZING still gets the SIGKILL */
		cg_v1_set_freezer(fz, "FROZEN", CG_FREEZE_TIMEOUT_NS, NULL);
	int r = cg_v1_signal_all(cg, SIGKILL, found, err);
	if (fz && cg_write(fz, "freezer.state", "THAWED", err) < 0)
		r = -1;
	return r;
}

int cg_v1_kill(struct lb_cgroup *cg, struct lb_err **err)
{
	uint64_t deadline = lb_now_ns() + CG_KILL_TIMEOUT_NS;
	unsigned round = 0;

	for (;;) {
		size_t found = 0;
		if (cg_v1_kill_round(cg, &found, err) < 0)
			return -1;
		if (found == 0)
			return 0;
		if (lb_now_ns() >= deadline)
			return lb_err_set(err, ETIMEDOUT, "kill cgroup %s: tasks left after 5 s",
					  cg_display_path(cg));
		cg_backoff(&round);
	}
}

bool cg_v1_is_empty(struct lb_cgroup *cg)
{
	size_t found = 0;
	return cg_v1_signal_all(cg, 0, &found, NULL) == 0 && found == 0;
}

static int cg_v1_add_oom_kills(const struct cg_dir *d, void *ctx, struct lb_err **err)
{
	uint64_t n = 0;

	if (cg_read_key_opt(d, "memory.oom_control", "oom_kill", &n, err) < 0)
		return -1;
	*(uint64_t *)ctx += n;
	return 0;
}

int cg_v1_stats(struct lb_cgroup *cg, struct lb_cgroup_stats *st, struct lb_err **err)
{
	const struct cg_dir *mem = cg_find_dir(cg, CG_MEMORY);
	const struct cg_dir *acct = cg_find_dir(cg, CG_CPUACCT);
	const struct cg_dir *pids = cg_find_dir(cg, CG_PIDS);
	uint64_t ns = 0;

	/*
	 * Usage, cpuacct and pids count the whole subtree on v1, but oom_kill counts only the
	 * cgroup the victim was in: add up the per-exec children as v2's memory.events does.
	 */
	if (mem && (cg_read_u64(mem, "memory.max_usage_in_bytes", &st->memory_peak, err) < 0 ||
		    cg_walk(mem, cg_v1_add_oom_kills, &st->oom_kills, err) < 0))
		return -1;
	if (acct && cg_read_u64(acct, "cpuacct.usage", &ns, err) < 0)
		return -1;
	st->cpu_usec = ns / 1000;
	if (pids && cg_read_u64_opt(pids, "pids.peak", &st->pids_peak, err) < 0)
		return -1;
	return 0;
}
