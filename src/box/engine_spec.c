/*
 * A Box session's fields on top of the engine spec the caller built (image, user options): the
 * workspace and extra mounts, memory / pids / cpu limits, network, read-only root, as LangBot's
 * Docker backend passes them to `docker run` (§4.1), with two differences: a session without a
 * host_path gets its own writable workspace directory (as the nsjail backend does; a tmpfs of
 * workspace_quota_mb when a quota is set), and extra mounts go through the same host-path checks
 * as the workspace (LangBot checks only host_path).
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "box_internal.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"

static int add_mount(struct lb_spec *spec, const char *src, const char *dst, bool ro, bool owned,
		     struct lb_err **err)
{
	if (spec->n_mounts >= LB_MAX_MOUNTS)
		return lb_err_box(err, LB_BOX_EVALIDATION, "too many mounts (at most %d)",
				  LB_MAX_MOUNTS);
	struct lb_mount *m = &spec->mounts[spec->n_mounts];
	m->source = strdup(src);
	m->target = strdup(dst);
	m->readonly = ro;
	m->owned = owned;
	m->pinned = !owned; /* checked here on its canonical path: the engine binds that path */
	spec->n_mounts++;
	if (!m->source || !m->target)
		return lb_err_set(err, ENOMEM, "mount");
	return 0;
}

/*
 * The session's own workspace under a quota: a tmpfs of that size in the sandbox, so a write past
 * it fails with ENOSPC. It lives exactly as long as the sandbox, which is as long as the session's
 * workspace does anyway (a session whose sandbox died is dropped with its directory), and it
 * leaves no mount on the host. Its pages count towards the session's memory, as those of the
 * directory in the runtime's state (a tmpfs, /run, by default) do.
 */
static int add_quota_tmpfs(struct lb_spec *spec, const struct lb_box_spec *bs, struct lb_err **err)
{
	if (spec->n_mounts >= LB_MAX_MOUNTS)
		return lb_err_box(err, LB_BOX_EVALIDATION, "too many mounts (at most %d)",
				  LB_MAX_MOUNTS);
	struct lb_mount *m = &spec->mounts[spec->n_mounts++];
	*m = (struct lb_mount){.target = strdup(bs->mount_path),
			       .tmpfs_size = (uint64_t)bs->workspace_quota_mb
					     << 20, /* <= LB_BOX_MAX_MB */
			       .tmpfs_mode = 0755,
			       .owned = true};
	return m->target ? 0 : lb_err_set(err, ENOMEM, "mount");
}

static bool under(const char *path, const char *root)
{
	size_t n = strlen(root);
	return !strcmp(root, "/") ||
	       (!strncmp(path, root, n) && (path[n] == '\0' || path[n] == '/'));
}

/* A lower layer's error, as LangBot reports a bad host path. */
static int as_validation(struct lb_err **err)
{
	if (err && *err && !(*err)->cls)
		(*err)->cls = LB_BOX_EVALIDATION;
	return -1;
}

/*
 * §5.3 step 4, for every host path here (LangBot checks only host_path), and lbbox's own rules
 * (blocked paths, never lbbox's state, never the skill store), all on the canonical path the
 * host path has, or will have once created: nothing is created before every rule passed.
 */
static int check_host_path(const struct lb_box *box, char *const *roots, const char *path,
			   char **canonical, struct lb_err **err)
{
	const char *store = box->skills_root;
	if (roots && !*roots)
		return lb_err_box(
		    err, LB_BOX_EVALIDATION,
		    "host_path mounting is disabled because no allowed_mount_roots are "
		    "configured");
	if (lb_path_resolve_missing(path, canonical, err) < 0) {
		lb_err_wrap(err, "host_path %s", path);
		return as_validation(err);
	}
	bool ok = !roots;
	for (char *const *r = roots; !ok && *r; r++)
		ok = under(*canonical, *r);
	if (!ok)
		return lb_err_box(err, LB_BOX_EVALIDATION,
				  "host_path is outside allowed_mount_roots: %s", *canonical);
	/* a sandbox that could write the store could plant links there, or rewrite another
	 * Workspace's skills */
	if (*store && (under(*canonical, store) || under(store, *canonical)))
		return lb_err_box(err, LB_BOX_EVALIDATION,
				  "host_path %s overlaps the skill store %s", *canonical, store);
	if (lb_check_host_path(*canonical, path, err) < 0 ||
	    lb_paths_check_mount(&box->paths, *canonical, path, err) < 0)
		return as_validation(err);
	return 0;
}

/* A skill package the store found (canonical, inside it): mounted only while still so, not
 * wherever a link that replaced one of its components points now. */
