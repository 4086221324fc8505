/*
 * Managed processes seen from any lbbox process (§3.6): start (replacing a running namesake,
 * within the runtime's capacity), get, list, stop, attach. A record is "running" while its
 * keeper lives; exited records stay for completed_process_retention_sec, at most
 * max_completed_processes per runtime, then disappear.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "box_internal.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"
#include "lbbox/base/process.h"

static int session_dir(struct lb_box *box, const char *id, char *sdir, size_t len,
		       struct lb_err **err)
{
	struct lb_box_session s;
	char del[LB_PATH_BUF];
	box_session_dir(box, id, sdir, len);
	snprintf(del, sizeof(del), "%s/deleting.json", sdir);
	if (access(del, F_OK) == 0)
		return lb_err_box(err, LB_BOX_ENOTFOUND, "session %s is being deleted", id);
	if (box_record_read(box, id, &s, err) < 0)
		return -1;
	lb_box_session_free(&s);
	return 0;
}

static int not_found(const char *sid, const char *pid, struct lb_err **err)
{
	return lb_err_box(err, LB_BOX_EMPNOTFOUND,
			  "session %s has no managed process with process_id=%s", sid, pid);
}

/* SIGTERM to the keeper (it runs the termination procedure), then wait for it. */
/*
 * SIGTERM to the keeper, which runs the termination procedure and exits; true when it did. A
 * keeper that is gone already or had to be SIGKILLed (it is then waited for) returns false:
 * its process is unmanaged and must be killed through its cgroup (kill_orphan).
 */
static bool terminate(pid_t keeper, uint64_t kstart)
{
	int pidfd = -1;
	if (!box_keeper_alive(keeper, kstart, &pidfd)) {
		if (pidfd >= 0)
			close(pidfd);
		return false;
	}
	syscall(SYS_pidfd_send_signal, pidfd, SIGTERM, NULL, 0);
	struct pollfd p = {.fd = pidfd, .events = POLLIN};
	bool graceful = poll(&p, 1, (BOX_PROC_STOP_GRACE_SEC + 3) * 1000) > 0;
	if (!graceful) {
		syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
		poll(&p, 1, 5000);
	}
	close(pidfd);
	return graceful;
}

/* A keeper that did not end on its own left its process unmanaged: kill it by its cgroup. */
static void kill_orphan(struct lb_box *box, const char *session_id,
			const struct lb_box_proc_info *info)
{
	struct lb_box_session s;
	if (!info->running || !info->cgroup[0])
		return;
	if (box_record_read(box, session_id, &s, NULL) < 0)
		return;
	lb_sandbox_kill_child(&box->paths, s.sandbox, info->cgroup, NULL);
	lb_box_session_free(&s);
}

/* Stops the process unless only_exited (a running one is then a conflict), drops its record. */
static int stop_and_drop(struct lb_box *box, const char *session_id, const char *process_id,
			 bool only_exited, struct lb_err **err)
{
	char sdir[LB_PATH_BUF], json[LB_PATH_BUF];
	struct lb_box_proc_info info;
	pid_t keeper;
	uint64_t kstart;
	if (session_dir(box, session_id, sdir, sizeof(sdir), err) < 0)
		return -1;
	box_proc_paths(sdir, process_id, json, NULL, sizeof(json));
	_cleanup_close_ int plock = -1;
	if (box_flock(sdir, "procs.lock", LOCK_EX, true, &plock, err) < 0)
		return -1;
	if (box_proc_record_read(json, &info, &keeper, &kstart, NULL) < 0)
		return not_found(session_id, process_id, err);
	/* a keeper that died (SIGKILL) left its process orphaned, not exited: killed below */
	if (only_exited && info.running && box_keeper_alive(keeper, kstart, NULL)) {
		lb_box_proc_info_free(&info);
		return lb_err_box(err, LB_BOX_EMPCONFLICT,
				  "managed process %s in session %s is running: stop it first",
				  process_id, session_id);
	}
	if (!terminate(keeper, kstart))
		kill_orphan(box, session_id, &info);
	lb_box_proc_info_free(&info);
	/* a keeper that ended on its own removed its entry; one killed outright did not */
	box_index_forget(box, box_sdir_key(sdir), process_id);
	box_proc_files_unlink(json);
	return 0;
}

