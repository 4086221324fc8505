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
 *
 * A runtime keeps the counts it read, per caller's prefix, for as long as inotify reports no
 * entry made, removed or renamed in either index: a call then reads no directory at all,
 * whatever the number of sessions. The watch is set before the directories are read, so a
 * change during a read is seen by the next call. A forked process (a runtime's job) does not use
 * its parent's watch: it reads the indexes. Counts are kept for 8 prefixes: a runtime asked by
 * more Workspaces reads the indexes more often, once per call at worst.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
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
 * prefix), else its record (*read: such an answer is not kept, as no index change follows a
 * record's). */
static bool hashed_matches(const struct lb_box *box, int dfd, const char *key, const char *prefix,
			   size_t len, bool *read)
{
	char id[BOX_LIVE_ID_MAX + 1];
	ssize_t n = readlinkat(dfd, key, id, sizeof(id) - 1);
	if (n < 0)
		return false;
	id[n] = '\0';
	if ((size_t)n < BOX_LIVE_ID_MAX || len < BOX_LIVE_ID_MAX)
		return id_matches(prefix, len, id);
	struct lb_box_session s;
	*read = true;
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
	bool read_record; /* a hashed name's record was read (hashed_matches) */
};

static void add_if_mine(const struct lb_box *box, int dfd, const char *key, void *ctx)
{
	struct live_ctx *c = ctx;
	if (!c->prefix ||
	    (key[0] == '~' ? hashed_matches(box, dfd, key, c->prefix, c->len, &c->read_record)
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

/* The counts from the indexes; false when they may not be kept (out of memory, a record read). */
static bool read_indexes(struct lb_box *box, const char *prefix, size_t *sessions, size_t *running)
{
	struct live_ctx live = {.prefix = prefix, .len = prefix ? strlen(prefix) : 0};
	struct running_ctx run = {.live = &live.keys};
	box_index_each(box, "live", add_if_mine, &live);
	if (live.keys.oom) {
		*sessions = *running = 0;
		box_names_free(&live.keys);
		return false;
	}
	if (live.keys.n) {
		qsort(live.keys.v, live.keys.n, sizeof(char *), cmp_name);
		box_index_each(box, "running", count_if_live, &run);
	}
	*sessions = live.keys.n;
	*running = run.n;
	box_names_free(&live.keys);
	return !live.read_record;
}

#define STATUS_KEPT 8 /* prefixes: a runtime serves a few Workspaces */

static const char *const indexes[] = {"live", "running"};

struct box_status_cache {
	pid_t owner; /* the process whose watch fd is */
	int fd;	     /* inotify, kept open: its close waits for an SRCU grace period (ms) */
	int wd[2];   /* its watches of live/ and running/; -1: not (yet) watched */
	struct {
		char *prefix; /* NULL: unused */
		bool all;     /* no prefix: every session */
		size_t sessions, running;
	} kept[STATUS_KEPT];
	size_t next; /* the entry to replace next */
};

static void cache_forget(struct box_status_cache *c)
{
	for (size_t i = 0; i < STATUS_KEPT; i++) {
		free(c->kept[i].prefix);
		c->kept[i].prefix = NULL;
	}
}

/* Watching both indexes (made, empty, when RUNROOT/box exists without them); false: nothing
 * can be kept (no RUNROOT/box yet, say). Nothing is kept while a watch is missing, so a new
 * one never vouches for counts read before it. */
static bool cache_watch(struct box_status_cache *c, const struct lb_box *box)
{
	if (c->fd < 0)
		c->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	for (size_t i = 0; c->fd >= 0 && i < 2; i++) {
		char path[LB_PATH_BUF];
		if (c->wd[i] >= 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", box->dir, indexes[i]);
		if (mkdir(path, 0700) < 0 && errno != EEXIST)
			return false;
		c->wd[i] = inotify_add_watch(c->fd, path,
					     IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO |
						 IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR |
						 IN_DONT_FOLLOW);
		if (c->wd[i] < 0)
			return false;
	}
	return c->fd >= 0;
}

/* Nothing changed since the counts kept were read; else they are dropped. An index removed
 * (IN_IGNORED) or moved away (IN_MOVE_SELF: the watch would follow it) loses its watch, set up
 * again on the one at its path by the next call. Not seen: RUNROOT/box itself moved or mounted
 * over under a live runtime. */
static bool cache_unchanged(struct box_status_cache *c)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool changed = false;
	for (;;) {
		ssize_t n = read(c->fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			changed |= n == 0 || errno != EAGAIN;
			break;
		}
		changed = true;
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *e = (const struct inotify_event *)p;
			for (size_t i = 0; i < 2; i++)
				if ((e->mask & (IN_IGNORED | IN_MOVE_SELF)) && e->wd == c->wd[i]) {
					if (e->mask & IN_MOVE_SELF)
						inotify_rm_watch(c->fd, c->wd[i]);
					c->wd[i] = -1;
				}
			p += sizeof(*e) + e->len;
		}
	}
	if (changed)
		cache_forget(c);
	return !changed;
}

static int cache_find(const struct box_status_cache *c, const char *prefix)
{
	for (int i = 0; i < STATUS_KEPT; i++)
		if (c->kept[i].prefix &&
		    (prefix ? !c->kept[i].all && !strcmp(c->kept[i].prefix, prefix)
			    : c->kept[i].all))
			return i;
	return -1;
}

static void cache_keep(struct box_status_cache *c, const char *prefix, size_t sessions,
		       size_t running)
{
	size_t i = c->next;
	c->next = (c->next + 1) % STATUS_KEPT;
	free(c->kept[i].prefix);
	c->kept[i].prefix = strdup(prefix ? prefix : "");
	c->kept[i].all = !prefix;
	c->kept[i].sessions = sessions;
	c->kept[i].running = running;
}

/* The runtime's cache; NULL in a process forked from the one that made it, or without memory. */
static struct box_status_cache *cache_of(struct lb_box *box)
{
	if (!box->status) {
		box->status = calloc(1, sizeof(*box->status));
		if (!box->status)
			return NULL;
		*box->status =
		    (struct box_status_cache){.owner = getpid(), .fd = -1, .wd = {-1, -1}};
	}
	return box->status->owner == getpid() ? box->status : NULL;
}

void lb_box_status(struct lb_box *box, const char *prefix, size_t *sessions, size_t *running)
{
	struct box_status_cache *c = cache_of(box);
	/* counts are kept only while both indexes are watched, and a lost watch drops them */
	int i = c && c->fd >= 0 && cache_unchanged(c) ? cache_find(c, prefix) : -1;
	if (i >= 0) {
		*sessions = c->kept[i].sessions;
		*running = c->kept[i].running;
		return;
	}
	bool watching = c && cache_watch(c, box);
	if (read_indexes(box, prefix, sessions, running) && watching)
		cache_keep(c, prefix, *sessions, *running);
}

void lb_box_forked(struct lb_box *box)
{
	struct box_status_cache *c = box->status;
	if (c && c->owner != getpid() && c->fd >= 0) {
		close(c->fd);
		c->fd = -1;
	}
}

void box_status_free(struct lb_box *box)
{
	struct box_status_cache *c = box->status;
	if (!c)
		return;
	if (c->fd >= 0) /* a forked process's is its own copy */
		close(c->fd);
	cache_forget(c);
	free(c);
	box->status = NULL;
}
