/*
 * Sessions (§3.3): get-or-create with LangBot's compatibility rule, extra-mount recreate, dead
 * session recreate and capacity; delete; list. Create, delete and reap run under
 * RUNROOT/box/lock, so two lbbox processes never build or remove the same session at once;
 * execs only take their session's exec.lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "box_internal.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"
#include "lbbox/base/process.h"

int box_spec_copy(const struct lb_box_spec *src, struct lb_box_spec *dst, struct lb_err **err)
{
	json_t *j = lb_box_spec_session_json(src);
	if (!j)
		return lb_err_set(err, ENOMEM, "session spec");
	json_object_set_new(j, "session_id", json_string(src->session_id));
	lb_box_spec_free(dst); /* from_json fills it afresh */
	int r = lb_box_spec_from_record(j, dst, err);
	json_decref(j);
	return r;
}

/*
 * Creating a session happens in two steps so the global lock is never held while an image is
 * resolved or pulled (minutes): the directory is reserved under the lock with a "creating"
 * marker naming this process; the engine spec is built outside; the sandbox is started and the
 * record written under the lock again (so no started sandbox is ever without its record). A
 * second creator of the same id waits while the marker's process lives.
 */
#define CREATE_WAIT_NS (600ull * 1000 * 1000 * 1000)

/* Under the lock, with the spec built: the sandbox and its record. */
static int finish_create(struct lb_box *box, const struct lb_box_spec *bs, struct lb_spec *spec,
			 const char *sdir, struct lb_box_session *out, struct lb_err **err)
{
	char ws[LB_PATH_BUF], path[LB_PATH_BUF];
	snprintf(ws, sizeof(ws), "%s/workspace", sdir);
	if (box_engine_spec(box, bs, ws, spec, err) < 0)
		return -1;
	/* should this process die before the record is written, the sandbox is found by it */
	free(spec->tag);
	if (!(spec->tag = strdup(sdir)))
		return lb_err_set(err, ENOMEM, "session %s", bs->session_id);
	if (lb_sandbox_start(spec, &box->paths, out->sandbox, err) < 0)
		return -1;
	out->session_id = strdup(bs->session_id);
	out->owner = strdup(box->owner);
	out->created_ns = out->last_used_ns = lb_realtime_ns();
	out->alive = true;
	/* exec.lock first (mtime = last used): execs open it, never create it */
	snprintf(path, sizeof(path), "%s/exec.lock", sdir);
	if (!out->session_id || !out->owner || box_spec_copy(bs, &out->spec, err) < 0 ||
	    lb_write_fileat(AT_FDCWD, path, "", 0, O_CREAT, 0600, err) < 0 ||
	    box_record_write(sdir, out, err) < 0) {
		lb_sandbox_destroy(&box->paths, out->sandbox, NULL);
		return lb_err_set(err, ENOMEM, "session record");
	}
	/* counted by box_status from now on; without its entry it would not be, so no session */
	if (box_live_add(box, box_sdir_key(sdir), out->session_id, err) < 0) {
		lb_sandbox_destroy(&box->paths, out->sandbox, NULL);
		return -1;
	}
	box_unmark_creating(sdir);
	box_reap_due_lower(box, out);
	return 0;
}

