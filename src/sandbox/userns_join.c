/*
 * A user namespace joined by path (a Kubernetes pod's, when its containers run in user
 * namespaces): pid 1 must be born in it, and its new mount, pid, ipc and uts namespaces must
 * be owned by it, or its root would hold no capability over its own mounts and /proc. A
 * process cannot leave a user namespace it has entered, so lbbox does not enter it: a
 * short-lived child joins the spec's other namespaces, then this one, and clones pid 1 as
 * lbbox's own child (CLONE_PARENT), as runc's nsexec does in its intermediate stage.
 *
 * The path comes from whoever wrote the bundle. The owner of a user namespace holds every
 * capability in it, and so over the container: every user namespace from it up to lbbox's own
 * must belong to lbbox's user (root). Its maps must map the sandbox's root and user, and be the
 * spec's when the bundle gave maps too (containerd does).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/nsfs.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/process.h"
#include "lbbox/base/util.h"
#include "engine.h"

/* The kernel nests user namespaces 32 deep. */
#define USERNS_DEPTH_MAX 33

/* The intermediate's one report: pid 1's pid, or why there is none. */
struct joined {
	pid_t pid;
	struct lb_child_msg fail;
};

/* fd's namespace and each one above it, below lbbox's own (self), belong to lbbox's user. */
static int check_owners(int fd, int self, const char *path, struct lb_err **err)
{
	int cur = fd;
	uid_t me = geteuid();
	for (int depth = 0; depth < USERNS_DEPTH_MAX; depth++) {
		uid_t owner;
		if (ioctl(cur, NS_GET_OWNER_UID, &owner) < 0) {
			int e = errno;
			if (cur != fd)
				close(cur);
			return lb_err_set(err, e, "user namespace %s: its owner", path);
		}
		if (owner != me) {
			if (cur != fd)
				close(cur);
			return lb_err_set(
			    err, 0,
			    "user namespace %s %s uid %u, not to lbbox's %u: its "
			    "owner would hold every capability over the container",
			    path, depth ? "is below one that belongs to" : "belongs to", owner, me);
		}
		int up = ioctl(cur, NS_GET_PARENT);
		if (cur != fd)
			close(cur);
		/* lbbox's own namespace ends the walk (EPERM: beyond it) */
		if (up < 0 && errno == EPERM)
			return 0;
		if (up < 0)
			return lb_err_set(err, errno, "user namespace %s: its parent", path);
		if (lb_same_file(up, self)) {
			close(up);
			return 0;
		}
		cur = up;
	}
	close(cur);
	return lb_err_set(err, ELOOP, "user namespace %s: nested too deep", path);
}

static int open_userns(const char *path, int *out, struct lb_err **err)
{
	/* non-blocking: a fifo at the path cannot hang lbbox */
	_cleanup_close_ int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return lb_err_set(err, errno, "user namespace %s", path);
	int type = ioctl(fd, NS_GET_NSTYPE);
	if (type < 0)
		return lb_err_set(err, 0, "user namespace %s: not a namespace", path);
	if (type != CLONE_NEWUSER)
		return lb_err_set(err, 0, "user namespace %s: a namespace of another type", path);
	_cleanup_close_ int self = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
	if (self < 0)
		return lb_err_set(err, errno, "open /proc/self/ns/user");
	if (lb_same_file(fd, self))
		return lb_err_set(err, 0, "user namespace %s: lbbox's own, not a sandbox's", path);
	if (check_owners(fd, self, path, err) < 0)
		return -1;
	*out = fd;
	fd = -1;
	return 0;
}

/* /proc/PID/<kind>_map of pid 1, read by lbbox: the ranges' outside ids are lbbox's own (the
 * host's), as runc reads them; from inside, they would be the parent namespace's, which another
 * namespace between may map anywhere. */
