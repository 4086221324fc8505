/*
 * exec into a live sandbox, as `crun exec` / `nsenter` do it: a short-lived intermediate process
 * is cloned straight into the command's own child cgroup (CLONE_INTO_CGROUP on v2; on v1 it
 * moves itself there first, cgroup_v1.c), joins pid 1's namespaces with one setns(pidfd), and
 * clones the command with CLONE_PARENT — so the command is inside the sandbox's pid namespace yet a
 * direct child of the caller, which waits for it and reads its pipes itself. The command then
 * applies the sandbox's rlimits, identity, capabilities, no_new_privs and seccomp filter, like pid
 * 1's.
 */
#include <errno.h>
#include <grp.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/console.h"
#include "lbbox/sandbox/sandbox.h"
#include "lbbox/base/util.h"
#include "engine.h"

#define JOIN_NS (CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWCGROUP)

struct spawn {
	struct lb_sandbox *sb;
	const struct lb_exec_opts *o;
	const struct lb_seccomp_prog *seccomp;
	char **env;
	const struct lb_cgroup *join; /* v1: the cgroup the intermediate moves itself into */
	int err_w, pid_w;	      /* child ends */
};

static void lb_seccomp_prog_freep(struct lb_seccomp_prog **p)
{
	lb_seccomp_prog_free(*p);
}

static int compile_seccomp(struct lb_sandbox *sb, uint64_t caps, struct lb_seccomp_prog **out,
			   struct lb_err **err)
{
	char cache[LB_PATH_BUF];
	const char *profile = sb->spec.seccomp_profile;
	*out = NULL;
	if (profile && strcmp(profile, "unconfined") == 0)
		return 0;
	snprintf(cache, sizeof(cache), "%s/cache/seccomp", sb->root);
	return lb_seccomp_prepare(profile, sb->spec.uid == 0 ? caps : 0, cache, out, err);
}

static int prepare_seccomp(struct lb_sandbox *sb, struct lb_err **err)
{
	if (sb->seccomp_ready)
		return 0;
	if (compile_seccomp(sb, sb->spec.caps, &sb->seccomp, err) < 0)
		return -1;
	sb->seccomp_ready = true;
	return 0;
}

static bool env_overridden(char *const *extra, const char *kv)
{
	size_t klen = strcspn(kv, "=");
	for (; extra && *extra; extra++)
		if (strncmp(*extra, kv, klen) == 0 && (*extra)[klen] == '=')
			return true;
	return false;
}

/* The sandbox's environment with the exec's entries replacing or added (pointers, not copies). */
static char **merge_env(char *const *base, char *const *extra)
{
	size_t n = 0, k = 0;
	for (char *const *e = base; e && *e; e++)
		n++;
	for (char *const *e = extra; e && *e; e++)
		n++;
	char **env = calloc(n + 1, sizeof(char *));
	if (!env)
		return NULL;
	for (char *const *e = base; e && *e; e++)
		if (!env_overridden(extra, *e))
			env[k++] = *e;
	for (char *const *e = extra; e && *e; e++)
		env[k++] = *e;
	return env;
}

static void fail(int fd, int code, struct lb_err *e)
{
	lb_child_fail(fd, code, e);
}

/* The command, inside every namespace of the sandbox: what every sandbox command does last. */
__attribute__((noreturn)) static void command_main(const struct spawn *s)
{
	struct lb_spec as_user;
	const struct lb_spec *spec = &s->sb->spec;
	if (s->o->set_user || s->o->add_caps || s->o->set_umask) { /* a shallow copy */
		as_user = *spec;
		as_user.uid = s->o->set_user ? s->o->uid : spec->uid;
		as_user.gid = s->o->set_user ? s->o->gid : spec->gid;
		if (s->o->set_user) /* another user: none of the command's supplementary groups */
			as_user.n_groups = 0;
		as_user.caps |= s->o->add_caps;
		as_user.umask_set |= s->o->set_umask;
		as_user.umask = s->o->set_umask ? s->o->umask : spec->umask;
		spec = &as_user;
	}
	if (s->o->console_sock > 0) {
		struct lb_err *err = NULL;
		int slave =
		    lb_console_send_pty(s->o->console_sock, "/dev/ptmx", s->o->console_size, &err);
		if (slave < 0)
			fail(s->err_w, LB_EXIT_SETUP, err);
		for (int fd = 0; fd < 3; fd++)
			dup2(slave, fd);
		if (slave > 2)
			close(slave);
		close(s->o->console_sock);
	}
	const struct lb_become b = {.spec = spec,
				    .argv = s->o->argv,
				    .env = s->env,
				    .cwd = s->o->cwd,
				    .fsize = s->o->fsize,
				    .seccomp = s->seccomp,
				    .first_private_fd =
					s->o->fd3 > 0 ? 4U : 3U + s->o->preserve_fds,
				    .err_fd = s->err_w,
				    .ctty = s->o->console_sock > 0};
	lb_become_command(&b);
}

