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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "box_internal.h"

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool id_matches(const char *prefix, size_t len, const char *id)
{
	return !strncmp(id, prefix, len) && id[len] == '-';
}

/* A live session's id when its name is a hash: the index's link (enough of the id for any
 * prefix), else its record. */
static bool hashed_matches(const struct lb_box *box, int dfd, const char *key, const char *prefix,
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

struct live_ctx {
	const char *prefix;
	size_t len;
	struct box_names keys;
};

static void add_if_mine(const struct lb_box *box, int dfd, const char *key, void *ctx)
{
	struct live_ctx *c = ctx;
	if (!c->prefix || (key[0] == '~' ? hashed_matches(box, dfd, key, c->prefix, c->len)
					 : id_matches(c->prefix, c->len, key)))
		box_names_add(&c->keys, key);
}

struct running_ctx {
	const struct box_names *live;
	size_t n;
};

/* A running entry (<key>@<proc key>) of a session in live. */
static void count_if_live(const struct lb_box *box, int dfd, const char *name, void *ctx)
{
	struct running_ctx *c = ctx;
	char key[BOX_KEY_MAX], *k = key;
	size_t klen = strcspn(name, "@");
	if (name[klen] != '@' || klen >= sizeof(key))
		return;
	memcpy(key, name, klen);
	key[klen] = '\0';
	c->n += bsearch(&k, c->live->v, c->live->n, sizeof(char *), cmp_name) != NULL;
}

void lb_box_status(struct lb_box *box, const char *prefix, size_t *sessions, size_t *running)
{
	struct live_ctx live = {.prefix = prefix, .len = prefix ? strlen(prefix) : 0};
	struct running_ctx run = {.live = &live.keys};
	box_index_each(box, "live", add_if_mine, &live);
	if (live.keys.oom) {
		*sessions = *running = 0;
		box_names_free(&live.keys);
		return;
	}
	if (live.keys.n) {
		qsort(live.keys.v, live.keys.n, sizeof(char *), cmp_name);
		box_index_each(box, "running", count_if_live, &run);
	}
	*sessions = live.keys.n;
	*running = run.n;
	box_names_free(&live.keys);
}
