/* Per-sandbox cgroups: v2 first, v1 on hybrid/legacy hosts. Nested under lbbox's own cgroup. */
#ifndef LBBOX_CGROUP_H
#define LBBOX_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lbbox/base/err.h"

/* Longest cpuset list lbbox takes ("0-3,8-11"), terminating NUL included. */
#define LB_CPUSET_LEN 256

/* Access to a device, as the device fence grants it (OCI's "rwm"). */
enum { LB_DEV_READ = 1u << 0, LB_DEV_WRITE = 1u << 1, LB_DEV_MKNOD = 1u << 2 };
#define LB_DEV_RWM (LB_DEV_READ | LB_DEV_WRITE | LB_DEV_MKNOD)

/* One device the fence allows on top of lbbox's standard ones (an OCI bundle's linux.devices
 * entry its resources.devices rules grant). */
struct lb_cgroup_device {
	char type;	 /* 'c' or 'b' */
	uint32_t major;	 /* below 4096 */
	uint32_t minor;	 /* below 2^20 */
	unsigned access; /* LB_DEV_* bits, not 0 */
};

struct lb_cgroup_limits {
	uint64_t memory_bytes;	/* 0 = no limit; hard limit, swap not allowed */
	uint64_t pids;		/* 0 = no limit */
	uint64_t cpu_quota_us;	/* 0 = no limit */
	uint64_t cpu_period_us; /* 0 = 100000 */
	uint64_t cpu_shares;	/* 0 = the default; 2..262144 (v2: cpu.weight, runc's mapping) */
	uint64_t memory_reservation; /* 0 = none; soft limit in bytes (v2: memory.low) */
	char cpus[LB_CPUSET_LEN];    /* cpuset.cpus in the kernel's list format; "" = not pinned */
	char mems[LB_CPUSET_LEN];    /* cpuset.mems; "" = the parent's */
	/* v1: a cpuset cgroup even with no cpus/mems (the parent's values), so that an update can
	 * pin the sandbox later; skipped quietly where no cpuset hierarchy is writable. */
	bool cpuset_cgroup;
	/* Created cgroups only (root): the extra devices of the fence; not owned. */
	const struct lb_cgroup_device *devices;
	size_t n_devices;
};

/* A kernel cpu/node list ("0-2,4"): digits, ',' and '-', ascending ranges, below
 * LB_CPUSET_LEN bytes and numbers below 8192. what names the value in the refusal. */
int lb_cpuset_check(const char *list, const char *what, struct lb_err **err);
/* Checks list (when not empty) and copies it into dst; "" leaves dst empty. */
int lb_cpuset_set(char dst[LB_CPUSET_LEN], const char *list, const char *what, struct lb_err **err);

enum lb_cgroup_version { LB_CGROUP_NONE = 0, LB_CGROUP_V1 = 1, LB_CGROUP_V2 = 2 };

struct lb_cgroup_stats {
	uint64_t memory_peak; /* bytes, 0 when unknown */
	uint64_t cpu_usec;    /* user+system time of every task that ran in the cgroup */
	uint64_t oom_kills;   /* tasks killed by the OOM killer inside the cgroup */
	uint64_t pids_peak;   /* 0 when the kernel does not report it */
};

struct lb_cgroup;

/*
 * Creates the cgroup NAME under PARENT (a path inside the hierarchy, e.g. "/ci/job1"; NULL = the
 * cgroup lbbox itself runs in, per controller on v1) and applies the limits. On v2, enabling the
 * needed controllers may require moving lbbox into a leaf first (no-internal-process rule).
 * When no writable hierarchy exists: fails if any limit is set (saying why), otherwise returns a
 * cgroup of version LB_CGROUP_NONE on which every operation is a no-op.
 * Nothing is left behind on failure.
 */
int lb_cgroup_create(const char *name, const char *parent, const struct lb_cgroup_limits *lim,
		     struct lb_cgroup **out, struct lb_err **err);
