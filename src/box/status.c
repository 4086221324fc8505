/*
 * The runtime's counts for box_status (§3.7): sessions, and their running managed processes, of
 * the callers whose ids begin with a prefix. A session's directory name is its id whenever the id
 * is a safe file name (box_session_key), so no record is read or parsed but those of hashed
 * names: one directory read, and one stat per session, instead of each record's spec and each
 * sandbox's state.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "box_internal.h"

struct status_ctx {
	const char *prefix;
	size_t len, sessions, running;
};

static bool matches(const struct status_ctx *c, const char *id)
{
	return !c->prefix || (!strncmp(id, c->prefix, c->len) && id[c->len] == '-');
}

static void count_one(struct lb_box *box, const char *key, const char *sdir, void *ctx)
{
	struct status_ctx *c = ctx;
	char record[LB_PATH_BUF];
	if (key[0] == '~') { /* a hashed name: the id is in the record */
		struct lb_box_session s;
		if (box_record_read_dir(box, key, &s, NULL) < 0)
			return;
		bool mine = matches(c, s.session_id);
		lb_box_session_free(&s);
		if (!mine)
			return;
	} else {
		snprintf(record, sizeof(record), "%s/session.json", sdir);
		if (!matches(c, key) || access(record, F_OK) < 0) /* being made, or deleted */
			return;
	}
	c->sessions++;
	c->running += box_procs_running(sdir, NULL);
}

void lb_box_status(struct lb_box *box, const char *prefix, size_t *sessions, size_t *running)
{
	struct status_ctx c = {.prefix = prefix, .len = prefix ? strlen(prefix) : 0};
	box_each_session(box, count_one, &c);
	*sessions = c.sessions;
	*running = c.running;
}
