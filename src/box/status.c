/*
 * The runtime's counts for box_status (§3.7): sessions, and their running managed processes, of
 * the callers whose ids begin with a prefix. LangBot asks on every agent turn, so the cost must
 * not grow with the sessions: two directory reads of the indexes (index.c), RUNROOT/box/live
 * and RUNROOT/box/running, and one readlink per hashed session name when a prefix is given (its
 * id is not its name). Nothing is opened per session.
 *
 * The meaning is the one of the session records: a session counts from its record's write to
 * its delete's start (sessions being made or deleted do not), a process while it is indexed
 * as running. A keeper killed outright (SIGKILL) is counted until the next managed-process start
 * or reaper round validates the index (box_running_count): names only here.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "box_internal.h"
#include "lbbox/base/cleanup.h"

struct names {
	char **v;
	size_t n;
};

static void names_free(struct names *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool names_add(struct names *s, const char *name)
{
	char **nv = reallocarray(s->v, s->n + 1, sizeof(char *));
	if (!nv)
		return false;
	s->v = nv;
	return (s->v[s->n] = strdup(name)) && ++s->n;
}

static bool id_matches(const char *prefix, size_t len, const char *id)
{
	return !strncmp(id, prefix, len) && id[len] == '-';
}

/* A live session's id when its name is a hash: the index's link (enough of the id for any
 * prefix), else its record. */
static bool hashed_matches(struct lb_box *box, int dfd, const char *key, const char *prefix,
			   size_t len)
{
	char id[BOX_LIVE_ID_MAX + 1];
	ssize_t n = readlinkat(dfd, key, id, sizeof(id) - 1);
	if (n < 0)
		return false;
	id[n] = '\0';
	if ((size_t)n < BOX_LIVE_ID_MAX || len < BOX_LIVE_ID_MAX)
		return id_matches(prefix, len, id);
	struct lb_box_session s;
	if (box_record_read_dir(box, key, &s, NULL) < 0)
		return false;
	bool mine = id_matches(prefix, len, s.session_id);
	lb_box_session_free(&s);
	return mine;
}

/* The caller's live sessions' keys, sorted. */
static bool read_live(struct lb_box *box, const char *prefix, struct names *out)
{
	char path[LB_PATH_BUF];
	size_t len = prefix ? strlen(prefix) : 0;
	snprintf(path, sizeof(path), "%s/live", box->dir);
	_cleanup_closedir_ DIR *d = opendir(path);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		const char *key = de->d_name;
		if (key[0] == '.')
			continue;
		bool mine =
		    !prefix || (key[0] == '~' ? hashed_matches(box, dirfd(d), key, prefix, len)
					      : id_matches(prefix, len, key));
		if (mine && !names_add(out, key))
			return false;
	}
	if (out->n)
		qsort(out->v, out->n, sizeof(char *), cmp_name);
	return true;
}

/* Running entries (<key>@<proc key>) of the sessions in live. */
static size_t count_running(struct lb_box *box, const struct names *live)
{
	char path[LB_PATH_BUF], key[BOX_KEY_MAX];
	size_t n = 0;
	snprintf(path, sizeof(path), "%s/running", box->dir);
	_cleanup_closedir_ DIR *d = opendir(path);
	struct dirent *de;
	while (live->n && d && (de = readdir(d))) {
		size_t klen = strcspn(de->d_name, "@");
		if (de->d_name[klen] != '@' || klen >= sizeof(key))
			continue;
		memcpy(key, de->d_name, klen);
		key[klen] = '\0';
		char *k = key;
		n += bsearch(&k, live->v, live->n, sizeof(char *), cmp_name) != NULL;
	}
	return n;
}

void lb_box_status(struct lb_box *box, const char *prefix, size_t *sessions, size_t *running)
{
	struct names live = {0};
	bool ok = read_live(box, prefix, &live);
	*sessions = ok ? live.n : 0;
	*running = ok ? count_running(box, &live) : 0;
	names_free(&live);
}
