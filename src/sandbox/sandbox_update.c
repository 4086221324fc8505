/* New limits for a live sandbox (lbbox-runc update): its cgroup, then the record in its state. */
#include "lbbox/sandbox/sandbox.h"
#include "engine.h"

int lb_sandbox_update(const struct lb_paths *paths, const char *id,
		      const struct lb_cgroup_update *u, struct lb_err **err)
{
	struct lb_sandbox *sb = NULL;
	if (lb_cgroup_update_check(u, err) < 0 || lb_sandbox_open(paths, id, &sb, err) < 0)
		return -1;
	int r = lb_cgroup_update(sb->cg, u, err);
	if (r == 0)
		r = lb_state_update_limits(sb->statedir, u, err);
	lb_sandbox_close(sb);
	return r;
}
