/*
 * Changing a live cgroup's limits (lbbox-runc update, runc's semantics). Everything that can be
 * checked is checked before the first write; each write first saves the value it replaces, so
 * one the kernel refuses (memory below what is in use: EBUSY) puts back the ones before it and
 * the cgroup is left as it was.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/sandbox/spec.h"
#include "cgroup_internal.h"

#define UNDO_MAX 12

struct undo {
	const struct cg_dir *d;
	const char *file;
	char old[LB_CPUSET_LEN]; /* a number, or a cpuset list */
};

struct txn {
	struct undo v[UNDO_MAX];
	size_t n;
};

/* Writes val after saving what file holds; refused when the old value cannot be saved. */
static int txn_write(struct txn *t, const struct cg_dir *d, const char *file, const char *val,
		     struct lb_err **err)
{
	_cleanup_free_ char *old = NULL;
	if (t->n == UNDO_MAX)
		return lb_err_set(err, E2BIG, "cgroup update: too many writes");
	if (cg_read(d, file, &old, err) < 0)
		return -1;
	old[strcspn(old, "\n")] = '\0';
	if (strlen(old) >= sizeof(t->v[0].old))
		return lb_err_set(err, EINVAL, "%s/%s holds an unexpected value", d->path, file);
	if (cg_write(d, file, val, err) < 0)
		return -1;
	struct undo *u = &t->v[t->n++];
	u->d = d;
	u->file = file;
	snprintf(u->old, sizeof(u->old), "%s", old);
	return 0;
}

static void txn_undo(struct txn *t)
{
	while (t->n > 0) {
		struct undo *u = &t->v[--t->n];
		cg_write_raw(u->d, u->file, u->old);
	}
}

/* v1 takes -1 for "no limit", v2 "max". */
static void num(char *buf, size_t len, int64_t v, bool v2)
{
	if (v < 0)
		snprintf(buf, len, "%s", v2 ? "max" : "-1");
	else
		snprintf(buf, len, "%" PRId64, v);
}

int lb_cgroup_update_check(const struct lb_cgroup_update *u, struct lb_err **err)
{
	if ((u->cpus[0] && lb_cpuset_check(u->cpus, "cpus", err) < 0) ||
	    (u->mems[0] && lb_cpuset_check(u->mems, "mems", err) < 0))
		return -1;
	if (u->memory < -1 || (u->memory > 0 && (uint64_t)u->memory < LB_MIN_MEMORY))
		return lb_err_set(err, 0, "memory %" PRId64 " is below lbbox's 32 MiB", u->memory);
	if (u->memory_swap < -1 || u->memory_reservation < -1 || u->pids < -1 || u->cpu_quota < -1)
		return lb_err_set(err, 0, "a limit below -1 means nothing");
	if (u->memory_swap && !u->memory)
		return lb_err_set(err, 0, "memory-swap needs memory in the same update");
	if (u->memory_swap > 0 && (u->memory < 0 || u->memory_swap < u->memory))
		return lb_err_set(err, 0, "memory-swap (memory + swap) is below memory");
	if (u->cpu_quota > 0 && u->cpu_quota < 1000)
		return lb_err_set(err, 0, "cpu-quota below 1000 us");
	if (u->cpu_period && (u->cpu_period < 1000 || u->cpu_period > 1000000))
		return lb_err_set(err, 0, "cpu-period must be 1000 to 1000000 us");
	if (u->cpu_shares && (u->cpu_shares < 2 || u->cpu_shares > 262144))
		return lb_err_set(err, 0, "cpu-shares must be 2 to 262144");
	return 0;
}

/* The directory for role, or a refusal naming the controller. */
static int need(struct lb_cgroup *cg, unsigned role, bool wanted, const struct cg_dir **out,
		struct lb_err **err)
{
	*out = wanted ? cg_find_dir(cg, role) : NULL;
	if (wanted && (!*out || (*out)->fd < 0))
		return lb_err_set(err, 0,
				  "cannot update the %s limit: the sandbox has no %s "
				  "cgroup",
				  cg_role_name(role), cg_role_name(role));
	return 0;
}

/* runc's order on v1: memory + swap must never fall below memory, so the one that grows goes
 * first. lbbox's own limits come with no swap (memsw = memory): kept so when swap is not asked. */
