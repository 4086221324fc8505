/* Resource limits of the command: sane defaults (nofile 1024, no core dumps), then the user's.
 * No RLIMIT_AS by default: it breaks runtimes that reserve address space (node, uv, Go). */
#include <errno.h>
#include <sys/resource.h>

#include "engine.h"

static int set_one(int resource, rlim_t soft, rlim_t hard, bool clamp, struct lb_err **err)
{
	struct rlimit cur, want = {soft, hard};
	if (getrlimit(resource, &cur) < 0)
		return lb_err_set(err, errno, "getrlimit %d", resource);
	/* Defaults never try to raise a hard limit: without CAP_SYS_RESOURCE that fails. */
	if (clamp && cur.rlim_max != RLIM_INFINITY && want.rlim_max > cur.rlim_max) {
		want.rlim_max = cur.rlim_max;
		if (want.rlim_cur > want.rlim_max)
			want.rlim_cur = want.rlim_max;
	}
	if (setrlimit(resource, &want) < 0)
		return lb_err_set(err, errno, "set ulimit %d to %llu:%llu", resource,
				  (unsigned long long)soft, (unsigned long long)hard);
	return 0;
}

int lb_apply_rlimits(const struct lb_spec *spec, struct lb_err **err)
{
	if (set_one(RLIMIT_NOFILE, 1024, 1024, true, err) < 0 ||
	    set_one(RLIMIT_CORE, 0, 0, true, err) < 0)
		return -1;
	for (size_t i = 0; i < spec->n_rlimits; i++) {
		const struct lb_rlimit *r = &spec->rlimits[i];
		if (set_one(r->resource, r->soft, r->hard, false, err) < 0)
			return -1;
	}
	return 0;
}
