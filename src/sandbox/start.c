/*
 * One sandbox from start to end, seen from lbbox (the parent): prepare everything that can fail
 * before anything exists, clone pid 1 into its namespaces (and, on v2, straight into its
 * cgroup), wait with signals forwarded and the deadline enforced, then collect the result and
 * remove every trace: cgroup, state directory, processes.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/sandbox/sandbox.h"
#include "lbbox/base/util.h"
#include "engine.h"

/* Everything one run owns; run_release() undoes whatever was done. */
struct run {
	char id[13];
	char statedir[LB_PATH_BUF];
	bool statedir_made;
	struct lb_cgroup *cg;
	struct lb_seccomp_prog *seccomp;
	pid_t pid;
	int pidfd, sigfd;
	int sync_w, err_r, status_r;
	sigset_t oldmask;
	bool mask_set;
	pid_t ppid; /* lbbox's parent, watched with --die-with-parent */
	const struct lb_spec *spec;
	const char *runroot;
	struct lb_net_handle net;   /* network "on" only */
	int init_fd;		    /* session: lbbox-init, opened before the clone */
	int alive_fd;		    /* LB_ALIVE_LOCK, held (with pid 1) for the sandbox's life */
	bool userns;		    /* the sandbox gets its own user namespace */
	bool rootless;		    /* ... mapping the caller alone (else the spec's maps) */
	uint64_t setup_deadline;    /* CLOCK_MONOTONIC ns by which pid 1 must be ready */
	bool setup_timeout;	    /* the deadline is the run's own --timeout */
	const struct lb_run_io *io; /* served while the command runs; NULL = none */
};

/* Building a sandbox takes milliseconds; whatever hangs it (a hostile image, a stuck file
 * system) must not hang lbbox or a Box action with it. A run's --timeout, when shorter, wins. */
#define LB_SETUP_TIMEOUT_MS 60000ULL

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void run_release(struct run *r)
{
	if (r->pid > 0) {
		kill(r->pid, SIGKILL);
		waitpid(r->pid, NULL, 0);
		r->pid = 0;
	}
	if (r->net.leased || r->net.host_if[0])
		lb_net_on_teardown(r->spec, r->runroot, &r->net);
	if (r->net.pasta > 0)
		lb_net_pasta_teardown(&r->net);
	if (r->cg)
		lb_cgroup_destroy(r->cg, NULL);
	r->cg = NULL;
	if (r->statedir_made)
		lb_rm_rf(r->statedir, NULL);
	lb_seccomp_prog_free(r->seccomp);
	r->seccomp = NULL;
	close_fd(&r->pidfd);
	close_fd(&r->sigfd);
	close_fd(&r->sync_w);
	close_fd(&r->err_r);
	close_fd(&r->status_r);
	close_fd(&r->init_fd);
	close_fd(&r->alive_fd);
	if (r->ppid)
		prctl(PR_SET_PDEATHSIG, 0);
	if (r->mask_set)
		sigprocmask(SIG_SETMASK, &r->oldmask, NULL);
	r->mask_set = false;
}

static int prepare_seccomp(struct run *r, const struct lb_spec *spec, const struct lb_paths *paths,
			   struct lb_err **err)
{
	char cache[LB_PATH_BUF];
	if (spec->seccomp_profile && strcmp(spec->seccomp_profile, "unconfined") == 0)
		return 0;
	snprintf(cache, sizeof(cache), "%s/cache/seccomp", paths->root);
	uint64_t caps = spec->uid == 0 ? spec->caps : 0;
	return lb_seccomp_prepare(spec->seccomp_profile, caps, cache, &r->seccomp, err);
}