/* The reserved directory becomes a session (or goes again). */
static int create(struct lb_box *box, const struct lb_box_spec *bs, struct lb_spec *base,
		  struct lb_box_session *out, struct lb_err **err)
{
	char sdir[LB_PATH_BUF], ws[LB_PATH_BUF];
	struct lb_spec spec;
	_cleanup_close_ int lock = -1;
	box_session_dir(box, bs->session_id, sdir, sizeof(sdir));
	snprintf(ws, sizeof(ws), "%s/workspace", sdir);
	memset(out, 0, sizeof(*out));
	lb_box_spec_init(&out->spec);
	lb_spec_init(&spec);
	spec.readonly_root = bs->read_only_rootfs;
	if (base) { /* taken over */
		spec = *base;
		lb_spec_init(base);
	}
	int r = !bs->host_path && mkdir(ws, 0755) < 0 ? lb_err_set(err, errno, "create %s", ws) : 0;
	/* outside the lock: an image may be resolved or pulled */
	if (r == 0 && !base)
		r = box_image_spec(box, bs, &spec, err);
	if (box_global_lock(box, &lock, r < 0 ? NULL : err) < 0)
		r = -1;
	if (r == 0 && box_creator(sdir) != 1)
		r = lb_err_box(err, LB_BOX_ENOTFOUND, "session %s is being deleted",
			       bs->session_id);
	else if (r == 0)
		r = finish_create(box, bs, &spec, sdir, out, err);
	lb_spec_free(&spec);
	if (r < 0) {
		lb_box_session_free(out);
		if (lock >= 0 && box_creator(sdir) == 1)
			lb_rm_rf(sdir, NULL);
	}
	return r;
}

enum lookup { FOUND, RESERVED, WAIT };

static bool at_capacity(struct lb_box *box, const struct box_dropping *reaped)
{
	return (int64_t)(box_count_sessions(box) - reaped->n) >= box->limits.max_sessions;
}

/* Under the global lock: 1 when the session exists, fits bs (§3.3) and is alive (then it is
 * touched and in *out); 0 when there is none or it must be replaced (*stale); -1 on conflict. */
static int reuse_locked(struct lb_box *box, const struct lb_box_spec *bs, const char *sdir,
			struct lb_box_session *out, bool *stale, struct lb_err **err)
{
	struct lb_box_session cur;
	*stale = false;
	if (box_record_read(box, bs->session_id, &cur, NULL) < 0)
		return 0;
	if (lb_box_spec_check_compatible(&cur.spec, bs, bs->session_id, err) < 0) {
		lb_box_session_free(&cur);
		return -1;
	}
	cur.alive = lb_sandbox_is_alive(&box->paths, cur.sandbox);
	if (lb_box_extra_mounts_equal(&cur.spec, bs) && cur.alive) {
		box_touch(sdir);
		cur.last_used_ns = lb_realtime_ns();
		*out = cur;
		return 1;
	}
	lb_box_session_free(&cur);
	*stale = true; /* a bind mount cannot be added to a running sandbox; a dead one goes */
	return 0;
}

int lb_box_session_reuse(struct lb_box *box, const struct lb_box_spec *bs,
			 struct lb_box_session *out, struct lb_err **err)
{
	_cleanup_close_ int lock = -1;
	char sdir[LB_PATH_BUF];
	bool stale;
	if (box_global_lock(box, &lock, err) < 0)
		return -1;
	box_session_dir(box, bs->session_id, sdir, sizeof(sdir));
	return reuse_locked(box, bs, sdir, out, &stale, err);
}

/* Under the global lock: reuse the session (§3.3), or reserve its directory for a create, or
 * report that another process is creating it. */
static int lookup(struct lb_box *box, const struct lb_box_spec *bs, struct lb_box_session *out,
		  enum lookup *what, struct box_dropping *reaped, struct lb_err **err)
{
	_cleanup_close_ int lock = -1;
	char sdir[LB_PATH_BUF];
	bool stale;
	if (box_global_lock(box, &lock, err) < 0)
		return -1;
	uint64_t now = lb_realtime_ns();
	bool reaped_all = box_reap_if_due(box, now, reaped);
	box_session_dir(box, bs->session_id, sdir, sizeof(sdir));
	int found = reuse_locked(box, bs, sdir, out, &stale, err);
	if (found != 0) {
		*what = FOUND;
		return found < 0 ? -1 : 0;
	}
	if (stale) {
		if (box_session_drop(box, bs->session_id, err) < 0)
			return -1;
	} else if (access(sdir, F_OK) == 0) {
		if (box_creator(sdir) || box_deleting_elsewhere(sdir)) {
			*what = WAIT;
			return 0;
		}
		if (box_session_drop(box, bs->session_id, err) < 0)
			return -1; /* a half-deleted or half-created leftover */
	}
	/* the reaped ones are on their way out: they no longer count; when full, a reap that did
	 * not run (nothing was due) runs now: there may be orphans or leftovers to make room */
	bool full = at_capacity(box, reaped);
	if (full && !reaped_all) {
		box_reap_locked(box, now, reaped);
		full = at_capacity(box, reaped);
	}
	if (full)
		return lb_err_box(err, LB_BOX_ECAPACITY, "Box session capacity reached (%lld)",
				  (long long)box->limits.max_sessions);
	if (mkdir(sdir, 0700) < 0)
		return lb_err_set(err, errno, "create session directory %s", sdir);
	if (box_mark_creating(sdir, err) < 0) {
		lb_rm_rf(sdir, NULL);
		return -1;
	}
	*what = RESERVED;
	return 0;
}

