/*
 * Per-sandbox cgroups, the public API: create (plan in cgroup_detect.c, then the v2 or v1 back
 * end), and the dispatch of every operation to cgroup_v2.c or cgroup_v1.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"
#include "cgroup_internal.h"

/* Relative, no empty or ".." component: "sb-1" or, to nest under an existing one, "sb-1/exec-2". */
static int cg_check_name(const char *name, struct lb_err **err)
{
	if (!name || !*name || *name == '/' || name[strlen(name) - 1] == '/' ||
	    strstr(name, "//") || cg_has_dotdot(name))
		return lb_err_set(err, EINVAL, "invalid cgroup name '%s'", name ? name : "");
	return 0;
}

bool lb_cgroup_name_ok(const char *name)
{
	return name && *name && !strchr(name, '/') && strcmp(name, ".") && strcmp(name, "..") &&
	       strlen(name) <= 255 && strcmp(name, CG_LEAF_NAME);
}

void cg_release(struct lb_cgroup *cg)
{
	for (size_t i = 0; i < cg->ndirs; i++) {
		if (cg->dirs[i].fd >= 0)
			close(cg->dirs[i].fd);
		free(cg->dirs[i].path);
		free(cg->dirs[i].hier);
	}
	free(cg);
}

void cg_fill_views(struct lb_cgroup *cg)
{
	size_t h = 0;
	for (size_t i = 0; i < cg->ndirs; i++) {
		cg->paths[i] = cg->dirs[i].path;
		/* the sandbox sees what holds its limits and accounting, not the freezer */
		if (cg->dirs[i].hier && (cg->dirs[i].roles & (CG_LIMIT_ROLES | CG_CPUACCT)))
			cg->hiers[h++] = cg->dirs[i].hier;
	}
}

int lb_cgroup_plan(const char *name, const char *parent, const struct lb_cgroup_limits *lim,
		   struct lb_cgroup **out, struct lb_err **err)
{
	static const struct lb_cgroup_limits no_limits;

	if (cg_check_name(name, err) < 0)
		return -1;
	struct lb_cgroup *cg = calloc(1, sizeof(*cg));
	if (!cg)
		return lb_err_set(err, ENOMEM, "create cgroup %s", name);
	if (cg_plan(cg, name, parent, lim ? lim : &no_limits, err) < 0) {
		cg_release(cg);
		return lb_err_wrap(err, "create cgroup %s", name);
	}
	cg_fill_views(cg);
	*out = cg;
	return 0;
}

int lb_cgroup_make(struct lb_cgroup *cg, const struct lb_cgroup_limits *lim, struct lb_err **err)
{
	static const struct lb_cgroup_limits no_limits;

	if (cg_make(cg, lim ? lim : &no_limits, err) < 0) {
		for (size_t i = 0; i < cg->ndirs; i++)
			cg_dir_remove(&cg->dirs[i], NULL);
		return lb_err_wrap(err, "create cgroup %s", cg->ndirs ? cg->dirs[0].path : "");
	}
	cg_fill_views(cg);
	return 0;
}

int lb_cgroup_create(const char *name, const char *parent, const struct lb_cgroup_limits *lim,
		     struct lb_cgroup **out, struct lb_err **err)
{
	if (lb_cgroup_plan(name, parent, lim, out, err) < 0)
		return -1;
	if (lb_cgroup_make(*out, lim, err) < 0) {
		cg_release(*out);
		*out = NULL;
		return -1;
	}
	return 0;
}

/* ---- dispatch ------------------------------------------------------------------------------ */

enum lb_cgroup_version lb_cgroup_version(const struct lb_cgroup *cg)
{
	return cg ? cg->version : LB_CGROUP_NONE;
}

int lb_cgroup_dirfd(const struct lb_cgroup *cg)
{
	return cg && cg->version == LB_CGROUP_V2 ? cg->dirs[0].fd : -1;
}

int lb_cgroup_attach(struct lb_cgroup *cg, pid_t pid, struct lb_err **err)
{
	switch (cg->version) {
	case LB_CGROUP_V2:
		return cg_v2_attach(cg, pid, err);
	case LB_CGROUP_V1:
		return cg_v1_attach(cg, pid, err);
	default:
		return 0;
	}
}

int lb_cgroup_join(const struct lb_cgroup *cg, struct lb_err **err)
{
	switch (cg->version) {
	case LB_CGROUP_V2:
		return cg_write(&cg->dirs[0], "cgroup.procs", "0", err);
	case LB_CGROUP_V1:
		return cg_v1_join(cg, err);
	default:
		return 0;
	}
}

