/*
 * A sandbox's destruction: everything in it killed, then its cgroups and state removed; or one
 * error and the state kept, never a success that leaves a process of it running. Its state
 * need not open: a damaged state.json, or a pid 1 that is not the process it records, still
 * gets the sandbox killed through the cgroups it records (state.json's, else the list written
 * before pid 1 existed).
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
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/sandbox/sandbox.h"
#include "lbbox/base/util.h"
#include "engine.h"

/* Bound of each wait after SIGKILL (pid 1 gone, its lock free): the kernel tears the
 * namespaces down. */
#define DESTROY_WAIT_NS (5ull * 1000 * 1000 * 1000)

/*
 * Until pid 1 is gone, not only dead: reaped by us when it is our child, else by its parent
 * (the host's init for a session whose lbbox has exited, which may reap late: a command that
 * removed a session must leave no zombie of it behind). A pidfd turns readable when its process
 * exits and signals fail with ESRCH only once it is reaped.
 */
static void wait_gone(int pidfd)
{
	uint64_t deadline = lb_now_ns() + DESTROY_WAIT_NS;
	struct pollfd p = {.fd = pidfd, .events = POLLIN};
	siginfo_t info;
	while (poll(&p, 1, 100) == 0 && lb_now_ns() < deadline)
		;
	if (waitid(P_PIDFD, (id_t)pidfd, &info, WEXITED | WNOHANG) == 0)
		return;
	while (syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) == 0 && lb_now_ns() < deadline)
		usleep(2000);
}

/* The cgroups noted before pid 1 existed, paths only: killed task by task (cgroup.procs, which
 * every hierarchy has), as a v1 cgroup without a freezer is. */
static int open_early_cgroups(const char *statedir, struct lb_cgroup **out)
{
	struct lb_cgroup_dir_info dirs[LB_CGROUP_MAX_DIRS];
	char **paths = NULL;
	if (lb_state_read_cgroups(statedir, &paths, NULL) < 0)
		return -1;
	size_t n = 0;
	for (char **p = paths; p && *p && n < LB_CGROUP_MAX_DIRS; p++)
		dirs[n++] = (struct lb_cgroup_dir_info){.path = *p};
	int r = n ? lb_cgroup_open(LB_CGROUP_V1, dirs, n, false, out, NULL) : -1;
	lb_strvfreep(&paths);
	return r;
}

/* SIGKILL to everything of the sandbox: through its cgroup and pid 1's pidfd when its state
 * opens, else through the cgroups it records. Never by a pid alone, which may be reused. */
static void kill_all(const struct lb_paths *paths, const char *id, const char *statedir)
{
	struct lb_sandbox *sb = NULL;
	struct lb_cgroup *cg = NULL;
	if (lb_sandbox_open(paths, id, &sb, NULL) == 0) {
		lb_cgroup_kill(sb->cg, NULL);
		syscall(SYS_pidfd_send_signal, sb->pidfd, SIGKILL, NULL, 0);
		wait_gone(sb->pidfd);
		lb_sandbox_close(sb);
		return;
	}
	if (lb_sandbox_open_cgroup(statedir, id, &cg, NULL) == 0 ||
	    open_early_cgroups(statedir, &cg) == 0) {
		lb_cgroup_kill(cg, NULL);
		lb_cgroup_forget(cg);
	}
}

/* pid 1 holds the alive lock until it closes its files on its way out (so does the creator,
 * until the sandbox is started). */
static bool wait_unlocked(const char *statedir)
{
	char path[LB_PATH_BUF];
	snprintf(path, sizeof(path), "%s/" LB_ALIVE_LOCK, statedir);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	uint64_t deadline = lb_now_ns() + DESTROY_WAIT_NS;
	while (fd >= 0 && flock(fd, LOCK_SH | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK && errno != EINTR)
			return true;
		if (lb_now_ns() >= deadline)
			return false;
		usleep(2000);
	}
	return true;
}

int lb_sandbox_destroy(const struct lb_paths *paths, const char *id, struct lb_err **err)
{
	char statedir[LB_PATH_BUF];
	if (lb_sandbox_check_id(id, err) < 0)
		return -1;
	snprintf(statedir, sizeof(statedir), "%s/%s", paths->runroot, id);
	if (access(statedir, F_OK) < 0)
		return errno == ENOENT ? 0 : lb_err_set(err, errno, "sandbox %s", id);
	/* A damaged state naming a cgroup not the sandbox's own (a hierarchy's root, a service's)
	 * would get every task there killed: refused, nothing killed, the state kept. */
	if (lb_state_check_cgroups(statedir, NULL, err) < 0)
		return -1;
	kill_all(paths, id, statedir);
	if (!wait_unlocked(statedir))
		return lb_err_set(err, EBUSY, "sandbox %s: its pid 1 still runs after SIGKILL", id);
	if (lb_gc_remove_killed(paths->runroot, statedir, err) < 0) {
		/* a second destroyer (or the GC) may have removed it meanwhile */
		if (access(statedir, F_OK) < 0 && errno == ENOENT) {
			lb_err_free(err);
			return 0;
		}
		return lb_err_wrap(err, "sandbox %s could not be removed", id);
	}
	return 0;
}

/* Whether the sandbox whose state is in statedir was made with tag. */
static bool has_tag(const char *statedir, const char *tag)
{
	struct lb_state st;
	if (lb_state_read(statedir, &st, NULL) < 0)
		return false;
	bool match = st.tag && !strcmp(st.tag, tag);
	lb_state_free(&st);
	return match;
}

int lb_sandbox_destroy_tagged(const struct lb_paths *paths, const char *tag, struct lb_err **err)
{
	_cleanup_closedir_ DIR *d = opendir(paths->runroot);
	int r = 0;
	if (!d)
		return errno == ENOENT ? 0 : lb_err_set(err, errno, "open %s", paths->runroot);
	for (struct dirent *de; (de = readdir(d));) {
		char statedir[LB_PATH_BUF];
		if (lb_sandbox_check_id(de->d_name, NULL) < 0)
			continue;
		snprintf(statedir, sizeof(statedir), "%s/%s", paths->runroot, de->d_name);
		if (has_tag(statedir, tag) && lb_sandbox_destroy(paths, de->d_name, err) < 0)
			r = -1;
	}
	return r;
}
