/*
 * Retention of exited managed processes (§3.5): records stay completed_process_retention_sec
 * (300 s) and at most max_completed_processes (256) across the runtime, oldest dropped first.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "box_internal.h"
#include "lbbox/base/util.h"
#include "lbbox/base/cleanup.h"

struct exited {
	char *json;
	uint64_t at;
};

struct prune_ctx {
	struct exited *v;
	size_t n;
	uint64_t cutoff;
};

static void note_exited(const char *json, struct lb_box_proc_info *info, pid_t keeper,
			uint64_t kstart, void *ctx)
{
	struct prune_ctx *p = ctx;
	/* a detached run's process stays listed (Exited) until its run is removed */
	if (info->running || info->history)
		return;
	if (info->exited_ns && info->exited_ns < p->cutoff) {
		unlink(json);
		return;
	}
	struct exited *nv = realloc(p->v, (p->n + 1) * sizeof(*nv));
	if (!nv)
		return;
	p->v = nv;
	p->v[p->n].json = strdup(json);
	p->v[p->n++].at = info->exited_ns;
}

static int cmp_exited(const void *a, const void *b)
{
	uint64_t x = ((const struct exited *)a)->at, y = ((const struct exited *)b)->at;
	return x < y ? 1 : x > y ? -1 : 0; /* newest first */
}

static void note_session(struct lb_box *box, const char *key, const char *sdir, void *ctx)
{
	box_each_proc(sdir, note_exited, ctx);
}

void box_procs_prune(struct lb_box *box)
{
	uint64_t keep = (uint64_t)box->limits.completed_retention_sec * 1000000000ull;
	uint64_t now = lb_realtime_ns();
	struct prune_ctx p = {.cutoff = now > keep ? now - keep : 0};
	box_each_session(box, note_session, &p);
	if (p.n)
		qsort(p.v, p.n, sizeof(*p.v), cmp_exited);
	for (size_t i = 0; i < p.n; i++) {
		if ((int64_t)i >= box->limits.max_completed_processes)
			unlink(p.v[i].json); /* the oldest go first */
		free(p.v[i].json);
	}
	free(p.v);
}