static int redirect(const int fds[3], struct lb_err **err)
{
	int null = -1;
	for (int i = 0; i < 3; i++) {
		int fd = fds[i];
		if (fd < 0) {
			if (null < 0 && (null = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0)
				return lb_err_set(err, errno, "open /dev/null");
			fd = null;
		}
		if (fd == i ? fcntl(fd, F_SETFD, 0) < 0 : dup2(fd, i) < 0)
			return lb_err_set(err, errno, "redirect fd %d", i);
	}
	return 0;
}

/* fd3 becomes the command's fd 3 (inherited across execve); the pipes we need move away first. */
static int move_to_fd3(const struct spawn *sp, struct lb_err **err)
{
	struct spawn *s = (struct spawn *)sp;
	int *mine[] = {&s->err_w, &s->pid_w};
	for (size_t i = 0; i < 2; i++) {
		if (*mine[i] != 3)
			continue;
		int fd = fcntl(3, F_DUPFD_CLOEXEC, 4);
		if (fd < 0)
			return lb_err_set(err, errno, "move fd 3");
		*mine[i] = fd;
	}
	if (s->o->fd3 == 3)
		return fcntl(3, F_SETFD, 0) < 0 ? lb_err_set(err, errno, "fd 3") : 0;
	return dup2(s->o->fd3, 3) < 0 ? lb_err_set(err, errno, "fd 3") : 0;
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* Closes every descriptor from `from` on but keep[]. */
static void close_others(unsigned from, int *keep, size_t n)
{
	qsort(keep, n, sizeof(*keep), cmp_int);
	for (size_t i = 0; i < n; i++) {
		if (keep[i] < (int)from)
			continue;
		if ((unsigned)keep[i] > from)
			syscall(SYS_close_range, from, (unsigned)keep[i] - 1, 0U);
		from = (unsigned)keep[i] + 1;
	}
	syscall(SYS_close_range, from, ~0U, 0U);
}

/*
 * The intermediate: already in the command's cgroup; joins the namespaces, clones the command.
 * Until the command's execve, host objects are within reach (the caller's fds: cgroup
 * directories, locks, pid 1's pidfd; /proc/PID/exe = lbbox): non-dumpable before it joins
 * them, so no process of the sandbox can open them through /proc, and every fd but the pipes
 * closed (not just close-on-exec) once the namespaces are joined.
 */
__attribute__((noreturn)) static void intermediate_main(const struct spawn *s)
{
	struct lb_err *err = NULL;
	/*
	 * The sandbox's oom_score_adj, inherited by the command, as runc's exec does (nsexec):
	 * else it keeps its caller's, and under containerd the shim's -998 would nearly exempt an
	 * exec or a probe from the OOM killer. Like runc, a value below the caller's floor fails
	 * the exec rather than run it with another score. The file is opened while still
	 * dumpable (non-dumpable hands /proc/self to root and would lock a rootless caller out);
	 * the write is checked by capability, so it can come after.
	 */
	_cleanup_close_ int oomfd = -1;
	if (s->sb->spec.oom_score_adj_set && lb_open_oom_score_adj(0, &oomfd, &err) < 0)
		fail(s->err_w, LB_EXIT_SETUP, err);
	prctl(PR_SET_DUMPABLE, 0);
	if (s->join && lb_cgroup_join(s->join, &err) < 0)
		fail(s->err_w, LB_EXIT_SETUP, err);
	if (oomfd >= 0 && lb_write_oom_score_adj(oomfd, s->sb->spec.oom_score_adj, &err) < 0)
		fail(s->err_w, LB_EXIT_SETUP, err);
	lb_closep(&oomfd);
	if (redirect(s->o->fds, &err) < 0 || (s->o->fd3 > 0 && move_to_fd3(s, &err) < 0))
		fail(s->err_w, LB_EXIT_SETUP, err);
	int flags = JOIN_NS | (s->sb->spec.net == LB_NET_HOST ? 0 : CLONE_NEWNET) |
		    (s->sb->userns ? CLONE_NEWUSER : 0);
	/* root joining a rootless sandbox: its user namespace denies setgroups, so root's groups
	 * must go before */
	if (s->sb->userns && geteuid() == 0 && setgroups(0, NULL) < 0) {
		lb_err_set(&err, errno, "setgroups");
		fail(s->err_w, LB_EXIT_SETUP, err);
	}
	if (setns(s->sb->pidfd, flags) < 0) {
		lb_err_set(&err, errno, "join sandbox %s", s->sb->id);
		fail(s->err_w, LB_EXIT_SETUP, err);
	}
	int keep[] = {s->err_w, s->pid_w, s->o->fd3 > 0 ? 3 : 0, s->o->console_sock};
	/* below 3 + preserve_fds: stdio and what the caller passes on; ours were opened after */
	close_others(3U + s->o->preserve_fds, keep, 4);
	/* with CLONE_PARENT the exit signal is the intermediate's own (SIGCHLD); clone3 wants 0 */
	struct clone_args args = {.flags = CLONE_PARENT};
	pid_t pid = (pid_t)syscall(SYS_clone3, &args, sizeof(args));
	if (pid == 0)
		command_main(s);
	if (pid < 0) {
		lb_err_set(&err, errno, "start the command in sandbox %s", s->sb->id);
		fail(s->err_w, LB_EXIT_SETUP, err);
	}
	(void)!write(s->pid_w, &pid, sizeof(pid));
	_exit(0);
}

static pid_t clone_intermediate(int cgroup_fd)
{
	struct clone_args args = {.exit_signal = SIGCHLD};
	if (cgroup_fd >= 0) {
		args.flags |= CLONE_INTO_CGROUP;
		args.cgroup = (uint64_t)cgroup_fd;
	}
	return (pid_t)syscall(SYS_clone3, &args, sizeof(args));
}

/* Whether fd is readable (data, or EOF) before deadline (0: none). */
static bool readable_by(int fd, uint64_t deadline)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	if (!deadline) /* the blocking read that follows waits */
		return true;
	for (;;) {
		int timeout = lb_poll_timeout(deadline);
		if (timeout == -2)
			return false;
		int n = poll(&pfd, 1, timeout);
		if (n > 0 || (n < 0 && errno != EINTR))
			return true; /* a poll error: the blocking read says what it is */
	}
}

/* Past the deadline: the command is in its cgroup (the intermediate joins it before the clone,
 * and has been reaped by now); by pid too, should the cgroup's kill fail. */
static void kill_late(struct lb_proc *p)
{
	if (lb_proc_kill(p, NULL) < 0 && p->pid > 0)
		kill(p->pid, SIGKILL);
}

/*
 * Parent side after the clone: collect the command's pid, and wait until it has exec'd (EOF on
 * the error pipe) or reported why not. Past the deadline the intermediate is killed by pid (on
 * v1 it may not be in the cgroup yet: it moves itself there), then the command with its cgroup,
 * which ends both waits.
 */
static int finish_spawn(pid_t mid, int err_r, int pid_r, struct lb_proc *p, uint64_t deadline,
			int *setup_exit, struct lb_err **err)
{
	struct lb_child_msg msg;
	int status;
	pid_t pid = 0;
	bool late = !readable_by(pid_r, deadline);
	if (late) /* our child, not reaped yet: the pid is still its */
		kill(mid, SIGKILL);
	bool have = lb_read_all(pid_r, &pid, sizeof(pid)) == sizeof(pid) && pid > 0;
	while (waitpid(mid, &status, 0) < 0 && errno == EINTR)
		;
	if (have)
		p->pid = pid;
	if (late || !readable_by(err_r, deadline)) {
		late = true;
		kill_late(p);
	}
	int failed = lb_child_read_fail(err_r, &msg, "exec failed");
	if (late)
		return lb_err_set(err, ETIMEDOUT, "the command did not start in time");
	if (have)
		p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (failed || !have) {
		*setup_exit = failed ? msg.exit_code : LB_EXIT_SETUP;
		return lb_err_set(err, 0, "%s", failed ? msg.msg : "exec failed");
	}
	if (p->pidfd < 0)
		return lb_err_set(err, errno, "pidfd_open");
	return 0;
}

int lb_sandbox_spawn(struct lb_sandbox *sb, const struct lb_exec_opts *o, struct lb_proc *p,
		     int *setup_exit, struct lb_err **err)
{
	int errp[2] = {-1, -1}, pidp[2] = {-1, -1};
	*setup_exit = LB_EXIT_SETUP;
	*p = (struct lb_proc){.pidfd = -1};
	if (!o->argv || !o->argv[0])
		return lb_err_set(err, EINVAL, "no command given");
	if (o->preserve_fds && (o->fd3 > 0 || o->preserve_fds > LB_MAX_PRESERVE_FDS))
		return lb_err_set(err, EINVAL, "cannot pass %u descriptors on", o->preserve_fds);
	/* added capabilities open the syscalls a profile grants them (Docker's does): its own
	 * filter, compiled for this command alone */
	_cleanup_(lb_seccomp_prog_freep) struct lb_seccomp_prog *own = NULL;
	if (o->add_caps ? compile_seccomp(sb, sb->spec.caps | o->add_caps, &own, err) < 0
			: prepare_seccomp(sb, err) < 0)
		return -1;
	_cleanup_free_ char **env = merge_env(sb->spec.env, o->env);
	if (!env)
		return lb_err_set(err, ENOMEM, "environment");
	if (lb_cgroup_create_child(sb->cg, o->cgroup, o->memory_bytes, &p->cg, err) < 0)
		return -1;
	int cgfd = lb_cgroup_dirfd(p->cg);
	if (pipe2(errp, O_CLOEXEC) < 0 || pipe2(pidp, O_CLOEXEC) < 0) {
		lb_err_set(err, errno, "pipe");
		int *all[] = {errp, pidp};
		for (size_t i = 0; i < 2; i++)
			for (int k = 0; k < 2; k++)
				if (all[i][k] >= 0)
					close(all[i][k]);
		lb_proc_release(p);
		return -1;
	}
	struct spawn s = {.sb = sb,
			  .o = o,
			  .seccomp = o->add_caps ? own : sb->seccomp,
			  .env = env,
			  .join = cgfd < 0 ? p->cg : NULL,
			  .err_w = errp[1],
			  .pid_w = pidp[1]};
	pid_t mid = clone_intermediate(cgfd);
	if (mid == 0)
		intermediate_main(&s);
	int e = errno;
	close(errp[1]), close(pidp[1]);
	int r = mid < 0
		    ? lb_err_set(err, e, "clone")
		    : finish_spawn(mid, errp[0], pidp[0], p, o->start_deadline, setup_exit, err);
	close(errp[0]), close(pidp[0]);
	if (r < 0) {
		/* the command may be running already (only its pidfd failed): kill before waiting
		 */
		lb_proc_kill(p, NULL);
		if (p->pid > 0)
			waitpid(p->pid, NULL, 0);
		lb_proc_release(p);
	}
	return r;
}

int lb_proc_kill(struct lb_proc *p, struct lb_err **err)
{
	return p->cg ? lb_cgroup_kill(p->cg, err) : 0;
}

int lb_proc_wait(struct lb_proc *p)
{
	int status = 0;
	while (p->pid > 0 && waitpid(p->pid, &status, 0) < 0 && errno == EINTR)
		;
	p->pid = 0;
	return status;
}

void lb_proc_release(struct lb_proc *p)
{
	if (p->cg)
		lb_cgroup_destroy(p->cg, NULL);
	p->cg = NULL;
	if (p->pidfd >= 0)
		close(p->pidfd);
	p->pidfd = -1;
}
