/*
 * Cgroups of live sandboxes seen from a later lbbox process: a sandbox's cgroup reopened from its
 * state, and the child cgroups every exec and managed process gets below it, so a timeout or a
 * stop kills exactly that command's process tree (grandchildren included) and nothing else.
 * Limits stay on the sandbox's cgroup; children need no controllers of their own, which also
 * keeps them legal on v2 next to the sandbox's pid 1 (no-internal-process applies only to
 * cgroups that enable controllers for their children). The exception is a child's own memory
 * limit (a managed process's memory_mb): on v2 the sandbox's processes then move into a leaf.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lbbox/sandbox/cgroup.h"
#include "lbbox/base/cleanup.h"
#include "cgroup_internal.h"

static int cg_copy_dir(struct cg_dir *d, const char *path, const char *hier, unsigned roles,
		       struct lb_err **err)
{
	d->fd = -1;
	d->roles = roles;
	d->path = strdup(path);
	d->hier = hier ? strdup(hier) : NULL;
	if (!d->path || (hier && !d->hier))
		return lb_err_set(err, ENOMEM, "cgroup %s", path);
	return 0;
}

int lb_cgroup_open(enum lb_cgroup_version version, const struct lb_cgroup_dir_info *dirs, size_t n,
		   bool owned, struct lb_cgroup **out, struct lb_err **err)
{
	if (n > CG_MAX_DIRS)
		return lb_err_set(err, EINVAL, "too many cgroup directories (%zu)", n);
	struct lb_cgroup *cg = calloc(1, sizeof(*cg));
	if (!cg)
		return lb_err_set(err, ENOMEM, "cgroup");
	cg->version = version;
	for (size_t i = 0; i < n; i++, cg->ndirs++) {
		struct cg_dir *d = &cg->dirs[i];
		if (cg_copy_dir(d, dirs[i].path, dirs[i].hier, dirs[i].roles, err) < 0)
			goto fail;
		d->fd = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (d->fd < 0 && errno != ENOENT) {
			lb_err_set(err, errno, "open %s", d->path);
			goto fail;
		}
		d->created = owned;
	}
	cg_fill_views(cg);
	*out = cg;
	return 0;
fail:
	cg->ndirs++;
	cg_release(cg);
	return -1;
}

size_t lb_cgroup_dir_info(const struct lb_cgroup *cg, struct lb_cgroup_dir_info *out, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; cg && i < cg->ndirs && n < max; i++, n++)
		out[n] = (struct lb_cgroup_dir_info){
		    .path = cg->dirs[i].path, .hier = cg->dirs[i].hier, .roles = cg->dirs[i].roles};
	return n;
}

/*
 * v1 hierarchies where the child joins its sandbox's directory instead of getting one below it
 * (shared: never removed with the child; kills, task lists and stats skip it). A child needs a
 * directory of its own only where it has something of its own: its tasks, to be listed and
 * killed (freezer, pids), and a memory limit of its own. Elsewhere the sandbox's limits,
 * accounting and device fence hold the child's processes all the same (its threads then share
 * the sandbox's cpu time with the sandbox's other processes one by one, as with docker exec,
 * not as a group of their own), and each directory made and removed costs an exec time under
 * the kernel's one cgroup lock:
 * - cpuset: always, a child of its own would start empty (the v1 trap), and an update of the
 *   sandbox's cpus would then be refused while a child still held the old ones;
 * - cpu, cpuacct, devices: no child has limits, statistics or devices of its own there;
 * - memory, without a memory limit of the child's own: besides, every memory cgroup removed
 *   makes the kernel walk each file system's reclaim lists under the global cgroup lock
 *   (memcg_reparent_list_lrus): with a thousand sandboxes alive, their mounts made each exec's
 *   removal the next exec's wait.
 * All but cpuset alone only while a hierarchy of the child's own remains beside them, to hold
 * its tasks. Not handled: cpuset co-mounted with freezer or pids (or with memory, for a child
 * with a memory limit of its own) gets a child below, which starts with no cpus or mems and
 * takes no task; no host seen mounts cpuset so.
 */
#define CG_CHILD_SHARES (CG_CPUSET | CG_CPU | CG_CPUACCT | CG_DEVICES)