int lb_cgroup_kill(struct lb_cgroup *cg, struct lb_err **err)
{
	switch (cg->version) {
	case LB_CGROUP_V2:
		return cg_v2_kill(cg, err);
	case LB_CGROUP_V1:
		return cg_v1_kill(cg, err);
	default:
		return 0;
	}
}

/* Any one hierarchy of its own holds every process of the sandbox (v1: each, and its child
 * cgroups). */
int lb_cgroup_signal(struct lb_cgroup *cg, int sig, struct lb_err **err)
{
	size_t found = 0;
	const struct cg_dir *d = cg_tasks_dir(cg);
	return d ? cg_signal_tree(d, sig, &found, err) : 0;
}

int lb_cgroup_pids(struct lb_cgroup *cg, pid_t **pids, size_t *n, struct lb_err **err)
{
	const struct cg_dir *d = cg_tasks_dir(cg);
	*pids = NULL;
	*n = 0;
	return d ? cg_pids_tree(d, pids, n, err) : 0;
}

int lb_cgroup_freeze(struct lb_cgroup *cg, bool freeze, struct lb_err **err)
{
	switch (cg->version) {
	case LB_CGROUP_V2:
		return cg_v2_freeze(cg, freeze, err);
	case LB_CGROUP_V1:
		return cg_v1_freeze(cg, freeze, err);
	default:
		return lb_err_set(err, ENOTSUP, "no cgroup to freeze");
	}
}

bool lb_cgroup_frozen(struct lb_cgroup *cg)
{
	switch (cg->version) {
	case LB_CGROUP_V2:
		return cg_v2_frozen(cg);
	case LB_CGROUP_V1:
		return cg_v1_frozen(cg);
	default:
		return false;
	}
}

bool lb_cgroup_is_empty(struct lb_cgroup *cg)
{
	switch (cg->version) {
	case LB_CGROUP_V2:
		return cg_v2_is_empty(cg);
	case LB_CGROUP_V1:
		return cg_v1_is_empty(cg);
	default:
		return true;
	}
}

int lb_cgroup_stats(struct lb_cgroup *cg, struct lb_cgroup_stats *st, struct lb_err **err)
{
	memset(st, 0, sizeof(*st));
	switch (cg->version) {
	case LB_CGROUP_V2:
		return cg_v2_stats(cg, st, err);
	case LB_CGROUP_V1:
		return cg_v1_stats(cg, st, err);
	default:
		return 0;
	}
}

/*
 * The common end: every task gone and no child cgroup, so each directory goes with one rmdir,
 * without reading a task list first. Stops at the first that will not (tasks, children, a memory
 * cgroup still busy), leaving it and the rest to the careful path. On v1 every task of the
 * sandbox is in every hierarchy, so an empty first one means none is left to kill in the others.
 */
/* One directory gone by its rmdir alone (none of ours to remove is fine too), its fd closed. */
static bool cg_dir_rmdir_empty(struct cg_dir *d)
{
	if (d->created && rmdir(d->path) < 0 && errno != ENOENT)
		return false;
	if (d->fd >= 0)
		close(d->fd);
	d->fd = -1;
	d->created = false;
	return true;
}

static bool cg_remove_empty(struct lb_cgroup *cg)
{
	for (size_t i = 0; i < cg->ndirs; i++)
		if (!cg_dir_rmdir_empty(&cg->dirs[i]))
			return false;
	return true;
}

int lb_cgroup_destroy(struct lb_cgroup *cg, struct lb_err **err)
{
	int r = 0;

	if (!cg)
		return 0;
	if (cg_remove_empty(cg)) {
		cg_release(cg);
		return 0;
	}
	if (!lb_cgroup_is_empty(cg) && lb_cgroup_kill(cg, err) < 0)
		r = -1;
	for (size_t i = 0; i < cg->ndirs; i++)
		if (cg_dir_remove(&cg->dirs[i], err) < 0)
			r = -1;
	cg_release(cg);
	return r;
}

bool lb_cgroup_remove_if_empty(struct lb_cgroup *cg)
{
	if (!cg)
		return true;
	/* the first directory we made decides: the kernel refuses to remove a cgroup with a task
	 * or a child (EBUSY), and on v1 every task is in every hierarchy */
	for (size_t i = 0; i < cg->ndirs; i++) {
		if (!cg->dirs[i].created)
			continue;
		if (!cg_dir_rmdir_empty(&cg->dirs[i])) {
			cg_release(cg);
			return false;
		}
		break;
	}
	lb_cgroup_destroy(cg, NULL); /* the others: empty too, so each goes with its rmdir */
	return true;
}

const char *const *lb_cgroup_v1_hierarchies(const struct lb_cgroup *cg)
{
	return cg->hiers;
}

const char *const *lb_cgroup_paths(const struct lb_cgroup *cg)
{
	return cg->paths;
}