static int make_statedir(struct run *r, const struct lb_paths *paths, struct lb_err **err)
{
	if (lb_random_hex(r->id, 12, err) < 0 || lb_mkdir_p(paths->runroot, 0700, err) < 0)
		return -1;
	snprintf(r->statedir, sizeof(r->statedir), "%s/%s", paths->runroot, r->id);
	if (mkdir(r->statedir, 0700) < 0)
		return lb_err_set(err, errno, "create state directory %s", r->statedir);
	r->statedir_made = true;
	/* held from now on by lbbox, then by pid 1 for as long as it lives: the GC skips a sandbox
	 * whose lock is held without parsing its state */
	char lock[LB_PATH_BUF];
	snprintf(lock, sizeof(lock), "%s/" LB_ALIVE_LOCK, r->statedir);
	r->alive_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (r->alive_fd < 0 || flock(r->alive_fd, LOCK_EX) < 0)
		return lb_err_set(err, errno, "lock %s", lock);
	return 0;
}

/* cp -a: ownership, modes, times, xattrs, hardlinks and device nodes, as a copy must keep them. */
static int copy_rootfs(struct run *r, const struct lb_spec *spec, struct lb_err **err)
{
	char dst[LB_PATH_BUF];
	int status;
	snprintf(dst, sizeof(dst), "%s/rootfs", r->statedir);
	pid_t pid = fork();
	if (pid == 0) {
		execlp("cp", "cp", "-a", "--reflink=auto", "--", spec->rootfs, dst, (char *)NULL);
		_exit(127);
	}
	if (pid < 0)
		return lb_err_set(err, errno, "fork cp");
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return lb_err_set(err, 0, "copy %s into %s failed", spec->rootfs, dst);
	return 0;
}

/* Forwarded signals and SIGCHLD are taken through a signalfd; the child inherits the mask. */
/* The sandbox's cgroup, its paths recorded in the state directory before any directory exists:
 * a kill at any moment leaves nothing the collector does not know of. */
static int create_cgroup(struct run *r, const char *name, struct lb_err **err)
{
	const struct lb_spec *spec = r->spec;
	/* the device fence: lbbox's standard devices, and the spec's with their access. mknod
	 * always: pid 1 makes the nodes from inside the cgroup; it opens nothing (r and w do), and
	 * the command can make no node where one could be opened (/dev read-only, the rest nodev)
	 */
	struct lb_cgroup_device fence[LB_MAX_DEVICES];
	struct lb_cgroup_limits lim = spec->limits;
	lim.devices = fence;
	for (size_t i = 0; i < spec->n_devices && i < LB_MAX_DEVICES; i++) {
		const struct lb_device *d = &spec->devices[i];
		if (d->type != 'p')
			fence[lim.n_devices++] =
			    (struct lb_cgroup_device){.type = d->type,
						      .major = d->major,
						      .minor = d->minor,
						      .access = d->access | LB_DEV_MKNOD};
	}
	if (lb_cgroup_plan(name, spec->cgroup_parent, &lim, &r->cg, err) < 0)
		return -1;
	if (lb_state_write_cgroups(r->statedir, spec->cgroup_name, r->cg, err) < 0 ||
	    lb_cgroup_make(r->cg, &lim, err) < 0) {
		lb_cgroup_forget(r->cg);
		r->cg = NULL;
		return -1;
	}
	return 0;
}

static int block_signals(struct run *r, struct lb_err **err)
{
	sigset_t set;
	sigemptyset(&set);
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		sigaddset(&set, forwarded[i]);
	sigaddset(&set, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &set, &r->oldmask) < 0)
		return lb_err_set(err, errno, "block signals");
	r->mask_set = true;
	r->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (r->sigfd < 0)
		return lb_err_set(err, errno, "signalfd");
	return 0;
}

/* The namespaces pid 1 is born with (not the ones joined by path). */
static uint64_t clone_flags(const struct lb_spec *spec, bool userns)
{
	uint64_t flags = CLONE_NEWNS;
	/* one joined by path is lbbox's own around the clone (nsjoin.c) */
	if (!spec->pidns_path)
		flags |= CLONE_NEWPID;
	if (!spec->utsns_path && !spec->uts_host)
		flags |= CLONE_NEWUTS;
	if (!spec->ipcns_path)
		flags |= CLONE_NEWIPC;
	if (spec->net != LB_NET_HOST && !spec->netns_path)
		flags |= CLONE_NEWNET;
	if (userns && !spec->userns_path)
		flags |= CLONE_NEWUSER;
	return flags;
}

