/*
 * Pausing a live sandbox (an OCI runtime's pause / resume): every task of its cgroup stopped by
 * the cgroup layer's freezer, children included, and thawed again. Signalling and listing them
 * by the same cgroup (an OCI runtime's kill --all and ps of a container sharing a pid namespace).
 */
#include <errno.h>
#include <signal.h>

#include "lbbox/base/util.h"
#include "lbbox/sandbox/cgroup.h"
#include "lbbox/sandbox/sandbox.h"
#include "engine.h"

int lb_sandbox_freeze(const struct lb_paths *paths, const char *id, bool freeze,
		      struct lb_err **err)
{
	struct lb_sandbox *sb = NULL;
	if (lb_sandbox_open(paths, id, &sb, err) < 0)
		return -1;
	int r = sb->cg ? lb_cgroup_freeze(sb->cg, freeze, err)
		       : lb_err_set(err, ENOTSUP, "sandbox %s has no cgroup to freeze", id);
	lb_sandbox_close(sb);
	return r;
}

bool lb_sandbox_frozen(const struct lb_paths *paths, const char *id)
{
	struct lb_sandbox *sb = NULL;
	if (lb_sandbox_open(paths, id, &sb, NULL) < 0)
		return false;
	bool frozen = sb->cg && lb_cgroup_frozen(sb->cg);
	lb_sandbox_close(sb);
	return frozen;
}

int lb_sandbox_signal(const struct lb_paths *paths, const char *id, int sig, struct lb_err **err)
{
	struct lb_sandbox *sb = NULL;
	if (lb_sandbox_open(paths, id, &sb, err) < 0)
		return -1;
	int r = !sb->cg		 ? lb_err_set(err, ENOTSUP, "sandbox %s has no cgroup", id)
		: sig == SIGKILL ? lb_cgroup_kill(sb->cg, err)
				 : lb_cgroup_signal(sb->cg, sig, err);
	lb_sandbox_close(sb);
	return r;
}

int lb_sandbox_pids(const struct lb_paths *paths, const char *id, pid_t **pids, size_t *n,
		    struct lb_err **err)
{
	struct lb_sandbox *sb = NULL;
	*pids = NULL;
	*n = 0;
	if (lb_sandbox_open(paths, id, &sb, err) < 0)
		return -1;
	int r = sb->cg ? lb_cgroup_pids(sb->cg, pids, n, err)
		       : lb_err_set(err, ENOTSUP, "sandbox %s has no cgroup", id);
	lb_sandbox_close(sb);
	return r;
}
