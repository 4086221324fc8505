/*
 * Who works on a session directory, and how a session goes. Markers name a live process by pid
 * and start time: the creator of a session being created, the deleter of one being deleted.
 * Dropping a session is two steps: the first under the global lock, the second (which may wait
 * out the managed processes' grace period) without it.
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
#include "lbbox/base/process.h"
#include "lbbox/base/util.h"

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
	/* box_status stops counting it first; from here on, execs see "being deleted"; a crash
	 * leaves deleting.json for the reaper */
	char key[BOX_KEY_MAX];
	box_session_key(id, key);
	box_live_remove(box, key);
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
	/* keepers that had to be SIGKILLed left their entries */
	box_index_forget(box, key, NULL);
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

/* A creating session: see session.c. */
#define CREATING "creating"

void box_unmark_creating(const char *sdir)
{
	char path[LB_PATH_BUF];
	snprintf(path, sizeof(path), "%s/" CREATING, sdir);
	unlink(path);
}

/* With the deleter marker's room, taken now while there is some. */
int box_mark_creating(const char *sdir, struct lb_err **err)
{
	if (mark_process(sdir, CREATING, true, err) < 0)
		return -1;
	return write_marker(sdir, DELETER, "", true, err);
}

/* The live process creating the session in sdir: 1 = this one, 2 = another, 0 = none. */
int box_creator(const char *sdir)
{
	return marked_process(sdir, CREATING);
}

bool box_creator_gone(const char *sdir)
{
	return box_creator(sdir) == 0;
}

int box_drop_leftover(struct lb_box *box, const char *sdir)
{
	if (lb_sandbox_destroy_tagged(&box->paths, sdir, NULL) < 0)
		return -1;
	return lb_rm_rf(sdir, NULL);
}