static pid_t clone_sandbox(const struct lb_spec *spec, bool userns, int cgroup_fd, int *pidfd)
{
	struct clone_args args = {
	    .flags = clone_flags(spec, userns) | CLONE_PIDFD,
	    .pidfd = (uint64_t)(uintptr_t)pidfd,
	    .exit_signal = SIGCHLD,
	};
	if (cgroup_fd >= 0) {
		args.flags |= CLONE_INTO_CGROUP;
		args.cgroup = (uint64_t)cgroup_fd;
	}
	return (pid_t)syscall(SYS_clone3, &args, sizeof(args));
}

/* Network "on": veth and address while pid 1 waits; the lease follows the sync byte. */
static int start_networked(struct run *r, const struct lb_spec *spec, struct lb_err **err)
{
	char msg[1 + sizeof(struct lb_net_lease)] = "1";
	/* a session's pasta outlives this lbbox: recorded in the state directory (gc.c) */
	int set = r->rootless ? lb_net_pasta_setup(spec, r->pid, spec->session ? r->statedir : NULL,
						   &r->net, err)
			      : lb_net_on_setup(spec, r->runroot, r->id, r->pid, &r->net, err);
	if (set < 0 || lb_state_write(r->statedir, r->id, r->pid, spec, r->cg, &r->net.lease,
				      r->userns, err) < 0)
		return -1;
	memcpy(msg + 1, &r->net.lease, sizeof(r->net.lease));
	if (lb_write_all(r->sync_w, msg, sizeof(msg)) < 0)
		return lb_err_set(err, errno, "start the sandbox");
	if (!spec->hooks) /* else kept for hook_pause */
		close_fd(&r->sync_w);
	return 0;
}

/* lbbox-init beside the running executable, sealed (sealed.c: /proc/1/exe must not lead to the
 * host's file); -1 (pid 1 then stays a copy of lbbox) if absent. */
static int open_init(void)
{
	return lb_sealed_helper("lbbox-init", NULL);
}

/* ms left until the setup deadline, at least 0 */
static int setup_left_ms(const struct run *r)
{
	uint64_t now = lb_now_ns();
	return now >= r->setup_deadline ? 0 : (int)((r->setup_deadline - now) / 1000000 + 1);
}

/* pid 1, born in the namespaces the spec joins by path; lbbox is back in its own after. In the
 * child: 0. On failure -1, *err set (and r->pid stays 0, or names a child to kill). */
static pid_t clone_joined(struct run *r, const struct lb_spec *spec, int cgfd, struct lb_err **err)
{
	struct lb_ns_join j;
	if (spec->userns_path) { /* entered by an intermediate: lbbox could not come back */
		pid_t pid = lb_ns_join_open(spec, &j, err) < 0
				? -1
				: lb_userns_join_clone(spec, &j, clone_flags(spec, true), cgfd,
						       setup_left_ms(r), &r->pidfd, err);
		lb_ns_join_close(&j);
		return pid;
	}
	if (lb_ns_join_open(spec, &j, err) < 0 || lb_ns_join_enter(&j, err) < 0) {
		lb_ns_join_leave(&j, NULL);
		lb_ns_join_close(&j);
		return -1;
	}
	pid_t pid = clone_sandbox(spec, r->userns, cgfd, &r->pidfd);
	if (pid == 0) { /* pid 1 keeps no handle on lbbox's own namespaces */
		lb_ns_join_close(&j);
		return 0;
	}
	int e = errno;
	int left = lb_ns_join_leave(&j, err);
	lb_ns_join_close(&j);
	if (pid < 0)
		return lb_ns_join_clone_failed(spec, e, err);
	if (left < 0) {
		r->pid = pid; /* killed and reaped by run_release */
		return -1;
	}
	return pid;
}

