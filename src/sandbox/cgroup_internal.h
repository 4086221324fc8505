/* Shared between cgroup.c (detection, placement, dispatch), cgroup_v1.c and cgroup_v2.c. */
#ifndef LBBOX_SANDBOX_CGROUP_INTERNAL_H
#define LBBOX_SANDBOX_CGROUP_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "lbbox/sandbox/cgroup.h"
#include "lbbox/base/err.h"

/* Controllers lbbox uses, as bits: a v1 hierarchy may carry several (cpu,cpuacct). */
enum {
	CG_MEMORY = 1u << 0,
	CG_PIDS = 1u << 1,
	CG_CPU = 1u << 2,
	CG_CPUACCT = 1u << 3,
	CG_FREEZER = 1u << 4,
	CG_DEVICES = 1u << 5,
	CG_CPUSET = 1u << 6,
};
#define CG_LIMIT_ROLES (CG_MEMORY | CG_PIDS | CG_CPU)
/* Controllers a v2 sandbox may enable. */
#define CG_V2_ROLES (CG_LIMIT_ROLES | CG_CPUSET)
/* At most one directory per controller bit. */
#define CG_MAX_DIRS 7

/* The leaf lbbox moves the processes of a v2 parent into (no-internal-process rule). */
#define CG_LEAF_NAME "lbbox-leaf"

/* Bounds of the kill and rmdir loops: they must never hang the caller. */
#define CG_KILL_TIMEOUT_NS  (5ull * 1000 * 1000 * 1000)
#define CG_RMDIR_TIMEOUT_NS (3ull * 1000 * 1000 * 1000)
/* A pause waits this long for every task to stop (one in uninterruptible sleep delays it). */
#define CG_PAUSE_TIMEOUT_NS (5ull * 1000 * 1000 * 1000)

/* One cgroup directory: the only one on v2, one per hierarchy on v1. */
struct cg_dir {
	char *hier; /* v1 hierarchy name ("memory", "cpu,cpuacct"); NULL on v2 */
	char *path; /* absolute host path */
	unsigned roles;
	int fd;	      /* O_DIRECTORY fd of path, -1 until created */
	bool created; /* made by us, so ours to remove */
	/* a child's: its sandbox's own directory, joined (cgroup_child.c); never removed,
	 * signalled, listed or read as the child's */
	bool shared;
};

struct lb_cgroup {
	enum lb_cgroup_version version;
	struct cg_dir dirs[CG_MAX_DIRS];
	size_t ndirs;
	/* NULL-terminated views into dirs[], handed out by lb_cgroup_paths / _v1_hierarchies. */
	const char *paths[CG_MAX_DIRS + 1];
	const char *hiers[CG_MAX_DIRS + 1];
};

/* cgroup.c */
/* Fills cg->paths and cg->hiers from cg->dirs. */
void cg_fill_views(struct lb_cgroup *cg);
/* Closes and frees what cg holds (directories are left alone) and cg itself. */
void cg_release(struct lb_cgroup *cg);

/* cgroup_fs.c: controller names, words and paths */
/* CG_* roles the limits need (0 = no limit at all). */
unsigned cg_limits_roles(const struct lb_cgroup_limits *lim);
/* cpu.shares 2..262144 -> v2's cpu.weight 1..10000: runc's (and crun's) linear mapping. */
uint64_t cg_shares_to_weight(uint64_t shares);
/* Controller name of a single role ("memory"), and the role of a controller name (0: none). */
const char *cg_role_name(unsigned role);
unsigned cg_role_of(const char *ctrl);
/* True when word is one of the space-separated words of list (cgroup.controllers). */
bool cg_has_word(const char *list, const char *word);
/* "dir/name", NULL when out of memory. */
char *cg_path_join(const char *dir, const char *name);
/* cgroup_detect.c: finds the hierarchies and fills cg->dirs and cg->version, creating nothing
 * (refused when lim needs a controller no writable hierarchy has); cg_make creates the
 * directories through the version's back end and applies lim. */
