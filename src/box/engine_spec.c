/*
 * A Box session's fields on top of the engine spec the caller built (image, user options): the
 * workspace and extra mounts, memory / pids / cpu limits, network, read-only root, as LangBot's
 * Docker backend passes them to `docker run` (§4.1), with two differences: a session without a
 * host_path gets its own writable workspace directory (as the nsjail backend does), and extra
 * mounts go through the same host-path checks as the workspace (LangBot checks only host_path).
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "box/box_internal.h"
#include "lbbox/cleanup.h"
#include "lbbox/util.h"

static int add_mount(struct lb_spec *spec, const char *src, const char *dst, bool ro,
		     struct lb_err **err)
{
	if (spec->n_mounts >= LB_MAX_MOUNTS)
		return lb_err_box(err, LB_BOX_EVALIDATION, "too many mounts (at most %d)",
				  LB_MAX_MOUNTS);
	struct lb_mount *m = &spec->mounts[spec->n_mounts];
	m->source = strdup(src);
	m->target = strdup(dst);
	m->readonly = ro;
	spec->n_mounts++;
	if (!m->source || !m->target)
		return lb_err_set(err, ENOMEM, "mount");
	return 0;
}

static bool under(const char *path, const char *root)
{
	size_t n = strlen(root);
	return !strcmp(root, "/") ||
	       (!strncmp(path, root, n) && (path[n] == '\0' || path[n] == '/'));
}

/*
 * §5.3 step 4, for every host path here (LangBot checks only host_path): the realpath must lie
 * under an allowed root. A path that does not exist yet is judged by its text (no "..").
 */
static int check_allowed(char *const *roots, const char *path, struct lb_err **err)
{
	if (!roots)
		return 0;
	if (!*roots)
		return lb_err_box(
		    err, LB_BOX_EVALIDATION,
		    "host_path mounting is disabled because no allowed_mount_roots are "
		    "configured");
	_cleanup_free_ char *real = realpath(path, NULL);
	const char *p = real ? real : path;
	bool ok = real || (errno == ENOENT && !strstr(path, "/../") && !strstr(path, "/./"));
	for (char *const *r = roots; ok && *r; r++)
		if (under(p, *r))
			return 0;
	return lb_err_box(err, LB_BOX_EVALIDATION, "host_path is outside allowed_mount_roots: %s",
			  p);
}

/* lbbox's own state (runroot: keeper sockets, records; root: the store and its seccomp cache)
 * mounted into a sandbox would hand it the other sandboxes: refused, whatever the roots say. */
static int check_not_own(const struct lb_paths *own, const char *path, struct lb_err **err)
{
	_cleanup_free_ char *real = realpath(path, NULL);
	const char *dirs[] = {own->runroot, own->root};
	for (size_t i = 0; real && i < 2; i++) {
		_cleanup_free_ char *d = realpath(dirs[i], NULL);
		if (d && (under(real, d) || under(d, real)))
			return lb_err_box(err, LB_BOX_EVALIDATION,
					  "host_path %s overlaps lbbox's own state (%s)", path, d);
	}
	return 0;
}

static int workspace_mount(const struct lb_box_spec *bs, const struct lb_paths *own,
			   char *const *roots, const char *workspace, struct lb_spec *spec,
			   struct lb_err **err)
{
	if (!bs->host_path)
		return add_mount(spec, workspace, bs->mount_path, false, err);
	if (bs->host_path_mode == LB_BOX_MOUNT_NONE)
		return 0;
	if (check_allowed(roots, bs->host_path, err) < 0)
		return -1;
	/* LangBot creates a missing host workspace before mounting it */
	if (bs->host_path_mode == LB_BOX_MOUNT_RW && lb_mkdir_p(bs->host_path, 0755, NULL) < 0)
		return lb_err_box(err, LB_BOX_EVALIDATION, "host_path %s cannot be created",
				  bs->host_path);
	if (check_allowed(roots, bs->host_path, err) < 0 || /* now by its realpath */
	    check_not_own(own, bs->host_path, err) < 0)
		return -1;
	return add_mount(spec, bs->host_path, bs->mount_path, bs->host_path_mode == LB_BOX_MOUNT_RO,
			 err);
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

int box_engine_spec(const struct lb_box_spec *bs, const struct lb_paths *own, char *const *roots,
		    const char *workspace, struct lb_spec *spec, struct lb_err **err)
{
	if (check_cpus(bs->cpus, err) < 0 ||
	    workspace_mount(bs, own, roots, workspace, spec, err) < 0)
		return -1;
	for (size_t i = 0; i < bs->n_extra_mounts; i++) {
		const struct lb_box_mount *m = &bs->extra_mounts[i];
		if (m->mode == LB_BOX_MOUNT_NONE)
			continue;
		if (check_allowed(roots, m->host_path, err) < 0 ||
		    check_not_own(own, m->host_path, err) < 0 ||
		    add_mount(spec, m->host_path, m->mount_path, m->mode == LB_BOX_MOUNT_RO, err) <
			0)
			return -1;
	}
	spec->limits.memory_bytes = (uint64_t)bs->memory_mb << 20;
	spec->limits.pids = (uint64_t)bs->pids_limit;
	spec->limits.cpu_period_us = 100000;
	spec->limits.cpu_quota_us = (uint64_t)(bs->cpus * 100000.0 + 0.5);
	spec->net = bs->network == LB_BOX_NET_ON ? LB_NET_ON : LB_NET_OFF;
	spec->readonly_root = bs->read_only_rootfs;
	spec->session = true;
	if (lb_spec_check(spec, err) < 0) {
		if (!(*err)->cls)
			(*err)->cls = LB_BOX_EVALIDATION;
		return -1;
	}
	return 0;
}