static int start_child(struct run *r, const struct lb_spec *spec, struct lb_err **err)
{
	int sync[2], errp[2], status[2];
	if (pipe2(sync, O_CLOEXEC) < 0)
		return lb_err_set(err, errno, "pipe");
	if (pipe2(errp, O_CLOEXEC) < 0) {
		close(sync[0]), close(sync[1]);
		return lb_err_set(err, errno, "pipe");
	}
	if (pipe2(status, O_CLOEXEC) < 0) {
		close(sync[0]), close(sync[1]), close(errp[0]), close(errp[1]);
		return lb_err_set(err, errno, "pipe");
	}
	r->sync_w = sync[1], r->err_r = errp[0], r->status_r = status[0];

	int cgfd = lb_cgroup_dirfd(r->cg);
	/* v1: pid 1 moves itself, cheaper than lbbox's attach (cgroup_v1.c); not from a user
	 * namespace of its own, whose root may not write to the host's cgroup files */
	bool join = lb_cgroup_version(r->cg) == LB_CGROUP_V1 && !r->userns;
	pid_t pid = clone_joined(r, spec, cgfd, err);
	if (pid == 0) {
		struct lb_child_ctx ctx = {
		    .spec = spec,
		    .statedir = r->statedir,
		    .seccomp = r->seccomp,
		    .cg = r->cg,
		    .sync_fd = sync[0],
		    .err_fd = errp[1],
		    .status_fd = status[1],
		    .lease = &r->net.lease,
		    .init_fd = r->init_fd,
		    .alive_fd = r->alive_fd,
		    .userns = r->userns,
		    .console_fd = r->io ? r->io->console_fd : -1,
		    .console_size = r->io ? r->io->console_size : NULL,
		    .rootless = r->rootless,
		    .join_cgroup = join,
		};
		close(sync[1]), close(errp[0]), close(status[0]);
		lb_sealed_forget(); /* pid 1 may stay an lbbox for its life */
		lb_child_main(&ctx);
	}
	close(sync[0]), close(errp[1]), close(status[1]);
	if (pid < 0)
		return -1;
	r->pid = pid;
	if (r->userns && !spec->userns_path && lb_userns_map(pid, spec, r->rootless, err) < 0)
		return -1;
	/* before pid 1 runs anything: the command and all the sandbox forks inherit it. Written
	 * from here, with lbbox's rights: pid 1 may be in a user namespace with its /proc files
	 * owned by the host's root. */
	if (spec->oom_score_adj_set && lb_set_oom_score_adj(pid, spec->oom_score_adj, err) < 0)
		return -1;
	/* With CLONE_INTO_CGROUP the child is already inside, joining it is the child's own job;
	 * otherwise place it before it runs. */
	if (cgfd < 0 && !join && lb_cgroup_attach(r->cg, pid, err) < 0)
		return -1;
	if (spec->net == LB_NET_ON)
		return start_networked(r, spec, err);
	if (lb_state_write(r->statedir, r->id, pid, spec, r->cg, NULL, r->userns, err) < 0)
		return -1;
	if (lb_write_all(r->sync_w, "1", 1) < 0)
		return lb_err_set(err, errno, "start the sandbox");
	if (!spec->hooks) /* else kept for hook_pause */
		close_fd(&r->sync_w);
	return 0;
}

/*
 * Until pid 1 reports (its own failure, or EOF once the command runs) or the deadline passes.
 * Rootless "on": until then pasta must not exit; if it does, its words are the error.
 */
static int watch_setup(struct run *r, int *setup_exit, struct lb_err **err)
{
	struct pollfd p[2] = {{.fd = r->err_r, .events = POLLIN},
			      {.fd = r->net.pasta > 0 ? r->net.pasta_pidfd : -1, .events = POLLIN}};
	for (;;) {
		int n = poll(p, 2, setup_left_ms(r));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return lb_err_set(err, errno, "wait for the sandbox");
		/* pid 1 first: its own report (or EOF, ready) wins over a pasta that just ended */
		if (p[0].revents)
			return 0;
		if (p[1].revents)
			return lb_net_pasta_failed(&r->net, err);
		if (n == 0 && setup_left_ms(r) == 0)
			break;
	}
	if (r->setup_timeout) {
		*setup_exit = LB_EXIT_TIMEOUT;
		return lb_err_set(err, 0, "timed out while the sandbox was being set up");
	}
	*setup_exit = LB_EXIT_SETUP;
	return lb_err_set(err, ETIMEDOUT, "the sandbox was not set up within %llu s",
			  LB_SETUP_TIMEOUT_MS / 1000);
}