int lb_box_proc_stop(struct lb_box *box, const char *session_id, const char *process_id,
		     struct lb_err **err)
{
	return stop_and_drop(box, session_id, process_id, false, err);
}

int lb_box_proc_remove(struct lb_box *box, const char *session_id, const char *process_id,
		       bool force, struct lb_err **err)
{
	return stop_and_drop(box, session_id, process_id, !force, err);
}

int lb_box_proc_get(struct lb_box *box, const char *session_id, const char *process_id,
		    struct lb_box_proc_info *out, struct lb_err **err)
{
	char sdir[LB_PATH_BUF], json[LB_PATH_BUF];
	pid_t keeper;
	uint64_t kstart;
	if (session_dir(box, session_id, sdir, sizeof(sdir), err) < 0)
		return -1;
	box_exited_prune(box);
	box_proc_paths(sdir, process_id, json, NULL, sizeof(json));
	if (box_proc_read(json, out, &keeper, &kstart, NULL) < 0)
		return not_found(session_id, process_id, err);
	return 0;
}

size_t lb_box_session_running_procs(struct lb_box *box, const char *session_id)
{
	char sdir[LB_PATH_BUF];
	box_session_dir(box, session_id, sdir, sizeof(sdir));
	return box_procs_running(sdir, NULL);
}

/* From the index (index.c): O(running processes), never O(sessions). */
size_t lb_box_proc_count_running(struct lb_box *box)
{
	return box_running_count(box, false);
}

struct proc_counts {
	size_t sessions, running, exited;
};

static void count_proc(const char *json, struct lb_box_proc_info *info, pid_t keeper,
		       uint64_t kstart, void *ctx)
{
	struct proc_counts *c = ctx;
	info->running ? c->running++ : c->exited++;
}

static void count_session(struct lb_box *box, const char *key, const char *sdir, void *ctx)
{
	((struct proc_counts *)ctx)->sessions++;
	box_each_proc(sdir, count_proc, ctx);
}

void lb_box_count(struct lb_box *box, size_t *sessions, size_t *running, size_t *exited)
{
	struct proc_counts c = {0};
	box_each_session(box, count_session, &c);
	*sessions = c.sessions, *running = c.running, *exited = c.exited;
}

/*
 * memory_mb (§1.6) has no validator in LangBot: 0 or less is the session's limit. Its own limit
 * must fit in the session's, whose cgroup holds it: a larger one could never be reached.
 */
static int check_proc_memory(const struct lb_box_session *s, const struct lb_box_proc_spec *spec,
			     struct lb_err **err)
{
	if (spec->memory_mb <= s->spec.memory_mb)
		return 0;
	return lb_err_box(err, LB_BOX_EVALIDATION,
			  "memory_mb=%lld exceeds the session's memory_mb=%lld",
			  (long long)spec->memory_mb, (long long)s->spec.memory_mb);
}

int lb_box_proc_start(struct lb_box *box, const char *session_id,
		      const struct lb_box_proc_spec *spec, struct lb_box_proc_info *out,
		      struct lb_err **err)
{
	char sdir[LB_PATH_BUF], json[LB_PATH_BUF];
	struct lb_box_session s;
	if (session_dir(box, session_id, sdir, sizeof(sdir), err) < 0)
		return -1;
	/* refused before a running process of the same id is replaced */
	if (box_record_read(box, session_id, &s, err) < 0)
		return -1;
	int checked = check_proc_memory(&s, spec, err);
	lb_box_session_free(&s);
	if (checked < 0)
		return -1;
	box_proc_paths(sdir, spec->process_id, json, NULL, sizeof(json));
	/* one start or stop at a time per session: no duplicates, no unlink of a new record */
	_cleanup_close_ int plock = -1;
	if (box_flock(sdir, "procs.lock", LOCK_EX, true, &plock, err) < 0 ||
	    session_dir(box, session_id, sdir, sizeof(sdir), err) < 0)
		return -1;
	struct lb_box_proc_info old;
	pid_t keeper;
	uint64_t kstart;
	if (box_proc_record_read(json, &old, &keeper, &kstart, NULL) == 0) {
		if (!terminate(keeper, kstart)) /* replace, no conflict (§3.6) */
			kill_orphan(box, session_id, &old);
		lb_box_proc_info_free(&old);
		box_index_forget(box, box_sdir_key(sdir), spec->process_id);
		box_proc_files_unlink(json);
	}
	/* the runtime-wide count and the start under one lock: concurrent starts in different
	 * sessions cannot both take the last slot (after the session's lock: one order only) */
	_cleanup_close_ int cap = -1;
	if (box_flock(box->dir, "procs-capacity.lock", LOCK_EX, true, &cap, err) < 0)
		return -1;
	/* validated: the entries of keepers killed outright go here, so none refuses forever */
	if ((int64_t)box_running_count(box, true) >= box->limits.max_managed_processes)
		return lb_err_box(err, LB_BOX_ECAPACITY,
				  "Box managed process capacity reached (%lld)",
				  (long long)box->limits.max_managed_processes);
	if (box_record_read(box, session_id, &s, err) < 0)
		return -1;
	int r = box_keeper_spawn(box, &s, sdir, spec, err);
	lb_box_session_free(&s);
	box_touch(sdir);
	if (r < 0)
		return (*err && !(*err)->cls) ? ((*err)->cls = LB_BOX_EBOX, -1) : -1;
	return box_proc_read(json, out, &keeper, &kstart, err);
}