int lb_box_session_get_or_create(struct lb_box *box, const struct lb_box_spec *bs,
				 struct lb_spec *base, struct lb_box_session *out, bool *created,
				 struct lb_err **err)
{
	uint64_t deadline = lb_now_ns() + CREATE_WAIT_NS;
	enum lookup what;
	*created = false;
	for (;;) {
		struct box_dropping reaped = {0};
		int r = lookup(box, bs, out, &what, &reaped, err);
		box_dropping_finish(box, &reaped); /* the lock is free again */
		if (r < 0)
			return -1;
		if (what == FOUND)
			return 0;
		if (what == RESERVED)
			break;
		if (lb_now_ns() >= deadline)
			return lb_err_box(err, LB_BOX_EBOX,
					  "session %s: its creation takes too long",
					  bs->session_id);
		usleep(10000); /* another process is creating it: wait for its record */
	}
	if (create(box, bs, base, out, err) < 0)
		return -1;
	*created = true;
	return 0;
}

int lb_box_session_get(struct lb_box *box, const char *id, struct lb_box_session *out,
		       struct lb_err **err)
{
	return box_record_read(box, id, out, err);
}

int lb_box_session_delete(struct lb_box *box, const char *id, struct lb_err **err)
{
	_cleanup_close_ int lock = -1;
	struct lb_box_session cur;
	if (box_global_lock(box, &lock, err) < 0)
		return -1;
	if (box_record_read(box, id, &cur, err) < 0)
		return -1;
	lb_box_session_free(&cur);
	/* the managed processes' grace period is waited out without holding up other sessions */
	return box_session_drop_unlocking(box, id, &lock, err);
}

static int cmp_session(const void *a, const void *b)
{
	return strcmp(((const struct lb_box_session *)a)->session_id,
		      ((const struct lb_box_session *)b)->session_id);
}

struct list_ctx {
	struct lb_box_session *v;
	size_t n;
	bool oom;
};

static void list_one(struct lb_box *box, const char *key, const char *sdir, void *ctx)
{
	struct list_ctx *l = ctx;
	struct lb_box_session s;
	if (l->oom || box_record_read_dir(box, key, &s, NULL) < 0)
		return;
	struct lb_box_session *nv = realloc(l->v, (l->n + 1) * sizeof(*nv));
	if (!nv) {
		lb_box_session_free(&s);
		l->oom = true;
		return;
	}
	l->v = nv;
	l->v[l->n++] = s;
}

int lb_box_session_list(struct lb_box *box, struct lb_box_session **out, size_t *n,
			struct lb_err **err)
{
	struct list_ctx l = {0};
	box_each_session(box, list_one, &l);
	if (l.oom) {
		lb_box_session_list_free(l.v, l.n);
		return lb_err_set(err, ENOMEM, "list sessions");
	}
	for (size_t i = 0; i < l.n; i++) /* ls says which are running */
		l.v[i].alive = lb_sandbox_is_alive(&box->paths, l.v[i].sandbox);
	if (l.n)
		qsort(l.v, l.n, sizeof(*l.v), cmp_session);
	*out = l.v;
	*n = l.n;
	return 0;
}

void lb_box_session_list_free(struct lb_box_session *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		lb_box_session_free(&v[i]);
	free(v);
}
