/*
 * Pausing a live sandbox (an OCI runtime's pause / resume): every task of its cgroup stopped by
 * the cgroup layer's freezer, children included, and thawed again.
 */
#include <errno.h>

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