int cg_plan(struct lb_cgroup *cg, const char *name, const char *parent,
	    const struct lb_cgroup_limits *lim, struct lb_err **err);
int cg_make(struct lb_cgroup *cg, const struct lb_cgroup_limits *lim, struct lb_err **err);
bool cg_has_dotdot(const char *p);

/* cgroup_fs.c: small file I/O on a cgroup directory (messages name d->path). */
/* The directory that holds every task of cg: its first own one that is open (not shared, not
 * missing); NULL when none is. */
const struct cg_dir *cg_tasks_dir(const struct lb_cgroup *cg);
/* The path that names cg in messages: its first directory of its own (not a shared one). */
const char *cg_display_path(const struct lb_cgroup *cg);
/* The directory of cg carrying role, NULL when none does (a shared one is not cg's own). */
struct cg_dir *cg_find_dir(struct lb_cgroup *cg, unsigned role);
/* Writes val in one write(2); returns 0 or -errno, sets no error (callers test errno values). */
int cg_write_raw(const struct cg_dir *d, const char *file, const char *val);
int cg_write(const struct cg_dir *d, const char *file, const char *val, struct lb_err **err);
int cg_write_u64(const struct cg_dir *d, const char *file, uint64_t v, struct lb_err **err);
int cg_read(const struct cg_dir *d, const char *file, char **out, struct lb_err **err);
/* Reads a file holding one number ("max" reads as UINT64_MAX). */
int cg_read_u64(const struct cg_dir *d, const char *file, uint64_t *out, struct lb_err **err);
/* Value of "key N" in a flat-keyed file (cpu.stat, memory.events, memory.oom_control). */
int cg_read_key(const struct cg_dir *d, const char *file, const char *key, uint64_t *out,
		struct lb_err **err);
/* Like the two above, but a missing file (older kernel, controller off) reads as 0. */
int cg_read_u64_opt(const struct cg_dir *d, const char *file, uint64_t *out, struct lb_err **err);
int cg_read_key_opt(const struct cg_dir *d, const char *file, const char *key, uint64_t *out,
		    struct lb_err **err);
/* cgroup.procs as a malloc'ed array. */
int cg_read_pids(const struct cg_dir *d, pid_t **out, size_t *n, struct lb_err **err);
/* Calls fn on d and on every cgroup below it, parents first. */
/*
 * sig to the processes pids (read from d's cgroup.procs before), each through a pidfd opened
 * before a second read, and only if that read still lists its pid: a pid that exited after the
 * first read and was reused by a process outside the cgroup is never signalled, and the process
 * a pidfd names cannot change after it.
 */
int cg_signal_listed(const struct cg_dir *d, const pid_t *pids, size_t n, int sig,
		     struct lb_err **err);
typedef int (*cg_walk_fn)(const struct cg_dir *d, void *ctx, struct lb_err **err);
int cg_walk(const struct cg_dir *d, cg_walk_fn fn, void *ctx, struct lb_err **err);
/*
 * Sends sig to every task of d and of every cgroup below it (sig 0 only counts) and adds the
 * number of tasks seen to *found. Used where the kernel has no cgroup.kill (v1, old v2).
 */
int cg_signal_tree(const struct cg_dir *d, int sig, size_t *found, struct lb_err **err);
/* Every process of d and its children (malloc'ed). */
int cg_pids_tree(const struct cg_dir *d, pid_t **out, size_t *n, struct lb_err **err);
/* mkdir d->path (EEXIST is an error: never adopt someone else's cgroup) and opens d->fd. */
int cg_dir_make(struct cg_dir *d, struct lb_err **err);
/* Closes d->fd and, when we created it, removes d->path and any child cgroups below it. */
int cg_dir_remove(struct cg_dir *d, struct lb_err **err);
/* Deadline-bounded wait step: sleeps a little longer each round (1, 2, 4 .. 16 ms). */
void cg_backoff(unsigned *round);

