/*
 * The sandbox's pid 1. It builds the filesystem, then forks the command and stays behind as a
 * tiny init: it reaps every zombie (orphans are reparented to it), forwards the signals lbbox
 * forwards to it, and exits with the command's status as soon as the command ends — which makes
 * the kernel kill whatever the command left running in the pid namespace.
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../init/idle.h"
#include "lbbox/base/console.h"
#include "lbbox/sandbox/sandbox.h"
#include "lbbox/base/util.h"
#include "engine.h"

/* Socket activation: LISTEN_PID names the command, known only now that it is forked. */
static void set_listen_pid(char **env)
{
	static char entry[32];
	snprintf(entry, sizeof(entry), "LISTEN_PID=%d", (int)getpid());
	for (; env && *env; env++)
		if (!strncmp(*env, "LISTEN_PID=", 11))
			*env = entry;
}

/* The command pid 1 forks: what every sandbox command does last (become.c). */
__attribute__((noreturn)) static void exec_command(const struct lb_child_ctx *ctx, int err_fd)
{
	if (ctx->spec->listen_pid) /* our own copy of the spec's memory: pid 1's is untouched */
		set_listen_pid(ctx->spec->env);
	const struct lb_become b = {.spec = ctx->spec,
				    .argv = ctx->spec->argv,
				    .env = ctx->spec->env,
				    .cwd = ctx->spec->cwd,
				    .seccomp = ctx->seccomp,
				    .first_private_fd = 3 + ctx->spec->preserve_fds,
				    .err_fd = err_fd,
				    .ctty = ctx->spec->console_socket != NULL};
	lb_become_command(&b);
}

/* Signals stay blocked (inherited from lbbox) and are taken synchronously with sigwaitinfo. */
__attribute__((noreturn)) static void init_loop(pid_t cmd, int status_fd)
{
	sigset_t set;
	sigfillset(&set);
	for (;;) {
		siginfo_t si;
		int sig = sigwaitinfo(&set, &si);
		if (sig < 0)
			continue;
		if (sig != SIGCHLD) {
			kill(cmd, sig);
			continue;
		}
		int status;
		pid_t w;
		while ((w = waitpid(-1, &status, WNOHANG)) > 0) {
			if (w != cmd)
				continue;
			(void)!write(status_fd, &status, sizeof(status));
			_exit(lb_exit_code_of(status));
		}
	}
}

/*
 * A session's pid 1: no command of its own; execs join it later. It keeps nothing of lbbox's
 * stdio (a caller reading lbbox's output must see EOF), reaps whatever is reparented to it, and
 * ends the sandbox on a termination signal.
 */
__attribute__((noreturn)) static void session_loop(const struct lb_child_ctx *ctx)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (int fd = 0; fd < 3; fd++)
		if (null >= 0)
			dup2(null, fd);
	close(ctx->err_fd); /* EOF: the sandbox is ready */
	if (ctx->init_fd >= 0) {
		static char *const argv[] = {"lbbox-init", NULL}, *const envp[] = {NULL};
		syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
		fcntl(ctx->alive_fd, F_SETFD, 0); /* the one lbbox-init keeps */
		syscall(SYS_execveat, ctx->init_fd, "", argv, envp, AT_EMPTY_PATH);
	}
	/* no lbbox-init: stay as we are, but close-on-exec is not enough to drop lbbox's locks
	 * (other than the alive lock) */
	if (ctx->alive_fd > 3)
		syscall(SYS_close_range, 3U, (unsigned)ctx->alive_fd - 1, 0U);
	syscall(SYS_close_range, (unsigned)ctx->alive_fd + 1, ~0U, 0U);
	lb_pid1_idle();
}

/* An OCI bundle's namespace path, joined before anything is configured in it. Whoever wrote the
 * bundle chose it (as with runc); non-blocking, so a fifo there cannot hang pid 1. */
static int join_ns(const char *path, int type, struct lb_err **err)
{
	if (!path)
		return 0;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return lb_err_set(err, errno, "namespace %s", path);
	int r = setns(fd, type);
	int e = errno;
	close(fd);
	return r < 0 ? lb_err_set(err, e, "join %s namespace %s",
				  type == CLONE_NEWNET	 ? "network"
				  : type == CLONE_NEWIPC ? "ipc"
							 : "uts",
				  path)
		     : 0;
}

