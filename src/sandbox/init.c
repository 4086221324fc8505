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
				    .ctty = ctx->console_fd >= 0 || ctx->spec->console_socket};
	lb_become_command(&b);
}

/* Signals stay blocked (inherited from lbbox) and are taken synchronously with sigwaitinfo.
 * Once the command ended, what it left ends too: by the kernel when pid 1 is its namespace's
 * init, by pid 1 itself in a joined one (descendants.c). */
__attribute__((noreturn)) static void init_loop(const struct lb_spec *spec, pid_t cmd,
						int status_fd)
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
			if (spec->pidns_path)
				lb_descendants_kill(spec);
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

/* process.terminal or lbbox run -t: a pty of the sandbox's own devpts (so its name resolves
 * inside, and the host's terminal is never within reach), its master to the console socket, its
 * slave as pid 1's stdio and so the command's. */
static int make_console(int sock, const struct winsize *size, struct lb_err **err)
{
	int slave = lb_console_send_pty(sock, "/dev/ptmx", size, err);
	close(sock);
	if (slave < 0)
		return -1;
	/* out of the caller's session, as runc's init: the caller's terminal signals its foreground
	 * process group, which pid 1 (a clone of lbbox) was in; its SIGWINCH or SIGINT would reach
	 * the command twice, once through pid 1 and once as the relay passes it on */
	setsid();
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

/* The new root built, the hooks run at their point (host_pid: filled there), the masks
 * applied, then pivot_root into it. */
static int build_root(const struct lb_child_ctx *ctx, char *newroot, size_t len, int *scratch,
		      pid_t *host_pid, struct lb_err **err)
{
	const struct lb_spec *spec = ctx->spec;
	struct lb_root_id root;
	if (lb_rootfs_prepare(ctx, newroot, len, scratch, &root, err) < 0)
		return -1;
	if (spec->hooks && lb_hooks_mounted(ctx, newroot, host_pid, err) < 0)
		return -1;
	/* after the hooks: whatever they mounted, the bundle's masks have the last word */
	if (lb_apply_masks(spec, newroot, err) < 0)
		return -1;
	return lb_pivot_root(newroot, &root, spec->readonly_root, err);
}

/* pasta has configured eth0 while the root was built (lbbox watches it and ends us if it
 * fails); its address goes into /etc/hosts, still reachable through the scratch tmpfs. */
static int await_pasta(const struct lb_child_ctx *ctx, int scratch, struct lb_err **err)
{
	if (lb_net_wait_pasta(LB_PASTA_TIMEOUT_MS, &ctx->lease->addr, err) < 0)
		return -1;
	return lb_etc_hosts_update(scratch, ctx->spec, ctx->lease, err);
}

/* host_pid: filled at the hook point (spec->hooks only). */
static int setup_world(const struct lb_child_ctx *ctx, pid_t *host_pid, struct lb_err **err)
{
	const struct lb_spec *spec = ctx->spec;
	char newroot[LB_PATH_BUF];
	const char *hostname = spec->hostname ? spec->hostname : "lbbox";

	/* Only now, inside its cgroup, so the namespace's root is the sandbox's own cgroup (a
	 * joined one is pid 1's since the clone). */
	if (!spec->cgroupns_path && unshare(CLONE_NEWCGROUP) < 0)
		return lb_err_set(err, errno, "unshare cgroup namespace");
	if (lb_sysctls_apply(spec, err) < 0)
		return -1;
	int scratch = -1;
	int r = build_root(ctx, newroot, sizeof(newroot), &scratch, host_pid, err);
	if (r == 0 && spec->net == LB_NET_ON && ctx->lease->pasta)
		r = await_pasta(ctx, scratch, err);
	if (scratch >= 0)
		close(scratch);
	if (r < 0)
		return -1;
	if (!spec->utsns_path && !spec->uts_host && sethostname(hostname, strlen(hostname)) < 0)
		return lb_err_set(err, errno, "sethostname %s", hostname);
	/* a joined network namespace seen from a user namespace of its own is the host's user
	 * namespace's to configure (its owner, CNI, brought lo up) */
	bool foreign_net = spec->netns_path && ctx->userns;
	if (spec->net != LB_NET_HOST && !foreign_net && lb_net_loopback_up(err) < 0)
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
static void hide_lbbox(bool rootless)
{
	char buf[1024];
	unsigned long v[4];
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (!rootless)
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
		/* a non-NUL last byte makes the kernel end cmdline at the name's NUL (its
		 * setproctitle rule), not list the wiped bytes as empty arguments */
		if (v[1] - v[0] > sizeof("lbbox-init"))
			((char *)v[1])[-1] = ' ';
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

/* Mounted by now: pid 1 keeps no handle on the host's directories. */
static void close_host_fds(const struct lb_host_fds *fds)
{
	int fd[] = {fds->statedir, fds->rootfs};
	for (size_t i = 0; i < 2; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	for (size_t i = 0; i < LB_MAX_MOUNTS; i++)
		if (fds->mounts[i] >= 0)
			close(fds->mounts[i]);
}

void lb_child_main(const struct lb_child_ctx *host_ctx)
{
	struct lb_err *err = NULL;
	struct lb_host_fds fds;
	struct lb_child_ctx c = *host_ctx;
	const struct lb_child_ctx *ctx = &c;
	char go;

	lb_host_fds_init(&fds);
	c.fds = &fds;

	cloexec_fds();
	hide_lbbox(ctx->rootless);
	/* not its namespace's init (a joined pid namespace): no signal without a handler may end
	 * it before it blocks them all at the gate, and its command's orphans come back to it */
	if (ctx->spec->pidns_path && lb_descendants_adopt(&err) < 0)
		lb_child_fail(ctx->err_fd, LB_EXIT_SETUP, err);
	if (ctx->spec->die_with_parent)
		prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* EOF instead of the byte: lbbox died before the sandbox's state was recorded. */
	if (read(ctx->sync_fd, &go, 1) != 1)
		_exit(LB_EXIT_SETUP);
	/* before anything of the sandbox runs, as lbbox's own attach would have been */
	if (ctx->join_cgroup && lb_cgroup_join(ctx->cg, &err) < 0)
		lb_child_fail(ctx->err_fd, LB_EXIT_SETUP, err);
	/* the maps are written by now: the host's objects are opened while pid 1 is still the
	 * host's root (host_fds.c), then it becomes its namespace's */
	if (lb_host_fds_open(ctx->spec, ctx->statedir, ctx->userns, &fds, &err) < 0)
		lb_child_fail(ctx->err_fd, LB_EXIT_SETUP, err);
	/* the start report is the host's too (beside the gate, in the state directory) */
	int report = lb_hooks_open_report(ctx->spec, &err);
	if (report == -2 || (ctx->userns && !ctx->rootless && lb_userns_become_root(&err) < 0))
		lb_child_fail(ctx->err_fd, LB_EXIT_SETUP, err);
	/* network "on": the address the parent leased follows the byte, in the same write */
	if (ctx->spec->net == LB_NET_ON &&
	    lb_read_all(ctx->sync_fd, ctx->lease, sizeof(*ctx->lease)) != sizeof(*ctx->lease))
		_exit(LB_EXIT_SETUP);
	if (!ctx->spec->hooks) /* else lbbox resumes us once more, at the hook point */
		close(ctx->sync_fd);
	int gate = ctx->fds->gate;
	int csock = ctx->console_fd >= 0 ? ctx->console_fd : ctx->fds->console;
	pid_t host_pid = 0;
	if (setup_world(ctx, &host_pid, &err) < 0 ||
	    (csock >= 0 && make_console(csock, ctx->console_size, &err) < 0))
		lb_child_fail(ctx->err_fd, LB_EXIT_SETUP, err);
	close_host_fds(ctx->fds);

	if (ctx->spec->session)
		session_loop(ctx);
	int err_fd = ctx->err_fd;
	if (gate >= 0) { /* the caller is gone by now: a failure to exec is only its exit code */
		wait_gate(ctx, gate);
		err_fd = -1;
	}
	if (report >= 0)
		lb_hooks_started(ctx, report, host_pid);
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
	init_loop(ctx->spec, cmd, ctx->status_fd);
}