static bool cg_child_shares(const struct lb_cgroup *parent, const struct cg_dir *p,
			    uint64_t memory_bytes)
{
	if (parent->version != LB_CGROUP_V1)
		return false;
	if (p->roles == CG_CPUSET)
		return true;
	unsigned shares = CG_CHILD_SHARES | (memory_bytes ? 0 : CG_MEMORY);
	if (p->roles & ~shares)
		return false;
	for (size_t i = 0; i < parent->ndirs; i++)
		if (parent->dirs[i].roles & ~shares)
			return true;
	return false;
}

static int cg_share_dir(struct cg_dir *d, const struct cg_dir *p, struct lb_err **err)
{
	if (cg_copy_dir(d, p->path, p->hier, p->roles, err) < 0)
		return -1;
	d->shared = true;
	d->fd = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return d->fd < 0 ? lb_err_set(err, errno, "open %s", d->path) : 0;
}

/* Before the child exists: the parent must be able to give it a memory limit (v2: enabled). */
static int cg_child_prepare(const struct lb_cgroup *parent, const char *name, uint64_t memory_bytes,
			    struct lb_err **err)
{
	if (!memory_bytes)
		return 0;
	for (size_t i = 0; i < parent->ndirs; i++)
		if (parent->dirs[i].roles & CG_MEMORY)
			return parent->version == LB_CGROUP_V2
				   ? cg_v2_enable_controllers(parent->dirs[i].path, CG_MEMORY, err)
				   : 0;
	return lb_err_set(err, 0, "cannot enforce the memory limit of %s: no memory cgroup", name);
}

static int cg_child_limit(const struct lb_cgroup *cg, uint64_t memory_bytes, struct lb_err **err)
{
	for (size_t i = 0; memory_bytes && i < cg->ndirs; i++)
		if (cg->dirs[i].roles & CG_MEMORY)
			return cg->version == LB_CGROUP_V2
				   ? cg_v2_limit_child(&cg->dirs[i], memory_bytes, err)
				   : cg_v1_limit_child(&cg->dirs[i], memory_bytes, err);
	return 0;
}

static int cg_child_dir(struct cg_dir *d, const struct cg_dir *p, const char *name,
			struct lb_err **err)
{
	_cleanup_free_ char *path = cg_path_join(p->path, name);
	if (!path)
		return lb_err_set(err, ENOMEM, "cgroup");
	return cg_copy_dir(d, path, p->hier, p->roles, err) < 0 ? -1 : cg_dir_make(d, err);
}

int lb_cgroup_create_child(const struct lb_cgroup *parent, const char *name, uint64_t memory_bytes,
			   struct lb_cgroup **out, struct lb_err **err)
{
	if (!lb_cgroup_name_ok(name))
		return lb_err_set(err, EINVAL, "invalid cgroup name '%s'", name ? name : "");
	if (cg_child_prepare(parent, name, memory_bytes, err) < 0)
		return -1;
	struct lb_cgroup *cg = calloc(1, sizeof(*cg));
	if (!cg)
		return lb_err_set(err, ENOMEM, "cgroup");
	cg->version = parent->version;
	for (size_t i = 0; i < parent->ndirs; i++) {
		const struct cg_dir *p = &parent->dirs[i];
		struct cg_dir *d = &cg->dirs[cg->ndirs++];
		d->fd = -1; /* cleaned up below even when it fails before it is opened */
		if (cg_child_shares(parent, p, memory_bytes) ? cg_share_dir(d, p, err) < 0
							     : cg_child_dir(d, p, name, err) < 0)
			goto fail;
	}
	if (cg_child_limit(cg, memory_bytes, err) < 0)
		goto fail;
	cg_fill_views(cg);
	*out = cg;
	return 0;
fail:
	for (size_t i = 0; i < cg->ndirs; i++)
		cg_dir_remove(&cg->dirs[i], NULL);
	cg_release(cg);
	return -1;
}

void lb_cgroup_forget(struct lb_cgroup *cg)
{
	if (cg)
		cg_release(cg);
}

int lb_cgroup_remove_path(const char *path, struct lb_err **err)
{
	struct cg_dir d = {.path = (char *)path, .fd = -1, .created = true};
	return cg_dir_remove(&d, err);
}