/* Blocks until pid 1 has exec'd the command (EOF) or reported why it could not. */
static int wait_setup(struct run *r, int *setup_exit, struct lb_err **err)
{
	struct lb_child_msg msg;
	if (watch_setup(r, setup_exit, err) < 0)
		return -1;
	int failed = lb_child_read_fail(r->err_r, &msg, "sandbox setup failed");
	close_fd(&r->err_r);
	if (!failed) {
		if (r->net.pasta > 0)
			lb_net_pasta_ready(&r->net);
		return 0;
	}
	*setup_exit = msg.exit_code;
	/* pid 1 gave up on a pasta that kept running: what pasta said may be the reason */
	char said[256] = "";
	if (r->net.pasta > 0 && lb_net_pasta_said(&r->net, said, sizeof(said)))
		return lb_err_set(err, 0, "%s (pasta: %s)", msg.msg, said);
	return lb_err_set(err, 0, "%s", msg.msg);
}

static void set_setup_deadline(struct run *r, uint64_t start)
{
	uint64_t ms = LB_SETUP_TIMEOUT_MS;
	if (r->spec->timeout_ms && r->spec->timeout_ms < ms) {
		ms = r->spec->timeout_ms;
		r->setup_timeout = true;
	}
	r->setup_deadline = start + ms * 1000000ULL;
}

/*
 * spec->hooks: pid 1 stops once its mounts are built. lbbox runs the parent's hooks, then
 * resumes pid 1 with its pid (which its own hooks are told); the setup's time starts again,
 * with the time its hooks may take on top.
 */
static int hook_pause(struct run *r, int *setup_exit, struct lb_err **err)
{
	const struct lb_hooks *h = r->spec->hooks;
	struct lb_child_msg msg;
	if (watch_setup(r, setup_exit, err) < 0)
		return -1;
	ssize_t n = lb_read_all(r->err_r, &msg, sizeof(msg));
	if (n != (ssize_t)sizeof(msg) || msg.exit_code != LB_HOOK_PAUSED) {
		bool said = n == (ssize_t)sizeof(msg);
		msg.msg[sizeof(msg.msg) - 1] = '\0';
		*setup_exit = said ? msg.exit_code : LB_EXIT_SETUP;
		return lb_err_set(err, 0, "%s", said ? msg.msg : "sandbox setup failed");
	}
	if (h->parent && h->parent(h->ctx, r->pid, err) < 0)
		return -1;
	if (lb_write_all(r->sync_w, &r->pid, sizeof(r->pid)) < 0)
		return lb_err_set(err, errno, "resume the sandbox");
	close_fd(&r->sync_w);
	set_setup_deadline(r, lb_now_ns() + (uint64_t)h->mounted_timeout_s * 1000000000ULL);
	return 0;
}

static void kill_sandbox(struct run *r)
{
	lb_cgroup_kill(r->cg, NULL);
	/* SIGKILL to a pid namespace's init kills every process in the namespace. */
	kill(r->pid, SIGKILL);
}

/*
 * --die-with-parent, as bubblewrap: the sandbox also dies when lbbox's parent does. lbbox gets
 * SIGTERM then (not SIGKILL, so it can still remove the cgroup and state) and kills the sandbox.
 */
static int watch_parent(struct run *r, struct lb_err **err)
{
	r->ppid = getppid();
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0)
		return lb_err_set(err, errno, "PR_SET_PDEATHSIG");
	if (getppid() != r->ppid) /* died before the prctl */
		return lb_err_set(err, 0, "lbbox's parent exited");
	return 0;
}

static void on_signal(struct run *r, int sig)
{
	if (r->ppid && getppid() != r->ppid)
		kill_sandbox(r);
	else
		kill(r->pid, sig);
}

