/*
 * Namespaces joined by path (an OCI bundle's network namespace from CNI, a pod's ipc, uts and
 * pid, a cgroup namespace): lbbox enters them just around the clone of pid 1 and returns to its
 * own at once, so pid 1 is born in them (a pid namespace entered by setns is its children's
 * only, which is what the clone needs). pid 1 cannot join them itself once it is in a user
 * namespace of its own: setns needs CAP_SYS_ADMIN over the user namespace that owns the target, the
 * host's. runc's nsexec joins them before it makes the user namespace for the same reason.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lbbox/base/util.h"
#include "engine.h"

static const struct ns_kind {
	int type;
	const char *name, *proc;
} kinds[LB_NS_JOIN_MAX] = {
    {CLONE_NEWNET, "network", "net"},	   {CLONE_NEWIPC, "ipc", "ipc"},
    {CLONE_NEWUTS, "uts", "uts"},	   {CLONE_NEWPID, "pid", "pid"},
    {CLONE_NEWCGROUP, "cgroup", "cgroup"},
};

/* A joinable type's names (kinds[] holds every type lbbox joins). */
static const struct ns_kind *kind_of(int type)
{
	for (size_t k = 0; k < LB_NS_JOIN_MAX; k++)
		if (kinds[k].type == type)
			return &kinds[k];
	return NULL;
}

static const char *ns_name(int type)
{
	return kind_of(type) ? kind_of(type)->name : "?";
}

static const char *ns_proc(int type)
{
	return kind_of(type) ? kind_of(type)->proc : "?";
}

/* Non-blocking: a fifo at the path cannot hang lbbox. Whoever wrote the bundle chose the path
 * (as with runc). */
static int open_one(const struct lb_spec *spec, const char *path, int type, struct lb_ns_join *j,
		    struct lb_err **err)
{
	char self[32];
	size_t k = j->n;
	if (!path)
		return 0;
	j->type[k] = type;
	j->target[k] = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (j->target[k] < 0)
		return lb_err_set(err, errno, "%s namespace %s", ns_name(type), path);
	j->n++;
	snprintf(self, sizeof(self), "/proc/self/ns/%s", ns_proc(type));
	j->saved[k] = open(self, O_RDONLY | O_CLOEXEC);
	if (j->saved[k] < 0)
		return lb_err_set(err, errno, "open %s", self);
	/* the descriptor is what is joined: a path changed since the spec was checked cannot
	 * bring the sysctls to lbbox's own (the host's) namespace */
	if (lb_sysctls_in(spec, type) && lb_same_file(j->target[k], j->saved[k]))
		return lb_err_set(err, 0,
				  "sysctls need a %s namespace that is not the host's: %s is "
				  "lbbox's own",
				  ns_name(type), path);
	/* checked now, so a bad path is a clear refusal before anything is created */
	if (setns(j->target[k], type) < 0)
		return lb_err_set(err, errno, "join %s namespace %s", ns_name(type), path);
	if (setns(j->saved[k], type) < 0)
		return lb_err_set(err, errno, "return to lbbox's %s namespace", ns_name(type));
	return 0;
}

int lb_ns_join_open(const struct lb_spec *spec, struct lb_ns_join *j, struct lb_err **err)
{
	memset(j, 0, sizeof(*j));
	const char *paths[LB_NS_JOIN_MAX] = {spec->netns_path, spec->ipcns_path, spec->utsns_path,
					     spec->pidns_path, spec->cgroupns_path};
	for (size_t k = 0; k < LB_NS_JOIN_MAX; k++)
		j->target[k] = j->saved[k] = -1;
	for (size_t k = 0; k < LB_NS_JOIN_MAX; k++)
		if (open_one(spec, paths[k], kinds[k].type, j, err) < 0)
			return -1;
	return 0;
}

int lb_ns_join_enter(const struct lb_ns_join *j, struct lb_err **err)
{
	for (size_t k = 0; k < j->n; k++)
		if (setns(j->target[k], j->type[k]) < 0)
			return lb_err_set(err, errno, "join a %s namespace", ns_name(j->type[k]));
	return 0;
}

int lb_ns_join_leave(const struct lb_ns_join *j, struct lb_err **err)
{
	int r = 0;
	for (size_t k = 0; k < j->n; k++)
		if (j->saved[k] >= 0 && setns(j->saved[k], j->type[k]) < 0 && r == 0)
			r = lb_err_set(err, errno, "return to lbbox's %s namespace",
				       ns_name(j->type[k]));
	return r;
}

void lb_ns_join_close(struct lb_ns_join *j)
{
	for (size_t k = 0; k < LB_NS_JOIN_MAX; k++) {
		if (j->target[k] >= 0)
			close(j->target[k]);
		if (j->saved[k] >= 0)
			close(j->saved[k]);
		j->target[k] = j->saved[k] = -1;
	}
	j->n = 0;
}

int lb_ns_join_clone_failed(const struct lb_spec *spec, int e, struct lb_err **err)
{
	/* the kernel's word for a pid namespace whose init is gone (kept by a handle only) */
	if (e == ENOMEM && spec->pidns_path)
		return lb_err_set(err, e, "pid namespace %s: its init has exited",
				  spec->pidns_path);
	return lb_err_set(err, e, "clone the sandbox");
}