struct count_ctx {
	const char *skip;
	size_t n;
};

static void count_running(const char *json, struct lb_box_proc_info *info, pid_t keeper,
			  uint64_t kstart, void *ctx)
{
	struct count_ctx *c = ctx;
	if (info->running && (!c->skip || strcmp(c->skip, info->process_id) != 0))
		c->n++;
}

size_t box_procs_running(const char *sdir, const char *only)
{
	struct count_ctx c = {0};
	if (!only) {
		box_each_proc(sdir, count_running, &c);
		return c.n;
	}
	char json[LB_PATH_BUF];
	struct lb_box_proc_info info;
	pid_t keeper;
	uint64_t kstart;
	box_proc_paths(sdir, only, json, NULL, sizeof(json));
	if (box_proc_read(json, &info, &keeper, &kstart, NULL) < 0)
		return 0;
	c.n = info.running;
	lb_box_proc_info_free(&info);
	return c.n;
}

bool box_procs_any_running(const char *sdir)
{
	return box_procs_running(sdir, NULL) > 0;
}

struct term_ctx {
	int pidfds[256];
	size_t n;
};

static void signal_keeper(const char *json, struct lb_box_proc_info *info, pid_t keeper,
			  uint64_t kstart, void *ctx)
{
	struct term_ctx *t = ctx;
	int pidfd = -1;
	if (t->n < 256 && box_keeper_alive(keeper, kstart, &pidfd)) {
		syscall(SYS_pidfd_send_signal, pidfd, SIGTERM, NULL, 0);
		t->pidfds[t->n++] = pidfd;
	} else if (pidfd >= 0) {
		close(pidfd);
	}
}

/* Every keeper gets SIGTERM at once; then one shared grace period. */
void box_procs_terminate_all(struct lb_box *box, const char *sdir)
{
	struct term_ctx t = {.n = 0};
	box_each_proc(sdir, signal_keeper, &t);
	uint64_t deadline = lb_now_ns() + (BOX_PROC_STOP_GRACE_SEC + 3) * 1000000000ull;
	for (size_t i = 0; i < t.n; i++) {
		struct pollfd p = {.fd = t.pidfds[i], .events = POLLIN};
		uint64_t now = lb_now_ns();
		int ms = now < deadline ? (int)((deadline - now) / 1000000) : 0;
		if (poll(&p, 1, ms) == 0)
			syscall(SYS_pidfd_send_signal, t.pidfds[i], SIGKILL, NULL, 0);
		close(t.pidfds[i]);
	}
}

struct list_ctx {
	struct lb_box_proc_info *v;
	size_t n;
	bool oom;
};

static void collect(const char *json, struct lb_box_proc_info *info, pid_t keeper, uint64_t kstart,
		    void *ctx)
{
	struct list_ctx *l = ctx;
	struct lb_box_proc_info *nv = realloc(l->v, (l->n + 1) * sizeof(*nv));
	if (!nv) {
		l->oom = true;
		return;
	}
	l->v = nv;
	l->v[l->n++] = *info;
	memset(info, 0, sizeof(*info)); /* moved */
}

