/*
 * Reaping (§3.5, §3.8). A non-persistent session idle for longer than the TTL, with no exec in
 * flight (its exec.lock is free) and no running managed process, is removed. A session whose
 * owner instance (a server) is gone is an orphan and removed too; sessions of a live instance
 * and the CLI's own sessions (no owner) never are. An instance is alive while it holds the
 * flock of RUNROOT/box/instances/<id>.lock.
 *
 * No session create or exec scans every session for this. RUNROOT/box/reap.due holds a time
 * before which no session can have expired: every create lowers it to its own expiry, every full
 * reap sets it to the earliest expiry it saw; an exec moves a session's expiry later, which
 * leaves the hint early, never late. A create reaps only once the hint has passed, or when the
 * runtime is full. The hint is only a hint: a missing or unreadable one is "due now" (the records
 * on disk stay the truth), and orphans (sessions of a runtime that died) are found by the full
 * reaps, which a Box runtime runs at its start and on its reaper's timer, off the requests' path.
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

int lb_box_instance_hold(struct lb_box *box, int *fd, struct lb_err **err)
{
	char dir[LB_PATH_BUF], name[128];
	if (!box->owner[0])
		return lb_err_set(err, EINVAL, "no instance id");
	snprintf(dir, sizeof(dir), "%s/instances", box->dir);
	snprintf(name, sizeof(name), "%s.lock", box->owner);
	if (lb_mkdir_p(dir, 0700, err) < 0)
		return -1;
	return box_flock(dir, name, LOCK_EX | LOCK_NB, true, fd, err);
}

void lb_box_instance_release(struct lb_box *box, int fd)
{
	char path[LB_PATH_BUF];
	snprintf(path, sizeof(path), "%s/instances/%s.lock", box->dir, box->owner);
	/* unlinked while still held: a reaper that opens it now or later finds the owner gone,
	 * which it is, its sessions already dropped */
	if (box->owner[0])
		unlink(path);
	close(fd);
}

static bool owner_alive(const struct lb_box *box, const char *owner)
{
	char path[LB_PATH_BUF];
	if (!owner[0] || strcmp(owner, box->owner) == 0)
		return true;
	snprintf(path, sizeof(path), "%s/instances/%s.lock", box->dir, owner);
	_cleanup_close_ int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return false;
	return flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK;
}

/*
 * Expired (§3.5): not persistent, idle past the TTL, no exec in flight, no running managed
 * process. An expired session's exec.lock stays held in *lock until its drop has begun (the
 * record renamed deleting.json): from then on a new exec finds the session being deleted.
 */
/* When s expires by this process's TTL (UINT64_MAX: never). */
static uint64_t expiry(const struct lb_box *box, const struct lb_box_session *s)
{
	uint64_t ttl = (uint64_t)box->limits.session_ttl_sec * 1000000000ull;
	if (s->spec.persistent || box->limits.session_ttl_sec <= 0)
		return UINT64_MAX;
	return s->last_used_ns + ttl;
}

static bool expired(const struct lb_box *box, const struct lb_box_session *s, const char *sdir,
		    uint64_t now_ns, int *lock)
{
	if (expiry(box, s) >= now_ns)
		return false;
	if (box_flock(sdir, "exec.lock", LOCK_EX | LOCK_NB, false, lock, NULL) < 0)
		return false; /* an exec is running */
	return !box_procs_any_running(sdir);
}

struct reap_ctx {
	uint64_t now_ns;
	uint64_t next_due; /* the earliest expiry of a session that stays */
	struct box_dropping *d;
};

static void due_path(const struct lb_box *box, char *out, size_t len)
{
	snprintf(out, len, "%s/reap.due", box->dir);
}

/* The hint (0 when missing or unreadable: due now). */
static uint64_t due_read(const struct lb_box *box)
{
	char path[LB_PATH_BUF], buf[32];
	due_path(box, path, sizeof(path));
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	char *end;
	errno = 0;
	unsigned long long v = strtoull(buf, &end, 10);
	return errno || end == buf || *end != '\n' ? 0 : (uint64_t)v;
}