static int v1_memory(struct txn *t, const struct cg_dir *d, const struct lb_cgroup_update *u,
		     struct lb_err **err)
{
	char mem[32], sw[32];
	uint64_t cur = 0;
	bool memsw = faccessat(d->fd, "memory.memsw.limit_in_bytes", F_OK, 0) == 0;
	int64_t swap = u->memory_swap ? u->memory_swap : u->memory;
	if (u->memory_swap > 0 && u->memory_swap != u->memory && !memsw)
		return lb_err_set(err, 0, "memory-swap: this kernel does not account swap");
	num(mem, sizeof(mem), u->memory, false);
	num(sw, sizeof(sw), swap, false);
	if (!memsw)
		return txn_write(t, d, "memory.limit_in_bytes", mem, err);
	if (cg_read_u64(d, "memory.limit_in_bytes", &cur, err) < 0)
		return -1;
	if (swap < 0 || cur < (uint64_t)swap)
		return txn_write(t, d, "memory.memsw.limit_in_bytes", sw, err) < 0 ||
			       txn_write(t, d, "memory.limit_in_bytes", mem, err) < 0
			   ? -1
			   : 0;
	return txn_write(t, d, "memory.limit_in_bytes", mem, err) < 0 ||
		       txn_write(t, d, "memory.memsw.limit_in_bytes", sw, err) < 0
		   ? -1
		   : 0;
}

/* v2 counts swap alone: memory.swap.max = (memory + swap) - memory. Not asked: left as it is
 * (lbbox gives none). */
static int v2_memory(struct txn *t, const struct cg_dir *d, const struct lb_cgroup_update *u,
		     struct lb_err **err)
{
	char buf[32];
	if (u->memory_swap) {
		int64_t swap =
		    u->memory_swap < 0 || u->memory < 0 ? -1 : u->memory_swap - u->memory;
		bool has = faccessat(d->fd, "memory.swap.max", F_OK, 0) == 0;
		num(buf, sizeof(buf), swap, true);
		if (!has && swap != 0 && swap != -1)
			return lb_err_set(err, 0, "memory-swap: this kernel does not account swap");
		if (has && txn_write(t, d, "memory.swap.max", buf, err) < 0)
			return -1;
	}
	num(buf, sizeof(buf), u->memory, true);
	return txn_write(t, d, "memory.max", buf, err);
}

static int apply_memory(struct txn *t, bool v2, const struct cg_dir *d,
			const struct lb_cgroup_update *u, struct lb_err **err)
{
	char buf[32];
	if (u->memory && (v2 ? v2_memory(t, d, u, err) : v1_memory(t, d, u, err)) < 0)
		return -1;
	if (!u->memory_reservation)
		return 0;
	num(buf, sizeof(buf), u->memory_reservation, v2);
	return txn_write(t, d, v2 ? "memory.low" : "memory.soft_limit_in_bytes", buf, err);
}

/* v1: period and quota are two files; a new period goes first unless the kernel refuses it
 * against the old quota (EINVAL), then it follows the quota (runc's order). */
static int v1_cpu(struct txn *t, const struct cg_dir *d, const struct lb_cgroup_update *u,
		  struct lb_err **err)
{
	char q[32], p[32];
	bool later = false;
	num(q, sizeof(q), u->cpu_quota, false);
	snprintf(p, sizeof(p), "%" PRIu64, u->cpu_period);
	if (u->cpu_period) {
		_cleanup_err_ struct lb_err *first = NULL;
		if (txn_write(t, d, "cpu.cfs_period_us", p, &first) < 0) {
			if (first->errnum != EINVAL || !u->cpu_quota) {
				*err = LB_TAKE_PTR(first);
				return -1;
			}
			later = true;
		}
	}
	if (u->cpu_quota && txn_write(t, d, "cpu.cfs_quota_us", q, err) < 0)
		return -1;
	return later ? txn_write(t, d, "cpu.cfs_period_us", p, err) : 0;
}

/* v2: one file, "QUOTA PERIOD"; a period alone keeps the quota in force. */
static int v2_cpu(struct txn *t, const struct cg_dir *d, const struct lb_cgroup_update *u,
		  struct lb_err **err)
{
	char buf[64], quota[32];
	_cleanup_free_ char *cur = NULL;
	if (u->cpu_quota) {
		num(quota, sizeof(quota), u->cpu_quota, true);
	} else {
		if (cg_read(d, "cpu.max", &cur, err) < 0)
			return -1;
		snprintf(quota, sizeof(quota), "%.*s", (int)strcspn(cur, " \n"), cur);
	}
	if (u->cpu_period)
		snprintf(buf, sizeof(buf), "%s %" PRIu64, quota, u->cpu_period);
	else
		snprintf(buf, sizeof(buf), "%s", quota);
	return txn_write(t, d, "cpu.max", buf, err);
}

