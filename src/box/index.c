/*
 * Two runtime-wide indexes, so that box_status and the managed-process capacity check read one
 * directory of names instead of every session (issue 18):
 *
 *   RUNROOT/box/live/<key>                   a symlink to the session's id: the session has its
 *                                            record (made right after session.json is written,
 *                                            removed right before it becomes deleting.json,
 *                                            both under the global lock)
 *   RUNROOT/box/running/<key>@<proc key>     a symlink to "<keeper pid> <start time>": a running
 *                                            managed process (made by its keeper before the
 *                                            process starts, removed by it before the exit is
 *                                            recorded, or by whoever stops, replaces or drops)
 *
 * Symlinks, because one is made whole by one syscall and read by one readlink. A session key
 * never holds '@' (box_session_key), so an entry's name splits at its first '@'. A keeper
 * killed outright leaves its entry: entries are only ever trusted as names by box_status; the
 * capacity check validates each (keeper alive by pid and start time) and removes stale ones.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "box_internal.h"
#include "lbbox/base/cleanup.h"

const char *box_sdir_key(const char *sdir)
{
	const char *slash = strrchr(sdir, '/');
	return slash ? slash + 1 : sdir;
}

void box_index_path(const struct lb_box *box, const char *dir, const char *name, char *out,
		    size_t len)
{
	snprintf(out, len, "%s/%s/%s", box->dir, dir, name);
}

/* target at RUNROOT/box/dir/name; an existing one is kept (it says the same). */
int box_index_add(const struct lb_box *box, const char *dir, const char *name, const char *target,
		  struct lb_err **err)
{
	char path[LB_PATH_BUF];
	snprintf(path, sizeof(path), "%s/%s", box->dir, dir);
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return lb_err_set(err, errno, "create %s", path);
	box_index_path(box, dir, name, path, sizeof(path));
	if (symlink(target, path) < 0 && errno != EEXIST)
		return lb_err_set(err, errno, "create %s", path);
	return 0;
}

int box_live_add(const struct lb_box *box, const char *key, const char *id, struct lb_err **err)
{
	char target[BOX_LIVE_ID_MAX + 1];
	snprintf(target, sizeof(target), "%s", id); /* enough of it for any tenant's prefix */
	return box_index_add(box, "live", key, target, err);
}

void box_live_remove(const struct lb_box *box, const char *key)
{
	char path[LB_PATH_BUF];
	box_index_path(box, "live", key, path, sizeof(path));
	unlink(path);
}

static void running_name(const char *skey, const char *process_id, char *out, size_t len)
{
	char pkey[32];
	box_proc_key(process_id, pkey);
	snprintf(out, len, "%s@%s", skey, pkey);
}

static void keeper_text(pid_t keeper, uint64_t start, char *out, size_t len)
{
	snprintf(out, len, "%d %llu", (int)keeper, (unsigned long long)start);
}

int box_running_add(const struct lb_box *box, const char *skey, const char *process_id,
		    pid_t keeper, uint64_t start, struct lb_err **err)
{
	char name[BOX_KEY_MAX + 40], target[64], path[LB_PATH_BUF];
	running_name(skey, process_id, name, sizeof(name));
	keeper_text(keeper, start, target, sizeof(target));
	/* a stale one (its keeper was killed): the caller holds the session's procs.lock and the
	 * capacity lock, so no one else makes this name meanwhile */
	box_index_path(box, "running", name, path, sizeof(path));
	unlink(path);
	return box_index_add(box, "running", name, target, err);
}

void box_running_remove(const struct lb_box *box, const char *skey, const char *process_id,
			pid_t keeper, uint64_t start)
{
	char name[BOX_KEY_MAX + 40], path[LB_PATH_BUF], want[64], have[64];
	running_name(skey, process_id, name, sizeof(name));
	box_index_path(box, "running", name, path, sizeof(path));
	if (keeper > 0) { /* a keeper removes its own entry only, never a successor's */
		keeper_text(keeper, start, want, sizeof(want));
		ssize_t n = readlink(path, have, sizeof(have) - 1);
		if (n < 0 || ((have[n] = '\0'), strcmp(have, want) != 0))
			return;
	}
	unlink(path);
}

void box_names_add(struct box_names *s, const char *name)
{
	char **nv = reallocarray(s->v, s->n + 1, sizeof(char *));
	if (nv)
		s->v = nv;
	if (!nv || !(s->v[s->n] = strdup(name)))
		s->oom = true;
	else
		s->n++;
}

void box_names_free(struct box_names *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
}

void box_index_each(const struct lb_box *box, const char *dir, box_index_fn fn, void *ctx)
{
	char path[LB_PATH_BUF];
	snprintf(path, sizeof(path), "%s/%s", box->dir, dir);
	_cleanup_closedir_ DIR *d = opendir(path);
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.')
			fn(box, dirfd(d), de->d_name, ctx);
}

static void remove_if_session(const struct lb_box *box, int dfd, const char *name, void *ctx)
{
	size_t n = strlen(ctx);
	if (!strncmp(name, ctx, n) && name[n] == '@')
		unlinkat(dfd, name, 0);
}

void box_running_remove_session(const struct lb_box *box, const char *skey)
{
	box_index_each(box, "running", remove_if_session, (void *)skey);
}

void box_index_forget(const struct lb_box *box, const char *skey, const char *process_id)
{
	if (process_id)
		box_running_remove(box, skey, process_id, 0, 0);
	else
		box_running_remove_session(box, skey);
	box_exited_remove(box, skey, process_id);
}

struct validate_ctx {
	size_t n;
	bool heal;
};

static void validate_one(const struct lb_box *box, int dfd, const char *name, void *ctx)
{
	struct validate_ctx *v = ctx;
	char text[64];
	int pid = 0;
	unsigned long long start = 0;
	ssize_t n = readlinkat(dfd, name, text, sizeof(text) - 1);
	if (n > 0 && ((text[n] = '\0'), sscanf(text, "%d %llu", &pid, &start) == 2) &&
	    box_keeper_alive(pid, start, NULL)) {
		v->n++;
		return;
	}
	if (v->heal) /* its keeper died without removing it (SIGKILL) */
		unlinkat(dfd, name, 0);
}

size_t box_running_count(const struct lb_box *box, bool heal)
{
	struct validate_ctx v = {.heal = heal};
	box_index_each(box, "running", validate_one, &v);
	return v.n;
}

void box_running_heal(const struct lb_box *box)
{
	_cleanup_close_ int cap = -1;
	/* under the capacity lock: a keeper spawned meanwhile is never taken for a stale one */
	if (box_flock(box->dir, "procs-capacity.lock", LOCK_EX, true, &cap, NULL) == 0)
		box_running_count(box, true);
}
