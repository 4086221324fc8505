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

#include "box/box_internal.h"
#include "lbbox/cleanup.h"
#include "lbbox/util.h"
#include "lbbox/process.h"

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

/* Markers in a session directory naming a live process: "<pid> <start time>", padded with
 * spaces to MARKER_LEN. The deleter marker is written when the session is reserved and later
 * overwritten in place: a full file system (a session can fill its own workspace's) must not
 * keep a session from being deleted. */
#define MARKER_LEN 48

/* text, padded, at the start of sdir/name: created when missing (with O_EXCL when excl). */
static int write_marker(const char *sdir, const char *name, const char *text, bool excl,
			struct lb_err **err)
{
	char path[LB_PATH_BUF], buf[MARKER_LEN + 1];
	snprintf(path, sizeof(path), "%s/%s", sdir, name);
	snprintf(buf, sizeof(buf), "%-*s", MARKER_LEN, text);
	_cleanup_close_ int fd =
	    open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | (excl ? O_EXCL : 0), 0600);
	if (fd < 0 || pwrite(fd, buf, MARKER_LEN, 0) != MARKER_LEN)
		return lb_err_set(err, errno, "write %s", path);
	return 0;
}

static int mark_process(const char *sdir, const char *name, bool excl, struct lb_err **err)
{
	char id[MARKER_LEN + 1];
	snprintf(id, sizeof(id), "%d %llu", (int)getpid(),
		 (unsigned long long)lb_proc_starttime(getpid()));
	return write_marker(sdir, name, id, excl, err);
}

/* The live process a marker names: 1 = this one, 2 = another, 0 = none. */
static int marked_process(const char *sdir, const char *name)
{
	char path[LB_PATH_BUF];
	_cleanup_free_ char *text = NULL;
	int pid = 0;
	unsigned long long start = 0;
	snprintf(path, sizeof(path), "%s/%s", sdir, name);
	if (lb_read_file(path, 64, &text, NULL, NULL) < 0 ||
	    sscanf(text, "%d %llu", &pid, &start) != 2 || pid <= 0 ||
	    lb_proc_starttime(pid) != start)
		return 0;
	return pid == getpid() ? 1 : 2;
}

/*
 * A drop has two steps. The first, under the global lock: the record becomes deleting.json
 * (execs and managed-process starts see "being deleted") and a marker names this process as
 * the deleter. The second, which may wait out the managed processes' grace period, needs no
 * lock: others leave a session alone while its deleter lives (box_deleting_elsewhere), and
 * finish the delete themselves if that process died.
 */
#define DELETER "deleter"

int box_session_drop_begin(struct lb_box *box, const char *id, struct lb_err **err)
{
	char sdir[LB_PATH_BUF], rec[LB_PATH_BUF], del[LB_PATH_BUF];
	box_session_dir(box, id, sdir, sizeof(sdir));
	snprintf(rec, sizeof(rec), "%s/session.json", sdir);
	snprintf(del, sizeof(del), "%s/deleting.json", sdir);
	/* from here on, execs see "being deleted"; a crash leaves deleting.json for the reaper */
	if (rename(rec, del) < 0 && errno != ENOENT)
		return lb_err_set(err, errno, "delete session %s", id);
	return mark_process(sdir, DELETER, false, err);
}

bool box_deleting_elsewhere(const char *sdir)
{
	return marked_process(sdir, DELETER) == 2;
}

int box_session_drop_finish(struct lb_box *box, const char *id, struct lb_err **err)
{
	char sdir[LB_PATH_BUF];
	struct lb_box_session s;
	box_session_dir(box, id, sdir, sizeof(sdir));
	char key[BOX_KEY_MAX];
	box_session_key(id, key);
	bool have = box_record_read_file(box, key, "deleting.json", &s, NULL) == 0;
	_cleanup_close_ int plock = -1; /* no managed process starts from now on */
	box_flock(sdir, "procs.lock", LOCK_EX, true, &plock, NULL);
	box_procs_terminate_all(box, sdir);
	int r = 0;
	if (have && lb_sandbox_destroy(&box->paths, s.sandbox, err) < 0)
		r = -1;
	/* no record: its creator died, maybe after starting the sandbox (tagged with sdir) */
	if (!have && lb_sandbox_destroy_tagged(&box->paths, sdir, err) < 0)
		r = -1;
	lb_box_session_free(&s);
	if (r == 0 && lb_rm_rf(sdir, err) < 0)
		r = -1;
	return r;
}