static int apply_cpu(struct txn *t, bool v2, const struct cg_dir *d,
		     const struct lb_cgroup_update *u, struct lb_err **err)
{
	char buf[32];
	if ((u->cpu_quota || u->cpu_period) &&
	    (v2 ? v2_cpu(t, d, u, err) : v1_cpu(t, d, u, err)) < 0)
		return -1;
	if (!u->cpu_shares)
		return 0;
	snprintf(buf, sizeof(buf), "%" PRIu64,
		 v2 ? cg_shares_to_weight(u->cpu_shares) : u->cpu_shares);
	return txn_write(t, d, v2 ? "cpu.weight" : "cpu.shares", buf, err);
}

/* v2: a sandbox made without a limit has its controller off (create enables only what its
 * limits need); the parent turns it on for it as create would have. No limit changes by it. */
static int v2_enable(const struct cg_dir *d, unsigned roles, struct lb_err **err)
{
	_cleanup_free_ char *parent = strdup(d->path);
	if (!parent)
		return lb_err_set(err, ENOMEM, "cgroup %s", d->path);
	char *slash = strrchr(parent, '/');
	if (!roles || !slash || slash == parent)
		return 0;
	*slash = '\0';
	return cg_v2_enable_controllers(parent, roles, err);
}

/* Lists outside what the parent offers are refused before the first write (v2 would take
 * them and silently use less). */
static int cpuset_check(const struct cg_dir *d, bool v2, const struct lb_cgroup_update *u,
			struct lb_err **err)
{
	if (u->cpus[0] && cg_cpuset_within_parent(d, v2, false, u->cpus, err) < 0)
		return -1;
	return u->mems[0] ? cg_cpuset_within_parent(d, v2, true, u->mems, err) : 0;
}

/* Only the sandbox's own directory: its execs' children share it on v1 (cgroup_child.c) and
 * inherit it on v2. */
static int apply_cpuset(struct txn *t, const struct cg_dir *d, const struct lb_cgroup_update *u,
			struct lb_err **err)
{
	if (u->cpus[0] && txn_write(t, d, "cpuset.cpus", u->cpus, err) < 0)
		return -1;
	return u->mems[0] ? txn_write(t, d, "cpuset.mems", u->mems, err) : 0;
}

static int apply(struct txn *t, struct lb_cgroup *cg, const struct lb_cgroup_update *u,
		 struct lb_err **err)
{
	const struct cg_dir *mem, *pids, *cpu, *cpuset;
	bool v2 = cg->version == LB_CGROUP_V2;
	char buf[32];
	if (need(cg, CG_MEMORY, u->memory || u->memory_reservation, &mem, err) < 0 ||
	    need(cg, CG_PIDS, u->pids != 0, &pids, err) < 0 ||
	    need(cg, CG_CPU, u->cpu_quota || u->cpu_period || u->cpu_shares, &cpu, err) < 0 ||
	    need(cg, CG_CPUSET, u->cpus[0] || u->mems[0], &cpuset, err) < 0 ||
	    (cpuset && cpuset_check(cpuset, v2, u, err) < 0))
		return -1;
	unsigned roles = (mem ? CG_MEMORY : 0) | (pids ? CG_PIDS : 0) | (cpu ? CG_CPU : 0) |
			 (cpuset ? CG_CPUSET : 0);
	if (v2 && v2_enable(&cg->dirs[0], roles, err) < 0)
		return -1;
	if (mem && apply_memory(t, v2, mem, u, err) < 0)
		return -1;
	num(buf, sizeof(buf), u->pids, true); /* pids.max says "max" on v1 too */
	if (pids && txn_write(t, pids, "pids.max", buf, err) < 0)
		return -1;
	if (cpu && apply_cpu(t, v2, cpu, u, err) < 0)
		return -1;
	return cpuset ? apply_cpuset(t, cpuset, u, err) : 0;
}

int lb_cgroup_update(struct lb_cgroup *cg, const struct lb_cgroup_update *u, struct lb_err **err)
{
	struct txn t = {.n = 0};
	if (lb_cgroup_update_check(u, err) < 0)
		return -1;
	if (cg->version == LB_CGROUP_NONE &&
	    (u->memory || u->memory_reservation || u->pids || u->cpu_quota || u->cpu_period ||
	     u->cpu_shares || u->cpus[0] || u->mems[0]))
		return lb_err_set(err, 0, "cannot update limits: the sandbox has no cgroup");
	if (apply(&t, cg, u, err) < 0) {
		txn_undo(&t);
		return -1;
	}
	return 0;
}