static int read_map(pid_t pid, const char *kind, struct lb_id_map *map, size_t *n,
		    struct lb_err **err)
{
	/* the kernel prints a range in at most 33 bytes, and takes 340 */
	char path[64], text[LB_MAX_ID_MAPS * 34 + 1];
	snprintf(path, sizeof(path), "/proc/%d/%s_map", pid, kind);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t len = fd < 0 ? -1 : lb_read_all(fd, text, sizeof(text) - 1);
	if (len < 0)
		return lb_err_set(err, errno, "read %s", path);
	text[len] = '\0';
	*n = 0;
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct lb_id_map m;
		if (*n == LB_MAX_ID_MAPS ||
		    sscanf(line, "%u %u %u", &m.inside, &m.outside, &m.count) != 3)
			return lb_err_set(err, EINVAL, "%s: unexpected line", path);
		map[(*n)++] = m;
	}
	return 0;
}

/* The same ranges, in any order (the kernel keeps them as written). */
static bool same_map(const struct lb_id_map *a, size_t na, const struct lb_id_map *b, size_t nb)
{
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++) {
		bool found = false;
		for (size_t k = 0; k < nb && !found; k++)
			found = a[i].inside == b[k].inside && a[i].outside == b[k].outside &&
				a[i].count == b[k].count;
		if (!found)
			return false;
	}
	return true;
}

static bool maps_host_root(const struct lb_id_map *map, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (map[i].outside == 0)
			return true;
	return false;
}

static int check_map(const struct lb_spec *spec, pid_t pid, const char *kind, uint32_t id,
		     const struct lb_id_map *given, size_t n_given, struct lb_err **err)
{
	struct lb_id_map own[LB_MAX_ID_MAPS];
	size_t n = 0;
	const char *path = spec->userns_path;
	if (read_map(pid, kind, own, &n, err) < 0)
		return lb_err_wrap(err, "user namespace %s", path);
	if (n_given && !same_map(given, n_given, own, n))
		return lb_err_set(err, 0,
				  "the bundle's %s mappings are not those of user namespace %s",
				  kind, path);
	/* as with a bundle's own map of host id 0: only when the bundle says so */
	if (!n_given && maps_host_root(own, n))
		return lb_err_set(
		    err, 0,
		    "user namespace %s maps the host's root (%s 0): a container joins "
		    "it only with linux.%sMappings that say so",
		    path, kind, kind);
	if (!lb_id_map_has(own, n, 0))
		return lb_err_set(err, 0,
				  "user namespace %s does not map %s 0 (the container's root)",
				  path, kind);
	if (!lb_id_map_has(own, n, id))
		return lb_err_set(err, 0, "user namespace %s does not map %s %u", path, kind, id);
	return 0;
}

/* In the intermediate: never returns. */
static __attribute__((noreturn)) void report(int fd, pid_t pid, const struct lb_err *e)
{
	struct joined msg = {.pid = pid, .fail = {.exit_code = LB_EXIT_SETUP}};
	snprintf(msg.fail.msg, sizeof(msg.fail.msg), "%s", e && e->msg ? e->msg : "");
	(void)!write(fd, &msg, sizeof(msg));
	_exit(pid > 0 ? 0 : LB_EXIT_SETUP);
}