/* The same in two steps, for a caller that records the paths (lb_cgroup_paths) before any
 * directory exists, so a kill in between leaves nothing unrecorded: plan finds the hierarchies
 * and refuses limits it could not enforce, creating nothing; make creates and applies (and on
 * failure removes what it made; the caller then frees cg with lb_cgroup_forget). */
int lb_cgroup_plan(const char *name, const char *parent, const struct lb_cgroup_limits *lim,
		   struct lb_cgroup **out, struct lb_err **err);
int lb_cgroup_make(struct lb_cgroup *cg, const struct lb_cgroup_limits *lim, struct lb_err **err);
/* True when PARENT (a path inside the hierarchy) exists in none of the hierarchies a create
 * would use: the caller may then choose another place. False when it exists in at least one
 * (a create below it then reports any hierarchy that lacks it), or when there is no hierarchy. */
bool lb_cgroup_parent_missing(const char *parent);
enum lb_cgroup_version lb_cgroup_version(const struct lb_cgroup *cg);
/* v2: an O_DIRECTORY fd of the cgroup for clone3(CLONE_INTO_CGROUP); -1 otherwise. */
int lb_cgroup_dirfd(const struct lb_cgroup *cg);
/* Moves pid into the cgroup (every controller on v1). */
int lb_cgroup_attach(struct lb_cgroup *cg, pid_t pid, struct lb_err **err);
/* Moves the calling process, which must be single-threaded (a child fresh from clone), into the
 * cgroup: what a v1 child does instead of being attached by its parent (v2 has
 * CLONE_INTO_CGROUP). Same effect, much cheaper: see cg_v1_join. */
int lb_cgroup_join(const struct lb_cgroup *cg, struct lb_err **err);
/* One path component usable as a cgroup's name: not empty, "." or "..", no "/", at most 255
 * bytes, and not the leaf lbbox moves a v2 parent's processes into. */
bool lb_cgroup_name_ok(const char *name);
/* Kills every task in the cgroup (cgroup.kill on v2; freeze + SIGKILL + thaw on v1) and waits
 * until it is empty (bounded). */
int lb_cgroup_kill(struct lb_cgroup *cg, struct lb_err **err);
/* sig to every process of the cgroup and its children, once (no freeze: a process forked
 * meanwhile may be missed; lb_cgroup_kill is the one that ends them all). */
int lb_cgroup_signal(struct lb_cgroup *cg, int sig, struct lb_err **err);
/* Every process of the cgroup and its children (malloc'ed array). */
int lb_cgroup_pids(struct lb_cgroup *cg, pid_t **pids, size_t *n, struct lb_err **err);
/* Stops (freeze) or restarts every task of the cgroup and its children; returns once the
 * kernel says so (bounded: a task in uninterruptible sleep can delay a freeze). */
int lb_cgroup_freeze(struct lb_cgroup *cg, bool freeze, struct lb_err **err);
bool lb_cgroup_frozen(struct lb_cgroup *cg);
/* True when the cgroup has no task left. */
bool lb_cgroup_is_empty(struct lb_cgroup *cg);
int lb_cgroup_stats(struct lb_cgroup *cg, struct lb_cgroup_stats *st, struct lb_err **err);
/* Kills what is left, removes the directories and frees cg (also on error). */
int lb_cgroup_destroy(struct lb_cgroup *cg, struct lb_err **err);
/* Removes cg and frees it when it has no task and no child cgroup (true); else frees it and
 * leaves the directories as they are (false). Reads no task list: rmdir itself says. */
bool lb_cgroup_remove_if_empty(struct lb_cgroup *cg);