static void take_signals(struct run *r)
{
	const struct lb_run_io *io = r->io;
	struct signalfd_siginfo si;
	while (read(r->sigfd, &si, sizeof(si)) == sizeof(si)) {
		int sig = (int)si.ssi_signo;
		if (sig != SIGCHLD && !(io && io->on_signal && io->on_signal(io->ctx, sig)))
			on_signal(r, sig);
	}
}

/* The wait's descriptors: the signalfd, then io's (copied back and forth, as io's callback
 * reads and rearms its own). */
struct waiting {
	struct run *r;
	struct pollfd fds[1 + LB_RUN_IO_MAX_FDS];
	size_t n;
};

static void waiting_arm(struct waiting *w)
{
	const struct lb_run_io *io = w->r->io;
	w->fds[0] = (struct pollfd){.fd = w->r->sigfd};
	w->n = 1;
	for (size_t i = 0; io && i < io->n && i < LB_RUN_IO_MAX_FDS; i++)
		w->fds[w->n++] = (struct pollfd){.fd = io->fds[i].fd, .events = io->fds[i].events};
}

static void on_ready(void *ctx, struct pollfd *fd)
{
	struct waiting *w = ctx;
	const struct lb_run_io *io = w->r->io;
	long i = fd - w->fds;
	if (i == 0) {
		take_signals(w->r);
	} else {
		io->fds[i - 1].revents = fd->revents;
		io->on_ready(io->ctx, &io->fds[i - 1]);
	}
	waiting_arm(w);
}

/* Waits for pid 1, forwarding signals, killing the sandbox at the deadline (0: none); returns
 * pid 1's wait status. */
static int wait_child(struct run *r, uint64_t deadline_ns, struct lb_result *res)
{
	struct waiting w = {.r = r};
	int status = 0;
	waiting_arm(&w);
	if (!lb_wait_exit(r->pidfd, w.fds, w.n, deadline_ns, on_ready, &w)) {
		res->timed_out = true;
		kill_sandbox(r);
		lb_wait_exit(r->pidfd, w.fds, w.n, 0, on_ready, &w);
	}
	while (waitpid(r->pid, &status, 0) < 0 && errno == EINTR)
		;
	r->pid = 0;
	return status;
}

static void collect(struct run *r, int init_status, struct lb_result *res)
{
	int status = init_status;
	if (read(r->status_r, &status, sizeof(status)) != sizeof(status))
		status = init_status; /* pid 1 itself was killed: timeout or lbbox's kill */
	if (WIFSIGNALED(status)) {
		res->signal = WTERMSIG(status);
		res->exit_code = 128 + res->signal;
	} else {
		res->exit_code = WEXITSTATUS(status);
	}
	struct lb_cgroup_stats st = {0};
	if (lb_cgroup_stats(r->cg, &st, NULL) == 0) {
		res->memory_peak = st.memory_peak;
		res->cpu_usec = st.cpu_usec;
		res->oom_killed = st.oom_kills > 0;
	}
}

static void run_init(struct run *r, const struct lb_spec *spec, const struct lb_paths *paths,
		     uint64_t start)
{
	*r = (struct run){.pidfd = -1,
			  .net = {.pasta_pidfd = -1, .pasta_err = -1},
			  .sigfd = -1,
			  .sync_w = -1,
			  .err_r = -1,
			  .status_r = -1,
			  .init_fd = -1,
			  .alive_fd = -1,
			  .spec = spec,
			  .runroot = paths->runroot,
			  .rootless = lb_rootless()};
	r->userns = r->rootless || spec->n_uid_map > 0 || spec->userns_path;
	set_setup_deadline(r, start);
}

