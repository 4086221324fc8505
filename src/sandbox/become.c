/*
 * The last steps before a sandbox's command runs, in one order for every way a command starts
 * (the one-shot command pid 1 forks, and an exec joining a live sandbox): a session of its own,
 * default signal handling, no inherited descriptor beyond what it is given, the sandbox's
 * rlimits, its identity and capabilities with no_new_privs, its umask, working directory and
 * environment, and the seccomp filter last — it must still allow the execve that follows.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lbbox/sandbox/sandbox.h"
#include "engine.h"

extern char **environ;

__attribute__((noreturn)) static void exec_failed(const struct lb_become *b, int e)
{
	struct lb_err *err = NULL;
	const char *cmd = b->argv[0];
	int code = e == ENOENT || e == ENOTDIR ? LB_EXIT_NOT_FOUND : LB_EXIT_CANNOT_EXEC;
	if (code == LB_EXIT_NOT_FOUND && !strchr(cmd, '/'))
		lb_err_set(&err, 0, "executable file '%s' not found in $PATH", cmd);
	else
		lb_err_set(&err, e, "cannot execute '%s'", cmd);
	lb_child_fail(b->err_fd, code, err);
}

static void failed(const struct lb_become *b, struct lb_err *err)
{
	lb_child_fail(b->err_fd, LB_EXIT_SETUP, err);
}

void lb_become_command(const struct lb_become *b)
{
	struct lb_err *err = NULL;
	sigset_t none;
	/* its own session and process group: `kill 0` or a tty must never reach lbbox's */
	setsid();
	if (b->ctty && ioctl(0, TIOCSCTTY, 0) < 0) {
		lb_err_set(&err, errno, "take the terminal");
		failed(b, err);
	}
	for (int sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	syscall(SYS_close_range, b->first_private_fd, ~0U, CLOSE_RANGE_CLOEXEC);
	/* the ones below are passed on on purpose (an exec's fd 3, OCI --preserve-fds) */
	for (unsigned fd = 3; fd < b->first_private_fd; fd++)
		fcntl((int)fd, F_SETFD, 0);
	if (lb_apply_rlimits(b->spec, &err) < 0 || lb_drop_privileges(b->spec, &err) < 0)
		failed(b, err);
	/* lowering is always allowed: no privilege needed after the drop */
	struct rlimit fs = {.rlim_cur = b->fsize, .rlim_max = b->fsize};
	if (b->fsize && setrlimit(RLIMIT_FSIZE, &fs) < 0) {
		lb_err_set(&err, errno, "RLIMIT_FSIZE");
		failed(b, err);
	}
	if (b->spec->umask_set)
		umask(b->spec->umask);
	if (chdir(b->cwd ? b->cwd : "/") < 0) {
		lb_err_set(&err, errno, "working directory %s", b->cwd);
		failed(b, err);
	}
	environ = b->env;
	if (b->seccomp && lb_seccomp_install(b->seccomp, &err) < 0)
		failed(b, err);
	execvp(b->argv[0], b->argv);
	exec_failed(b, errno);
}