/* One directory of a cgroup, as recorded in a sandbox's state. */
struct lb_cgroup_dir_info {
	const char *path; /* absolute host path */
	const char *hier; /* v1 hierarchy ("memory", "cpu,cpuacct"), NULL on v2 */
	unsigned roles;	  /* controllers it carries (internal bit set, stored opaque) */
};
/* Fills out with cg's directories (pointers into cg); returns how many. */
size_t lb_cgroup_dir_info(const struct lb_cgroup *cg, struct lb_cgroup_dir_info *out, size_t max);
/*
 * Reopens an existing cgroup (a live sandbox's, from its state). owned: destroy removes the
 * directories (and any child cgroups); otherwise they are left alone. A directory that no longer
 * exists is accepted (operations on it do nothing).
 */
int lb_cgroup_open(enum lb_cgroup_version version, const struct lb_cgroup_dir_info *dirs, size_t n,
		   bool owned, struct lb_cgroup **out, struct lb_err **err);
/*
 * Creates parent/NAME in every hierarchy of parent (an exec's cgroup). Its only limit of its own
 * is memory_bytes (0 = none: parent's limits apply): on v2 the parent then enables the memory
 * controller for its children, its own processes moved into a leaf child first (the sandbox's
 * pid 1 among them). Fails, leaving no child, when there is no memory controller to use.
 */
int lb_cgroup_create_child(const struct lb_cgroup *parent, const char *name, uint64_t memory_bytes,
			   struct lb_cgroup **out, struct lb_err **err);
/* Frees cg without touching the directories. */
void lb_cgroup_forget(struct lb_cgroup *cg);
/* rmdir of path and of every cgroup below it, children first (retries while memory is busy). */
int lb_cgroup_remove_path(const char *path, struct lb_err **err);
/*
 * A change of a live cgroup's limits (an OCI runtime's `update`), in runc's terms: 0 leaves a
 * value as it is, -1 lifts the limit. memory_swap is memory + swap, as runc and docker count it.
 */
struct lb_cgroup_update {
	int64_t memory;		    /* bytes, at least LB_MIN_MEMORY */
	int64_t memory_swap;	    /* bytes, at least memory; needs memory in the same update */
	int64_t memory_reservation; /* soft limit, bytes */
	int64_t pids;
	int64_t cpu_quota;	  /* microseconds per period, at least 1000 */
	uint64_t cpu_period;	  /* microseconds, 1000 to 1000000 */
	uint64_t cpu_shares;	  /* 2 to 262144 (v2: converted to cpu.weight as runc does) */
	char cpus[LB_CPUSET_LEN]; /* cpuset.cpus, "" = unchanged */
	char mems[LB_CPUSET_LEN]; /* cpuset.mems, "" = unchanged */
};
/* The values alone (ranges, the memory floor, swap without memory): before anything is opened. */
int lb_cgroup_update_check(const struct lb_cgroup_update *u, struct lb_err **err);
/*
 * Applies u to cg (v1: memory and memory+swap written in the order the kernel accepts; v2:
 * memory.max, memory.swap.max, cpu.max, cpu.weight). Refused with nothing written when cg lacks
 * a controller u needs; a write the kernel refuses (a memory limit below what is in use) undoes
 * the writes before it.
 */
int lb_cgroup_update(struct lb_cgroup *cg, const struct lb_cgroup_update *u, struct lb_err **err);

/* Upper bound of lb_cgroup_dir_info's count. */
#define LB_CGROUP_MAX_DIRS 7

/*
 * What the sandbox should mount at /sys/fs/cgroup (read-only, inside its cgroup namespace):
 * v2: nothing to list (mount cgroup2). v1: NULL-terminated list of the hierarchies the cgroup
 * lives in, each as the mount option string (e.g. "memory", "cpu,cpuacct") which is also used as
 * the directory name under /sys/fs/cgroup.
 */
const char *const *lb_cgroup_v1_hierarchies(const struct lb_cgroup *cg);
/* Absolute host paths of the cgroup directories (one on v2, one per hierarchy on v1), for state. */
const char *const *lb_cgroup_paths(const struct lb_cgroup *cg);

#endif