/* The start gate, opened while the host's paths are still visible. Read side, non-blocking:
 * the open needs no writer, and poll() sees nothing until `start` writes. */
static int open_gate(const char *path, struct lb_err **err)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return lb_err_set(err, errno, "start gate %s", path);
	if (fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode)) {
		close(fd);
		return lb_err_set(err, EINVAL, "start gate %s is not a fifo", path);
	}
	return fd;
}

/* process.terminal: a pty of the sandbox's own devpts (so its name resolves inside), its master
 * to the console socket, its slave as pid 1's stdio and so the command's. */
static int make_console(int sock, struct lb_err **err)
{
	int slave = lb_console_send_pty(sock, "/dev/ptmx", err);
	close(sock);
	if (slave < 0)
		return -1;
	for (int fd = 0; fd < 3; fd++)
		if (dup2(slave, fd) < 0)
			return lb_err_set(err, errno, "terminal as stdio");
	if (slave > 2)
		close(slave);
	return 0;
}

/*
 * Built: report ready (EOF on the error pipe) and wait for the byte that starts the command.
 * Every signal stays blocked from here on, so init_loop forwards each one to the command (a
 * namespace's init would otherwise ignore the ones it has no handler for), and a status pipe
 * whose reader is long gone gives EPIPE rather than SIGPIPE.
 */
static void wait_gate(const struct lb_child_ctx *ctx, int gate)
{
	sigset_t all;
	char go;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, NULL);
	close(ctx->err_fd);
	for (;;) {
		struct pollfd p = {.fd = gate, .events = POLLIN};
		if (poll(&p, 1, -1) < 0 && errno != EINTR)
			_exit(LB_EXIT_SETUP);
		ssize_t n = read(gate, &go, 1);
		if (n == 1)
			break;
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			_exit(LB_EXIT_SETUP);
		if (n == 0) /* a writer came and went without the byte: wait for the next */
			usleep(10000);
	}
	close(gate);
}

static int setup_world(const struct lb_child_ctx *ctx, struct lb_err **err)
{
	const struct lb_spec *spec = ctx->spec;
	char newroot[LB_PATH_BUF];
	const char *hostname = spec->hostname ? spec->hostname : "lbbox";

	/* Only now, inside its cgroup, so the namespace's root is the sandbox's own cgroup. */
	if (unshare(CLONE_NEWCGROUP) < 0)
		return lb_err_set(err, errno, "unshare cgroup namespace");
	if (lb_rootfs_prepare(ctx, newroot, sizeof(newroot), err) < 0 ||
	    lb_pivot_root(newroot, spec->readonly_root, err) < 0)
		return -1;
	if (!spec->utsns_path && sethostname(hostname, strlen(hostname)) < 0)
		return lb_err_set(err, errno, "sethostname %s", hostname);
	if (spec->net != LB_NET_HOST && lb_net_loopback_up(err) < 0)
		return -1;
	if (spec->net == LB_NET_ON && !ctx->lease->pasta &&
	    lb_net_eth_configure(ctx->lease, err) < 0)
		return -1;
	return 0;
}

/*
 * pid 1 is a copy of lbbox: its argv and environment (host paths, maybe tokens) would be readable
 * from the sandbox through /proc/1/cmdline and /proc/1/environ. Wipe them in place (renaming the
 * process needs CAP_SYS_RESOURCE) and make pid 1 non-dumpable so its memory cannot be read.
 * Rootless, pid 1 stays dumpable: pasta, execs and `lbbox network inspect` (the same user, who
 * could trace their own lbbox anyway) enter its namespaces, which needs ptrace access; the
 * command still cannot read it, as it lacks capabilities pid 1 has (the kernel's ptrace rule;
 * CAP_SYS_PTRACE is refused, userns.c). A session's lbbox-init makes itself non-dumpable.
 */