/* cgroup_devices.c: only the devices lbbox's /dev offers, and lim->devices with their access, may
 * be opened (root only: the kernel
 * refuses both to anyone else, whose sandboxes are nodev by their user namespace anyway). */
int cg_devices_v1(const struct cg_dir *d, const struct lb_cgroup_limits *lim, struct lb_err **err);
int cg_devices_v2(const struct cg_dir *d, const struct lb_cgroup_limits *lim, struct lb_err **err);

/* cgroup_cpuset.c: pinning to cpus and memory nodes. */
/* True when lim asks for a cpuset (values, or a v1 cpuset cgroup to update later). */
bool cg_cpuset_wanted(const struct lb_cgroup_limits *lim);
/* v1: makes d->path given its parent's cpus and mems (a new v1 cpuset starts empty and takes no
 * task), then writes lim's values. When lim asks for cpus or mems, empty ancestors are filled
 * first; otherwise an empty parent is refused (the plan skips such a cpuset-only hierarchy). */
int cg_cpuset_v1_make(struct cg_dir *d, const struct lb_cgroup_limits *lim, struct lb_err **err);
/* v1: true when the cgroup directory dir holds both cpus and mems, so a child can be given them
 * without writing into dir or above it. */
bool cg_cpuset_v1_can_give(const char *dir);
/* v2: writes lim's values on the new d (the parent enabled +cpuset for it). */
int cg_cpuset_v2_apply(const struct cg_dir *d, const struct lb_cgroup_limits *lim,
		       struct lb_err **err);
/* Refused unless list is within what d's parent offers (its effective cpus or mems). */
int cg_cpuset_within_parent(const struct cg_dir *d, bool v2, bool mems, const char *list,
			    struct lb_err **err);

/* cgroup_v2.c; cg->dirs[0] was filled (path, not created) by cgroup.c. */
int cg_v2_create(struct lb_cgroup *cg, const struct lb_cgroup_limits *lim, struct lb_err **err);
/* Enables the controllers of roles in the cgroup at path for its children, first moving the
 * processes it holds into its CG_LEAF_NAME child (no-internal-process rule). */
int cg_v2_enable_controllers(const char *path, unsigned roles, struct lb_err **err);
/* A child's own memory limit (its parent enables the memory controller for it first). */
int cg_v2_limit_child(const struct cg_dir *d, uint64_t memory_bytes, struct lb_err **err);
int cg_v2_attach(struct lb_cgroup *cg, pid_t pid, struct lb_err **err);
int cg_v2_kill(struct lb_cgroup *cg, struct lb_err **err);
int cg_v2_freeze(struct lb_cgroup *cg, bool freeze, struct lb_err **err);
bool cg_v2_frozen(struct lb_cgroup *cg);
bool cg_v2_is_empty(struct lb_cgroup *cg);
int cg_v2_stats(struct lb_cgroup *cg, struct lb_cgroup_stats *st, struct lb_err **err);

/* cgroup_v1.c; cg->dirs was filled (paths, roles, not created) by cgroup.c. */
int cg_v1_create(struct lb_cgroup *cg, const struct lb_cgroup_limits *lim, struct lb_err **err);
/* A child's own memory limit, on its memory hierarchy's directory d. */
int cg_v1_limit_child(const struct cg_dir *d, uint64_t memory_bytes, struct lb_err **err);
int cg_v1_attach(struct lb_cgroup *cg, pid_t pid, struct lb_err **err);
int cg_v1_join(const struct lb_cgroup *cg, struct lb_err **err);
int cg_v1_kill(struct lb_cgroup *cg, struct lb_err **err);
int cg_v1_freeze(struct lb_cgroup *cg, bool freeze, struct lb_err **err);
bool cg_v1_frozen(struct lb_cgroup *cg);
bool cg_v1_is_empty(struct lb_cgroup *cg);
int cg_v1_stats(struct lb_cgroup *cg, struct lb_cgroup_stats *st, struct lb_err **err);

#endif
