/*
 * The index of exited managed processes, for the retention of §3.5 (records stay
 * completed_process_retention_sec and at most max_completed_processes across the runtime):
 *
 *   RUNROOT/box/exited/<exited ns, 20 digits>@<key>@<proc key>
 *
 * The name alone says when and which: the retention reads one directory of names and sorts them
 * (zero-padded, so by name is by time) instead of every session's records, which it did on
 * every box_get_managed_process (each MCP server's health check, every 5 s). The keeper makes
 * the entry after it has recorded the exit; stop, replace and a session's drop remove it; a
 * record is only ever removed under its session's procs.lock and while it still says that exit,
 * so an entry that went stale cannot take a newer record with it. The reaper's round re-adds
 * entries a killed keeper or an older lbbox did not make.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "box_internal.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"

#define EXITED_NAME_MAX (21 + BOX_KEY_MAX + 1 + 32)

int box_exited_add(const struct lb_box *box, const char *skey, const char *process_id,
		   uint64_t exited_ns, struct lb_err **err)
{
	char pkey[32], name[EXITED_NAME_MAX];
	box_proc_key(process_id, pkey);
	snprintf(name, sizeof(name), "%020llu@%s@%s", (unsigned long long)exited_ns, skey, pkey);
	return box_index_add(box, "exited", name, "exited", err); /* the name says it all */
}

/* "<ns>@<key>@<proc key>" into its parts (pointers into copy); false for any other name. */
static bool parse(const char *name, char *copy, size_t len, uint64_t *ns, char **skey, char **pkey)
{
	char *end;
	snprintf(copy, len, "%s", name);
	errno = 0;
	*ns = strtoull(copy, &end, 10);
	if (errno || end != copy + 20 || *end != '@')
		return false;
	*skey = end + 1;
	char *at = strchr(*skey, '@');
	if (!at || at == *skey || !at[1] || strchr(at + 1, '@'))
		return false;
	if ((*skey)[0] == '.') /* "." and ".." are no session (a key never begins with a dot) */
		return false;
	*at = '\0';
	*pkey = at + 1;
	return true; /* a name from readdir holds no '/' */
}

struct match_ctx {
	const char *skey, *pkey;
};

static void remove_matching(const struct lb_box *box, int dfd, const char *name, void *ctx)
{
	struct match_ctx *m = ctx;
	char copy[EXITED_NAME_MAX], *skey, *pkey;
	uint64_t ns;
	if (!parse(name, copy, sizeof(copy), &ns, &skey, &pkey))
		return;
	if (!strcmp(skey, m->skey) && (!m->pkey || !strcmp(pkey, m->pkey)))
		unlinkat(dfd, name, 0);
}

void box_exited_remove(const struct lb_box *box, const char *skey, const char *process_id)
{
	char pkey[32];
	struct match_ctx m = {.skey = skey};
	if (process_id) {
		box_proc_key(process_id, pkey);
		m.pkey = pkey;
	}
	box_index_each(box, "exited", remove_matching, &m);
}

static void collect(const struct lb_box *box, int dfd, const char *name, void *ctx)
{
	box_names_add(ctx, name);
}

static int newest_first(const void *a, const void *b)
{
	return -strcmp(*(char *const *)a, *(char *const *)b);
}

/* The record goes only while it still records this exit, under its session's procs.lock (not
 * waited for: a start or stop of that session now is left alone, the next prune retries). */
static void drop_one(const struct lb_box *box, const char *name)
{
	char copy[EXITED_NAME_MAX], *skey, *pkey, sdir[LB_PATH_BUF], json[LB_PATH_BUF],
	    entry[LB_PATH_BUF];
	uint64_t ns;
	box_index_path(box, "exited", name, entry, sizeof(entry));
	if (!parse(name, copy, sizeof(copy), &ns, &skey, &pkey)) {
		unlink(entry);
		return;
	}
	snprintf(sdir, sizeof(sdir), "%s/sessions/%s", box->dir, skey);
	snprintf(json, sizeof(json), "%s/procs/%s.json", sdir, pkey);
	_cleanup_close_ int plock = -1;
	if (box_flock(sdir, "procs.lock", LOCK_EX | LOCK_NB, false, &plock, NULL) < 0) {
		if (errno == ENOENT) /* the session is gone */
			unlink(entry);
		return;
	}
	struct lb_box_proc_info info;
	pid_t keeper;
	uint64_t kstart;
	if (box_proc_record_read(json, &info, &keeper, &kstart, NULL) == 0) {
		if (!info.running && !info.history && info.exited_ns == ns)
			unlink(json);
		lb_box_proc_info_free(&info);
	}
	unlink(entry);
}

void box_exited_prune(struct lb_box *box)
{
	uint64_t keep = (uint64_t)box->limits.completed_retention_sec * 1000000000ull;
	uint64_t now = lb_realtime_ns();
	uint64_t cutoff = now > keep ? now - keep : 0;
	struct box_names l = {0};
	box_index_each(box, "exited", collect, &l);
	if (l.n)
		qsort(l.v, l.n, sizeof(*l.v), newest_first);
	for (size_t i = 0; i < l.n; i++) {
		if ((int64_t)i >= box->limits.max_completed_processes ||
		    strtoull(l.v[i], NULL, 10) < cutoff)
			drop_one(box, l.v[i]);
	}
	box_names_free(&l);
}

struct reindex_ctx {
	const struct lb_box *box;
	const char *skey;
};

static void reindex_one(const char *json, struct lb_box_proc_info *info, pid_t keeper,
			uint64_t kstart, void *ctx)
{
	struct reindex_ctx *r = ctx;
	/* exited_ns 0: a keeper killed before it recorded the exit; nothing says when */
	if (!info->running && !info->history && info->exited_ns && info->process_id)
		box_exited_add(r->box, r->skey, info->process_id, info->exited_ns, NULL);
}

void box_exited_reindex(const struct lb_box *box, const char *skey, const char *sdir)
{
	struct reindex_ctx r = {.box = box, .skey = skey};
	box_each_proc(sdir, reindex_one, &r);
}