static int check_skill_mount(const struct lb_box *box, const char *path, char **canonical,
			     struct lb_err **err)
{
	if (lb_path_resolve_missing(path, canonical, err) < 0)
		return as_validation(err);
	if (strcmp(*canonical, path) || !*box->skills_root || !under(path, box->skills_root))
		return lb_err_box(err, LB_BOX_EVALIDATION,
				  "skill package %s changed while being mounted", path);
	if (lb_check_host_path(*canonical, path, err) < 0 ||
	    lb_paths_check_mount(&box->paths, *canonical, path, err) < 0)
		return as_validation(err);
	return 0;
}

static int workspace_mount(const struct lb_box_spec *bs, const struct lb_box *box,
			   const char *workspace, struct lb_spec *spec, struct lb_err **err)
{
	/* the session's own workspace, in lbbox's state: not a host path of the user's */
	if (lb_box_workspace_quota_hard(bs))
		return add_quota_tmpfs(spec, bs, err);
	if (!bs->host_path)
		return add_mount(spec, workspace, bs->mount_path, false, true, err);
	if (bs->host_path_mode == LB_BOX_MOUNT_NONE)
		return 0;
	_cleanup_free_ char *canonical = NULL;
	if (check_host_path(box, box->allowed_roots, bs->host_path, &canonical, err) < 0)
		return -1;
	/* LangBot creates a missing host workspace before mounting it */
	if (bs->host_path_mode == LB_BOX_MOUNT_RW && lb_mkdir_nofollow(canonical, 0755, err) < 0) {
		lb_err_wrap(err, "host_path %s cannot be created", bs->host_path);
		return as_validation(err);
	}
	return add_mount(spec, canonical, bs->mount_path, bs->host_path_mode == LB_BOX_MOUNT_RO,
			 false, err);
}

/*
 * Docker's rule for --cpus, where LangBot's Docker backend sends cpus: from 0.01 to the number
 * of CPUs this process may run on. Beyond that a quota could never be used up and the kernel
 * refuses it (a raw cgroup write error), or it overflows on its way to microseconds; below,
 * the kernel's 1 ms minimum quota would not be what was asked for.
 */
static int check_cpus(double cpus, struct lb_err **err)
{
	cpu_set_t set;
	long n = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set)
							      : sysconf(_SC_NPROCESSORS_ONLN);
	if (n < 1)
		n = 1;
	if (cpus >= 0.01 && cpus <= (double)n)
		return 0;
	return lb_err_box(err, LB_BOX_EVALIDATION,
			  "cpus=%g is out of range: the range of CPUs is from 0.01 to %ld.00, as "
			  "there are only %ld CPUs available",
			  cpus, n, n);
}

int box_engine_spec(const struct lb_box *box, const struct lb_box_spec *bs, const char *workspace,
		    struct lb_spec *spec, struct lb_err **err)
{
	const struct lb_paths *own = &box->paths;
	if (check_cpus(bs->cpus, err) < 0 || workspace_mount(bs, box, workspace, spec, err) < 0)
		return -1;
	for (size_t i = 0; i < bs->n_extra_mounts; i++) {
		const struct lb_box_mount *m = &bs->extra_mounts[i];
		if (m->mode == LB_BOX_MOUNT_NONE)
			continue;
		_cleanup_free_ char *canonical = NULL;
		if ((m->runtime_owned ? check_skill_mount(box, m->host_path, &canonical, err)
				      : check_host_path(box, box->allowed_roots, m->host_path,
							&canonical, err)) < 0 ||
		    add_mount(spec, canonical, m->mount_path, m->mode == LB_BOX_MOUNT_RO, false,
			      err) < 0)
			return -1;
	}
	spec->limits.memory_bytes = (uint64_t)bs->memory_mb << 20;
	spec->limits.pids = (uint64_t)bs->pids_limit;
	spec->limits.cpu_period_us = 100000;
	spec->limits.cpu_quota_us = (uint64_t)(bs->cpus * 100000.0 + 0.5);
	spec->net = bs->network == LB_BOX_NET_ON ? LB_NET_ON : LB_NET_OFF;
	spec->net_opts = box->net; /* the runtime's bridge, subnet, nameservers, allowed hosts */
	memcpy(spec->net_opts.publish, bs->publish, sizeof(bs->publish));
	spec->net_opts.n_publish = bs->n_publish;
	spec->readonly_root = bs->read_only_rootfs;
	spec->session = true;
	if (lb_spec_check(spec, own, err) < 0)
		return as_validation(err);
	return 0;
}