size_t box_dropping_finish(struct lb_box *box, struct box_dropping *d)
{
	size_t gone = 0;
	for (size_t i = 0; i < d->n; i++) {
		gone += box_session_drop_finish(box, d->ids[i], NULL) == 0;
		free(d->ids[i]);
	}
	free(d->ids);
	*d = (struct box_dropping){0};
	return gone;
}

int box_session_drop(struct lb_box *box, const char *id, struct lb_err **err)
{
	return box_session_drop_begin(box, id, err) < 0 ? -1
							: box_session_drop_finish(box, id, err);
}

int box_session_drop_unlocking(struct lb_box *box, const char *id, int *lock, struct lb_err **err)
{
	if (box_session_drop_begin(box, id, err) < 0)
		return -1;
	close(*lock);
	*lock = -1;
	return box_session_drop_finish(box, id, err);
}

/*
 * Creating a session happens in two steps so the global lock is never held while an image is
 * resolved or pulled (minutes): the directory is reserved under the lock with a "creating"
 * marker naming this process; the engine spec is built outside; the sandbox is started and the
 * record written under the lock again (so no started sandbox is ever without its record). A
 * second creator of the same id waits while the marker's process lives.
 */
#define CREATING       "creating"
#define CREATE_WAIT_NS (600ull * 1000 * 1000 * 1000)

static void creating_path(const char *sdir, char *out, size_t len)
{
	snprintf(out, len, "%s/" CREATING, sdir);
}

/* With the deleter marker's room, taken now while there is some. */
static int mark_creating(const char *sdir, struct lb_err **err)
{
	if (mark_process(sdir, CREATING, true, err) < 0)
		return -1;
	return write_marker(sdir, DELETER, "", true, err);
}

/* The live process creating the session in sdir: 1 = this one, 2 = another, 0 = none. */
static int creator(const char *sdir)
{
	return marked_process(sdir, CREATING);
}

bool box_creator_gone(const char *sdir)
{
	return creator(sdir) == 0;
}

int box_drop_leftover(struct lb_box *box, const char *sdir)
{
	if (lb_sandbox_destroy_tagged(&box->paths, sdir, NULL) < 0)
		return -1;
	return lb_rm_rf(sdir, NULL);
}

/* Under the lock, with the spec built: the sandbox and its record. */
static int finish_create(struct lb_box *box, const struct lb_box_spec *bs, struct lb_spec *spec,
			 const char *sdir, struct lb_box_session *out, struct lb_err **err)
{
	char ws[LB_PATH_BUF], path[LB_PATH_BUF];
	snprintf(ws, sizeof(ws), "%s/workspace", sdir);
	if (box_engine_spec(bs, &box->paths, box->allowed_roots, ws, spec, err) < 0)
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
	creating_path(sdir, path, sizeof(path));
	unlink(path);
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
	if (r == 0 && creator(sdir) != 1)
		r = lb_err_box(err, LB_BOX_ENOTFOUND, "session %s is being deleted",
			       bs->session_id);
	else if (r == 0)
		r = finish_create(box, bs, &spec, sdir, out, err);
	lb_spec_free(&spec);
	if (r < 0) {
		lb_box_session_free(out);
		if (lock >= 0 && creator(sdir) == 1)
			lb_rm_rf(sdir, NULL);
	}
	return r;
}

enum lookup { FOUND, RESERVED, WAIT };

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
	box_reap_locked(box, lb_realtime_ns(), reaped);
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
		if (creator(sdir) || box_deleting_elsewhere(sdir)) {
			*what = WAIT;
			return 0;
		}
		if (box_session_drop(box, bs->session_id, err) < 0)
			return -1; /* a half-deleted or half-created leftover */
	}
	/* the reaped ones are on their way out: they no longer count */
	if ((int64_t)(box_count_sessions(box) - reaped->n) >= box->limits.max_sessions)
		return lb_err_box(err, LB_BOX_ECAPACITY, "Box session capacity reached (%lld)",
				  (long long)box->limits.max_sessions);
	if (mkdir(sdir, 0700) < 0)
		return lb_err_set(err, errno, "create session directory %s", sdir);
	if (mark_creating(sdir, err) < 0) {
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