static void hide_lbbox(bool userns)
{
	char buf[1024];
	unsigned long v[4];
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (!userns)
		prctl(PR_SET_DUMPABLE, 0);
	if (n <= 0)
		return;
	buf[n] = '\0';
	/* fields 48-51 (arg_start, arg_end, env_start, env_end), counted after "(comm)" */
	char *p = strrchr(buf, ')');
	for (int field = 2; p && field < 48; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p, " %lu %lu %lu %lu", &v[0], &v[1], &v[2], &v[3]) != 4)
		return;
	if (v[1] > v[0] && v[3] > v[2]) {
		memset((void *)v[0], 0, v[1] - v[0]);
		memset((void *)v[2], 0, v[3] - v[2]);
		snprintf((char *)v[0], v[1] - v[0], "lbbox-init");
	}
}

/*
 * Every descriptor lbbox inherited or opened (a caller's fd on "/" would be a way out of the
 * root, as in runc's CVE-2024-21626) is marked close-on-exec, so the command starts with only
 * stdin, stdout and stderr. The setup pipes are already close-on-exec and keep working.
 */
static void cloexec_fds(void)
{
	if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) == 0)
		return;
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	while (d && (de = readdir(d))) {
		int fd = atoi(de->d_name);
		if (fd > 2 && fd != dirfd(d))
			fcntl(fd, F_SETFD, FD_CLOEXEC);
	}
	if (d)
		closedir(d);
}

void lb_child_main(const struct lb_child_ctx *ctx)
{
	struct lb_err *err = NULL;
	char go;

	cloexec_fds();
	hide_lbbox(ctx->userns);
	if (ctx->spec->die_with_parent)
		prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* EOF instead of the byte: lbbox died before placing us in the cgroup. */
	if (read(ctx->sync_fd, &go, 1) != 1)
		_exit(LB_EXIT_SETUP);
	/* network "on": the address the parent leased follows the byte, in the same write */
	if (ctx->spec->net == LB_NET_ON &&
	    lb_read_all(ctx->sync_fd, ctx->lease, sizeof(*ctx->lease)) != sizeof(*ctx->lease))
		_exit(LB_EXIT_SETUP);
	close(ctx->sync_fd);
	/* pasta configures eth0 meanwhile; lbbox watches pasta and ends us if it fails */
	if (ctx->spec->net == LB_NET_ON && ctx->lease->pasta &&
	    lb_net_wait_pasta(LB_PASTA_TIMEOUT_MS, &ctx->lease->addr, &err) < 0)
		lb_child_fail(ctx->err_fd, LB_EXIT_SETUP, err);
	if (join_ns(ctx->spec->netns_path, CLONE_NEWNET, &err) < 0 ||
	    join_ns(ctx->spec->ipcns_path, CLONE_NEWIPC, &err) < 0 ||
	    join_ns(ctx->spec->utsns_path, CLONE_NEWUTS, &err) < 0)
		lb_child_fail(ctx->err_fd, LB_EXIT_SETUP, err);
	int gate = ctx->spec->start_gate ? open_gate(ctx->spec->start_gate, &err) : -1;
	if (ctx->spec->start_gate && gate < 0)
		lb_child_fail(ctx->err_fd, LB_EXIT_SETUP, err);
	int csock =
	    ctx->spec->console_socket ? lb_console_connect(ctx->spec->console_socket, &err) : -1;
	if (ctx->spec->console_socket && csock < 0)
		lb_child_fail(ctx->err_fd, LB_EXIT_SETUP, err);
	if (setup_world(ctx, &err) < 0 || (csock >= 0 && make_console(csock, &err) < 0))
		lb_child_fail(ctx->err_fd, LB_EXIT_SETUP, err);

	if (ctx->spec->session)
		session_loop(ctx);
	int err_fd = ctx->err_fd;
	if (gate >= 0) { /* the caller is gone by now: a failure to exec is only its exit code */
		wait_gate(ctx, gate);
		err_fd = -1;
	}
	pid_t cmd = fork();
	if (cmd < 0) {
		lb_err_set(&err, errno, "fork the command");
		lb_child_fail(err_fd, LB_EXIT_SETUP, err);
	}
	if (cmd == 0)
		exec_command(ctx, err_fd);
	if (err_fd >= 0)
		close(err_fd);
	/* the command's now: a socket must close when the command closes it, not with pid 1
	 * (whose own descriptors were opened after them, above them) */
	if (ctx->spec->preserve_fds)
		syscall(SYS_close_range, 3U, 2U + ctx->spec->preserve_fds, 0U);
	init_loop(cmd, ctx->status_fd);
}