/* The intermediate: into the namespaces, then pid 1 (returns 0 there). */
static pid_t intermediate(const struct lb_spec *spec, const struct lb_ns_join *j, int usernsfd,
			  uint64_t flags, int cgroup_fd, int report_fd)
{
	struct lb_err *err = NULL;
	/* Before the join, and inherited by pid 1: the namespace's other processes (a pod's
	 * containers, maybe with CAP_SYS_PTRACE there) must not trace a copy of lbbox that is
	 * still the host's root by its ids. Non-dumpable with the host's memory, only the host's
	 * CAP_SYS_PTRACE can. */
	prctl(PR_SET_DUMPABLE, 0);
	if (lb_ns_join_enter(j, &err) < 0)
		report(report_fd, 0, err);
	/* root's groups go before: a namespace that denies setgroups would keep them */
	if (getgroups(0, NULL) > 0 && setgroups(0, NULL) < 0) {
		lb_err_set(&err, errno, "setgroups");
		report(report_fd, 0, err);
	}
	if (setns(usernsfd, CLONE_NEWUSER) < 0) {
		lb_err_set(&err, errno, "join user namespace %s", spec->userns_path);
		report(report_fd, 0, err);
	}
	/* with CLONE_PARENT the exit signal is the intermediate's own (SIGCHLD); clone3 wants 0 */
	struct clone_args args = {.flags = flags | CLONE_PARENT};
	if (cgroup_fd >= 0) {
		args.flags |= CLONE_INTO_CGROUP;
		args.cgroup = (uint64_t)cgroup_fd;
	}
	pid_t pid = (pid_t)syscall(SYS_clone3, &args, sizeof(args));
	if (pid == 0) {
		close(report_fd);
		return 0;
	}
	if (pid < 0)
		lb_ns_join_clone_failed(spec, errno, &err);
	report(report_fd, pid, err);
}

/* Waits for the intermediate's report until timeout_ms: whoever is root in the namespace may
 * stop it (it is a process there). On time or not, the intermediate is reaped. */
static int await_report(pid_t mid, int report_r, int timeout_ms, struct joined *msg,
			const char *path, struct lb_err **err)
{
	struct pollfd p = {.fd = report_r, .events = POLLIN};
	int n;
	while ((n = poll(&p, 1, timeout_ms)) < 0 && errno == EINTR)
		;
	if (n <= 0)
		kill(mid, SIGKILL);
	while (waitpid(mid, NULL, 0) < 0 && errno == EINTR)
		;
	if (n <= 0)
		return lb_err_set(err, n < 0 ? errno : ETIMEDOUT,
				  "joining user namespace %s did not finish in time", path);
	if (lb_read_all(report_r, msg, sizeof(*msg)) != (ssize_t)sizeof(*msg))
		return lb_err_set(err, EIO, "clone the sandbox in user namespace %s", path);
	msg->fail.msg[sizeof(msg->fail.msg) - 1] = '\0';
	return 0;
}

static void kill_reap(pid_t pid)
{
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

pid_t lb_userns_join_clone(const struct lb_spec *spec, const struct lb_ns_join *j, uint64_t flags,
			   int cgroup_fd, int timeout_ms, int *pidfd, struct lb_err **err)
{
	_cleanup_close_ int usernsfd = -1;
	int p[2];
	if (open_userns(spec->userns_path, &usernsfd, err) < 0)
		return -1;
	if (pipe2(p, O_CLOEXEC) < 0)
		return lb_err_set(err, errno, "pipe");
	pid_t mid = fork();
	if (mid == 0) {
		close(p[0]);
		return intermediate(spec, j, usernsfd, flags, cgroup_fd, p[1]);
	}
	int e = errno;
	close(p[1]);
	_cleanup_close_ int report_r = p[0];
	if (mid < 0)
		return lb_err_set(err, e, "fork");
	struct joined msg;
	if (await_report(mid, report_r, timeout_ms, &msg, spec->userns_path, err) < 0)
		return -1;
	if (msg.pid <= 0)
		return lb_err_set(err, 0, "%s", msg.fail.msg);
	/* pid 1 waits for lbbox's word before anything: its maps are checked first */
	if (check_map(spec, msg.pid, "uid", spec->uid, spec->uid_map, spec->n_uid_map, err) < 0 ||
	    check_map(spec, msg.pid, "gid", spec->gid, spec->gid_map, spec->n_gid_map, err) < 0) {
		kill_reap(msg.pid);
		return -1;
	}
	/* pid 1 is lbbox's child, not reaped yet: the pid names it */
	*pidfd = (int)syscall(SYS_pidfd_open, msg.pid, 0);
	if (*pidfd < 0) {
		e = errno;
		kill_reap(msg.pid);
		return lb_err_set(err, e, "pidfd_open");
	}
	return msg.pid;
}