/* Everything a run and a session share, up to pid 1 ready: each step undone by run_release. */
static int run_start(struct run *r, const struct lb_paths *paths, int *setup_exit,
		     struct lb_err **err)
{
	const struct lb_spec *spec = r->spec;
	char cgname[256];
	if (r->rootless && lb_rootless_check(spec, err) < 0)
		return -1;
	lb_gc_some(paths, LB_GC_PER_RUN); /* not every sandbox: gc.c */
	if (prepare_seccomp(r, spec, paths, err) < 0 || make_statedir(r, paths, err) < 0 ||
	    (spec->copy_rootfs && copy_rootfs(r, spec, err) < 0))
		return -1;
	if (spec->cgroup_name)
		snprintf(cgname, sizeof(cgname), "%s", spec->cgroup_name);
	else
		snprintf(cgname, sizeof(cgname), "lbbox-%s", r->id);
	if (create_cgroup(r, cgname, err) < 0 || block_signals(r, err) < 0 ||
	    (spec->die_with_parent && watch_parent(r, err) < 0))
		return -1;
	if (start_child(r, spec, err) < 0 || (spec->hooks && hook_pause(r, setup_exit, err) < 0))
		return -1;
	return wait_setup(r, setup_exit, err) < 0 ? -1 : 0;
}

int lb_sandbox_run(const struct lb_spec *spec, const struct lb_paths *paths, struct lb_result *res,
		   int *setup_exit, struct lb_err **err)
{
	return lb_sandbox_run_io(spec, paths, NULL, res, setup_exit, err);
}

int lb_sandbox_run_io(const struct lb_spec *spec, const struct lb_paths *paths,
		      const struct lb_run_io *io, struct lb_result *res, int *setup_exit,
		      struct lb_err **err)
{
	struct run r;
	uint64_t start = lb_now_ns();

	memset(res, 0, sizeof(*res));
	*setup_exit = LB_EXIT_SETUP;
	run_init(&r, spec, paths, start);
	r.io = io;
	if (io && spec->console_socket)
		return lb_err_set(err, EINVAL, "a run has one terminal: a console socket or io's");
	if (run_start(&r, paths, setup_exit, err) < 0)
		goto fail;

	uint64_t deadline = spec->timeout_ms ? start + spec->timeout_ms * 1000000ULL : 0;
	int status = wait_child(&r, deadline, res);
	collect(&r, status, res);
	memcpy(res->id, r.id, sizeof(res->id));
	res->duration_ms = (lb_now_ns() - start) / 1000000;
	int ret = 0;
	if (lb_cgroup_destroy(r.cg, err) < 0)
		ret = -1;
	r.cg = NULL;
	run_release(&r);
	return ret;
fail:
	run_release(&r);
	return -1;
}

/*
 * A session: the same preparation and start as a run, but lbbox returns once pid 1 is ready and
 * leaves it running with its cgroup and state; lb_sandbox_destroy (or the GC, once pid 1 died)
 * removes them.
 */
/* Returns once pid 1 is ready and hands the sandbox over to it: nothing is undone below. */
static int start_detached(struct run *r, const struct lb_paths *paths, char id[13], pid_t *pid,
			  struct lb_err **err)
{
	int setup_exit;
	if (run_start(r, paths, &setup_exit, err) < 0) {
		run_release(r);
		return -1;
	}
	memcpy(id, r->id, sizeof(r->id));
	if (pid)
		*pid = r->pid;
	r->pid = 0;
	lb_net_pasta_detach(&r->net);
	r->net = (struct lb_net_handle){.pasta_pidfd = -1, .pasta_err = -1};
	lb_cgroup_forget(r->cg);
	r->cg = NULL;
	r->statedir_made = false;
	run_release(r);
	return 0;
}

int lb_sandbox_start(const struct lb_spec *spec, const struct lb_paths *paths, char id[13],
		     struct lb_err **err)
{
	struct run r;

	if (!spec->session)
		return lb_err_set(err, EINVAL, "lb_sandbox_start needs a session spec");
	run_init(&r, spec, paths, lb_now_ns());
	r.init_fd = open_init();
	return start_detached(&r, paths, id, NULL, err);
}

int lb_sandbox_create(const struct lb_spec *spec, const struct lb_paths *paths, char id[13],
		      pid_t *pid, struct lb_err **err)
{
	struct run r;

	if (spec->session || !spec->start_gate)
		return lb_err_set(err, EINVAL, "lb_sandbox_create needs a gated command spec");
	run_init(&r, spec, paths, lb_now_ns());
	return start_detached(&r, paths, id, pid, err);
}
