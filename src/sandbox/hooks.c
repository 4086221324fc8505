/*
 * Hook points of pid 1's setup (spec->hooks): where an OCI runtime runs its createContainer and
 * startContainer hooks. What runs is the caller's business; the engine decides where and with
 * what rights. The hooks run in a child of pid 1 that first becomes what the command will be
 * (rlimits, identity, capabilities, no_new_privs, then the command's seccomp filter), so a hook,
 * an image's program at LB_HOOK_STARTED, never holds more than the command; pid 1 itself is
 * untouched. Whatever a hook leaves running is killed before pid 1 goes on: at LB_HOOK_MOUNTED it
 * would keep the host's root, at LB_HOOK_STARTED it would outlive its point. The runner is as
 * hostile as its hooks (it has the command's identity, so a hook can stop it): pid 1 waits for it
 * with a deadline, the point's hook timeouts plus LB_HOOKS_MARGIN_S, and kills it when it stops.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <poll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lbbox/base/process.h"
#include "lbbox/base/util.h"
#include "lbbox/sandbox/sandbox.h"
#include "lbbox/sandbox/seccomp.h"
#include "engine.h"

/* The hooks' runner: becomes the command's identity, then hands over to the caller's hooks. */
__attribute__((noreturn)) static void
runner(const struct lb_child_ctx *ctx, enum lb_hook_point point, pid_t pid, const char *cwd, int fd)
{
	struct lb_err *err = NULL;
	sigset_t none;
	/* as the command: `kill 0` must never reach the process group lbbox-runc was started in */
	setsid();
	for (int sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (chdir(cwd) < 0)
		lb_err_set(&err, errno, "hooks: chdir %s", cwd);
	/* the filter last, as the command's: no_new_privs is set by then */
	if (err || lb_apply_rlimits(ctx->spec, &err) < 0 ||
	    lb_drop_privileges(ctx->spec, &err) < 0 ||
	    (ctx->seccomp && lb_seccomp_install(ctx->seccomp, &err) < 0) ||
	    ctx->spec->hooks->child(ctx->spec->hooks->ctx, point, pid, &err) < 0)
		lb_child_fail(fd, LB_EXIT_SETUP, err);
	_exit(0);
}

/* The runner's end: 0 once it exited (*status), 1 once it stopped, -1 past deadline (ns,
 * CLOCK_MONOTONIC); either of the last two leaves it to lb_descendants_kill. sfd: a signalfd of
 * SIGCHLD, which a child's stop raises too. */
static int await_runner(pid_t r, int sfd, uint64_t deadline, int *status)
{
	struct signalfd_siginfo si;
	for (;;) {
		pid_t w = waitpid(r, status, WNOHANG | WUNTRACED);
		if (w == r)
			return WIFSTOPPED(*status) ? 1 : 0;
		if (w < 0 && errno != EINTR)
			return -1;
		uint64_t now = lb_now_ns();
		if (now >= deadline)
			return -1;
		struct pollfd p = {.fd = sfd, .events = POLLIN};
		uint64_t ms = (deadline - now) / 1000000 + 1;
		if (poll(&p, 1, (int)(ms < 60000 ? ms : 60000)) > 0)
			while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
				;
	}
}

/* Forks the runner and waits for it (bounded, see await_runner); whatever it left is killed.
 * Its report, if it wrote one, is read only then: every writer of the pipe is gone by now. */
static int run_point(const struct lb_child_ctx *ctx, enum lb_hook_point point, pid_t pid,
		     const char *cwd, struct lb_err **err)
{
	const struct lb_hooks *h = ctx->spec->hooks;
	unsigned limit = (point == LB_HOOK_MOUNTED ? h->mounted_timeout_s : h->started_timeout_s) +
			 LB_HOOKS_MARGIN_S;
	int p[2], status = 0;
	struct lb_child_msg msg;
	sigset_t chld, old;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	/* blocked, so it is queued for the signalfd (an init's default-ignored signal would not) */
	sigprocmask(SIG_BLOCK, &chld, &old);
	int sfd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sfd < 0 || pipe2(p, O_CLOEXEC) < 0) {
		int e = errno;
		if (sfd >= 0)
			close(sfd);
		sigprocmask(SIG_SETMASK, &old, NULL);
		return lb_err_set(err, e, "hooks: pipe");
	}
	uint64_t deadline = lb_now_ns() + (uint64_t)limit * 1000000000ULL;
	pid_t r = fork();
	if (r == 0) {
		close(p[0]);
		runner(ctx, point, pid, cwd, p[1]);
	}
	int e = errno;
	close(p[1]);
	int done = r < 0 ? 0 : await_runner(r, sfd, deadline, &status);
	close(sfd);
	/* every other process of its pid namespace, or (a joined one) its own descendants */
	lb_descendants_kill(ctx->spec);
	sigprocmask(SIG_SETMASK, &old, NULL);
	int failed = r < 0 ? 0 : lb_child_read_fail(p[0], &msg, "hooks failed");
	close(p[0]);
	if (r < 0)
		return lb_err_set(err, e, "hooks: fork");
	if (failed)
		return lb_err_set(err, 0, "%s", msg.msg);
	if (done > 0)
		return lb_err_set(err, 0, "hooks killed: their runner was stopped");
	if (done < 0)
		return lb_err_set(err, 0, "hooks killed: still running after %u s", limit);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return lb_err_set(err, 0, "hooks failed (status %d)", lb_exit_code_of(status));
	return 0;
}

int lb_hooks_mounted(const struct lb_child_ctx *ctx, const char *newroot, pid_t *pid,
		     struct lb_err **err)
{
	struct lb_child_msg paused = {.exit_code = LB_HOOK_PAUSED};
	if (lb_write_all(ctx->err_fd, &paused, sizeof(paused)) < 0)
		return lb_err_set(err, errno, "report the mounts built");
	/* lbbox ran its own hooks meanwhile; EOF: it gave up on the sandbox */
	if (lb_read_all(ctx->sync_fd, pid, sizeof(*pid)) != sizeof(*pid))
		_exit(LB_EXIT_SETUP);
	close(ctx->sync_fd);
	if (!ctx->spec->hooks->child)
		return 0;
	return run_point(ctx, LB_HOOK_MOUNTED, *pid, newroot, err);
}

int lb_hooks_open_report(const struct lb_spec *spec, struct lb_err **err)
{
	const char *path = spec->hooks ? spec->hooks->start_report : NULL;
	if (!path)
		return -1;
	/* read-write: the open needs no reader, and the fifo keeps what is written until read */
	int fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode)) {
		int e = fd < 0 ? errno : EINVAL;
		if (fd >= 0)
			close(fd);
		lb_err_set(err, e, "start report %s", path);
		return -2;
	}
	return fd;
}

void lb_hooks_started(const struct lb_child_ctx *ctx, int report_fd, pid_t pid)
{
	struct lb_err *err = NULL;
	struct lb_child_msg msg = {0};
	if (ctx->spec->hooks->child && run_point(ctx, LB_HOOK_STARTED, pid, "/", &err) < 0) {
		msg.exit_code = LB_EXIT_SETUP;
		snprintf(msg.msg, sizeof(msg.msg), "%s", err->msg);
	}
	(void)!write(report_fd, &msg, sizeof(msg));
	close(report_fd);
	if (msg.exit_code)
		_exit(LB_EXIT_SETUP);
}
