/*
 * Garbage collection of sandboxes whose lbbox was killed before it could clean up (SIGKILL,
 * OOM, power loss of the process): once their pid 1 is gone, the state directory and the
 * now-empty cgroups are removed by the next lbbox that starts a sandbox (each start examines a
 * window of at most LB_GC_PER_RUN of them), by `lbbox session gc` and by the Box runtime's
 * reaper (every one). Live sandboxes are never touched.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/sandbox/sandbox.h"
#include "lbbox/base/util.h"
#include "engine.h"

/* A state directory without state.json is a sandbox still starting, unless it is this old (its
 * creator holds the alive lock from a moment after mkdir: the grace covers that moment). */
#define GC_GRACE_SECONDS 5

static bool is_alive(const struct lb_state *st)
{
	uint64_t start = lb_proc_starttime(st->pid);
	return start != 0 && (st->pid_start == 0 || start == st->pid_start);
}

/* Removes the sandbox's cgroups (with the child cgroups of its execs); false when one still
 * holds tasks. */
static bool remove_cgroups(char **cgroups)
{
	for (char **c = cgroups; *c; c++)
		if (lb_cgroup_remove_path(*c, NULL) < 0)
			return false;
	return true;
}

/* Its pid 1 holds the alive lock while it lives: no need to read the state. */
static bool lock_held(const char *statedir)
{
	char path[LB_PATH_BUF];
	snprintf(path, sizeof(path), "%s/" LB_ALIVE_LOCK, statedir);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd >= 0 && flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
}

/* Returns true when a collected sandbox had network "on" (its address lease is left to free). */
static bool collect_one(const char *statedir)
{
	bool net_on = false;
	struct lb_state st;
	struct stat sb;
	if (lock_held(statedir))
		return false;
	if (lb_state_read(statedir, &st, NULL) < 0) {
		if (stat(statedir, &sb) == 0 && time(NULL) - sb.st_mtime > GC_GRACE_SECONDS) {
			lb_net_pasta_reap_record(statedir); /* its creator died mid-start */
			char **early = NULL;
			/* a list naming a cgroup not the sandbox's own: left alone */
			bool ok = lb_state_check_cgroups(statedir, &early, NULL) == 0;
			bool gone = ok && (!early || remove_cgroups(early));
			lb_strvfreep(&early);
			if (gone)
				lb_rm_rf(statedir, NULL);
		}
		return false;
	}
	bool dead = !is_alive(&st);
	if (dead && st.pasta)
		lb_net_pasta_reap_record(statedir); /* a rootless session's pasta, at once */
	if (dead && lb_state_check_cgroups(statedir, NULL, NULL) == 0 &&
	    remove_cgroups(st.cgroups)) {
		lb_rm_rf(statedir, NULL);
		net_on = st.net_on;
	}
	lb_state_free(&st);
	return net_on;
}

/*
 * No liveness test here: pid 1 of a killed sandbox can stay a live task after it closed its
 * files (and so dropped the lock), held in the kernel until a parent outside reaps a process of
 * its namespace, but it has left its cgroups by then. Empty cgroups are the proof: each must go
 * (rmdir fails while a task is in it) before the state does.
 */
int lb_gc_remove_killed(const char *runroot, const char *statedir, struct lb_err **err)
{
	struct lb_state st = {0};
	char **early = NULL;
	if (lb_state_check_cgroups(statedir, &early, err) < 0)
		return -1;
	bool have = lb_state_read(statedir, &st, NULL) == 0;
	lb_net_pasta_reap_record(statedir);
	int r = 0;
	for (char **c = have ? st.cgroups : early; c && *c && r == 0; c++)
		r = lb_cgroup_remove_path(*c, err);
	bool net_on = have && st.net_on;
	lb_strvfreep(&early);
	lb_state_free(&st);
	if (r == 0)
		r = lb_rm_rf(statedir, err);
	if (r == 0 && net_on)
		lb_net_gc(runroot); /* its lease */
	return r;
}

/* A sandbox's state directory name: 12 hex digits; anything else is not ours to remove. */
static bool is_sandbox_id(const char *name)
{
	return strlen(name) == 12 && strspn(name, "0123456789abcdef") == 12;
}

/*
 * A run examines at most max sandboxes (a window at a random place among them), not every one:
 * with a thousand live sessions, checking each alive lock cost a run more than its own setup.
 * Listing the directory stays (one getdents per ~200 names); what a run leaves, the next runs
 * reach, and a runroot of at most max sandboxes is examined whole, as before.
 */
void lb_gc_some(const struct lb_paths *paths, size_t max)
{
	_cleanup_closedir_ DIR *d = opendir(paths->runroot);
	char(*ids)[13] = NULL;
	size_t n = 0, cap = 0;
	bool net_on = false;
	for (struct dirent *de; d && (de = readdir(d));) {
		if (!is_sandbox_id(de->d_name))
			continue;
		if (n == cap) {
			char(*v)[13] = reallocarray(ids, cap ? cap * 2 : 64, sizeof(*ids));
			if (!v)
				break; /* out of memory: those listed so far */
			ids = v, cap = cap ? cap * 2 : 64;
		}
		memcpy(ids[n++], de->d_name, 13);
	}
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	size_t start = n > max ? ((size_t)ts.tv_nsec ^ (size_t)getpid()) % n : 0;
	for (size_t i = 0; i < n && i < max; i++) {
		char path[LB_PATH_BUF];
		snprintf(path, sizeof(path), "%s/%s", paths->runroot, ids[(start + i) % n]);
		net_on |= collect_one(path);
	}
	free(ids);
	if (net_on)
		lb_net_gc(paths->runroot);
}

int lb_sandbox_gc(const struct lb_paths *paths, struct lb_err **err)
{
	_cleanup_closedir_ DIR *d = opendir(paths->runroot);
	struct dirent *de;
	bool net_on = false;
	if (!d)
		return errno == ENOENT ? 0 : lb_err_set(err, errno, "open %s", paths->runroot);
	while ((de = readdir(d))) {
		char path[LB_PATH_BUF];
		if (!is_sandbox_id(de->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", paths->runroot, de->d_name);
		net_on |= collect_one(path);
	}
	/* Only for dead "on" sandboxes: the common path does no network work at all. */
	if (net_on)
		lb_net_gc(paths->runroot);
	return 0;
}