static void due_write(const struct lb_box *box, uint64_t ns)
{
	char path[LB_PATH_BUF], buf[32];
	due_path(box, path, sizeof(path));
	int n = snprintf(buf, sizeof(buf), "%llu\n", (unsigned long long)ns);
	lb_write_file_atomic(path, buf, (size_t)n, 0600, NULL); /* lost: the next create scans */
}

void box_reap_due_lower(struct lb_box *box, const struct lb_box_session *s)
{
	uint64_t at = expiry(box, s);
	if (at != UINT64_MAX && at < due_read(box))
		due_write(box, at);
}

/* The first step of a drop, the second left for after the lock (box_dropping_finish). */
static void begin_drop(struct lb_box *box, struct reap_ctx *r, const char *id)
{
	char **ids = reallocarray(r->d->ids, r->d->n + 1, sizeof(char *));
	char *copy = strdup(id);
	if (!ids || !copy) {
		free(copy);
		if (ids)
			r->d->ids = ids;
		return; /* out of memory: the next round */
	}
	r->d->ids = ids;
	if (box_session_drop_begin(box, id, NULL) < 0) {
		free(copy);
		return;
	}
	r->d->ids[r->d->n++] = copy;
}

static void reap_one(struct lb_box *box, const char *key, const char *sdir, void *ctx)
{
	struct reap_ctx *r = ctx;
	struct lb_box_session s;
	if (box_deleting_elsewhere(sdir))
		return;
	if (box_record_read_dir(box, key, &s, NULL) < 0) {
		box_live_remove(box, key); /* none is live without its record (index.c) */
		/* a delete that was interrupted: finish it */
		if (box_record_read_file(box, key, "deleting.json", &s, NULL) == 0) {
			begin_drop(box, r, s.session_id);
			lb_box_session_free(&s);
		} else if (box_creator_gone(sdir)) { /* a create whose process died */
			box_drop_leftover(box, sdir);
		}
		return;
	}
	_cleanup_close_ int lock = -1;
	if (!owner_alive(box, s.owner) || expired(box, &s, sdir, r->now_ns, &lock)) {
		begin_drop(box, r, s.session_id); /* which removes its index entries */
	} else {
		/* a create that died between its record and its entry; exits a killed keeper left
		 * out */
		box_live_add(box, key, s.session_id, NULL);
		box_exited_reindex(box, key, sdir);
		if (expiry(box, &s) < r->next_due)
			r->next_due = expiry(box, &s);
	}
	lb_box_session_free(&s);
}

void box_reap_locked(struct lb_box *box, uint64_t now_ns, struct box_dropping *d)
{
	struct reap_ctx r = {.now_ns = now_ns, .next_due = UINT64_MAX, .d = d};
	box_each_session(box, reap_one, &r);
	due_write(box, r.next_due);
}

bool box_reap_if_due(struct lb_box *box, uint64_t now_ns, struct box_dropping *d)
{
	if (due_read(box) > now_ns)
		return false;
	box_reap_locked(box, now_ns, d);
	return true;
}

int lb_box_session_reap(struct lb_box *box, uint64_t now_ns, size_t *removed, struct lb_err **err)
{
	struct box_dropping d = {0};
	int lock = -1;
	if (box_global_lock(box, &lock, err) < 0)
		return -1;
	box_reap_locked(box, now_ns ? now_ns : lb_realtime_ns(), &d);
	close(lock);
	*removed = box_dropping_finish(box, &d);
	/* the reaper's round also drops what keepers killed outright left in the index, so
	 * box_status, which trusts its names, is right again within a round */
	box_running_heal(box);
	return 0;
}

/* Also a delete of an owned session that was interrupted (its record moved to deleting.json). */
static void drop_if_owned(struct lb_box *box, const char *key, const char *sdir, void *ctx)
{
	struct lb_box_session s;
	if (box_deleting_elsewhere(sdir) ||
	    (box_record_read_dir(box, key, &s, NULL) < 0 &&
	     box_record_read_file(box, key, "deleting.json", &s, NULL) < 0))
		return;
	if (!strcmp(s.owner, box->owner))
		box_session_drop(box, s.session_id, NULL);
	lb_box_session_free(&s);
}

void lb_box_drop_owned(struct lb_box *box)
{
	_cleanup_close_ int lock = -1;
	if (!box->owner[0] || box_global_lock(box, &lock, NULL) < 0)
		return;
	box_each_session(box, drop_if_owned, NULL);
}