static int cmp_proc(const void *a, const void *b)
{
	return strcmp(((const struct lb_box_proc_info *)a)->process_id,
		      ((const struct lb_box_proc_info *)b)->process_id);
}

int lb_box_proc_list(struct lb_box *box, const char *session_id, struct lb_box_proc_info **out,
		     size_t *n, struct lb_err **err)
{
	char sdir[LB_PATH_BUF];
	struct list_ctx l = {0};
	if (session_dir(box, session_id, sdir, sizeof(sdir), err) < 0)
		return -1;
	box_exited_prune(box);
	box_each_proc(sdir, collect, &l);
	if (l.oom) {
		lb_box_proc_list_free(l.v, l.n);
		return lb_err_set(err, ENOMEM, "list managed processes");
	}
	if (l.n)
		qsort(l.v, l.n, sizeof(*l.v), cmp_proc);
	*out = l.v;
	*n = l.n;
	return 0;
}

void lb_box_proc_list_free(struct lb_box_proc_info *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		lb_box_proc_info_free(&v[i]);
	free(v);
}

/* A stream socket connected to the keeper's socket of a running process: its attach socket,
 * or with follow its follower's. */
enum keeper_sock { KS_ATTACH, KS_FOLLOW, KS_TTY };

static int keeper_connect(struct lb_box *box, const char *session_id, const char *process_id,
			  enum keeper_sock which, bool nonblock, int *fd, struct lb_err **err)
{
	bool follow = which == KS_FOLLOW;
	char sdir[LB_PATH_BUF], json[LB_PATH_BUF], sock[LB_PATH_BUF], path[LB_PATH_BUF + 8];
	struct lb_box_proc_info info;
	pid_t keeper;
	uint64_t kstart;
	if (session_dir(box, session_id, sdir, sizeof(sdir), err) < 0)
		return -1;
	box_proc_paths(sdir, process_id, json, sock, sizeof(json));
	if (box_proc_read(json, &info, &keeper, &kstart, NULL) < 0)
		return not_found(session_id, process_id, err);
	bool running = info.running, history = info.history;
	lb_box_proc_info_free(&info);
	if (follow && !history)
		return lb_err_box(err, LB_BOX_EVALIDATION,
				  "managed process %s keeps no output history (only a detached "
				  "run's does)",
				  process_id);
	if (!running)
		return lb_err_box(err, LB_BOX_EMPCONFLICT,
				  "managed process %s in session %s is not running", process_id,
				  session_id);
	if (follow)
		box_proc_follow_path(sock, path, sizeof(path));
	else if (which == KS_TTY)
		box_proc_tty_path(sock, path, sizeof(path));
	else
		snprintf(path, sizeof(path), "%s", sock);
	char dir[LB_PATH_BUF];
	snprintf(dir, sizeof(dir), "%s/procs", sdir);
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (dfd < 0)
		return lb_err_box(err, LB_BOX_EMPCONFLICT,
				  "managed process %s in session %s is not running", process_id,
				  session_id);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/%s", dfd,
		 strrchr(path, '/') + 1);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		if (s >= 0)
			close(s);
		if (which == KS_TTY && e == ENOENT)
			return lb_err_box(err, LB_BOX_EVALIDATION,
					  "managed process %s has no terminal (start it with lbbox "
					  "proc start -t)",
					  process_id);
		return lb_err_set(err, e, "attach to managed process %s", process_id);
	}
	*fd = s;
	return 0;
}

int lb_box_proc_attach(struct lb_box *box, const char *session_id, const char *process_id,
		       bool nonblock, int *fd, struct lb_err **err)
{
	return keeper_connect(box, session_id, process_id, KS_ATTACH, nonblock, fd, err);
}

int lb_box_proc_tty(struct lb_box *box, const char *session_id, const char *process_id, int *fd,
		    struct lb_err **err)
{
	return keeper_connect(box, session_id, process_id, KS_TTY, false, fd, err);
}

int lb_box_proc_follow(struct lb_box *box, const char *session_id, const char *process_id, int *fd,
		       struct lb_err **err)
{
	return keeper_connect(box, session_id, process_id, KS_FOLLOW, false, fd, err);
}
