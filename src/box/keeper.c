/*
 * The keeper of one managed process (§3.6), as conmon is for a podman container: a small
 * process, detached from whoever started it, that holds the process's stdin, stdout and stderr.
 * It feeds stderr into the preview, relays stdin/stdout for one attached client at a time over a
 * unix socket (stdout is read only while a client is attached, so an unattached process feels
 * back-pressure as with LangBot), records the exit, and on SIGTERM runs the termination
 * procedure: close stdin, SIGTERM, 5 s, SIGKILL of the process's whole cgroup.
 *
 * A detached run's process (spec->history) is the exception to the back-pressure rule: as
 * podman's conmon, its keeper reads stdout and stderr all the time into a bounded history
 * (proc_log.c), attached client or not, so `lbbox logs` has something to show. Its follower
 * (keeper_follow.c) brings the back-pressure back, to lose nothing: while a chunk is not all
 * sent to it no more is read, and a held process's (spec->hold: a foreground named run) output
 * is not read at all before the follower came.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "box_internal.h"
#include "lbbox/box/text.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/console.h"
#include "lbbox/base/util.h"
#include "lbbox/base/process.h"

struct keeper {
	struct lb_box_proc_info info;
	const char *sdir; /* the session: last_used is bumped on attach, detach, exit */
	const struct lb_box *box;
	char json[LB_PATH_BUF], sock[LB_PATH_BUF];
	struct lb_proc p;
	int in_w, out_r, err_r, lfd, cfd, sigfd;
	int wlfd, wfd; /* proc start -t: the window-size socket and its client (-1: none) */
	struct lb_box_preview preview;
	struct box_log log; /* fd -1 unless history */
	struct box_follower fol;
	bool hold;
	char pend[65536];
	size_t pend_len, pend_off;
	pid_t self;
	uint64_t self_start, kill_at;
	bool dirty;	   /* the preview changed since the record was written */
	uint64_t saved_at; /* stderr bursts write the record at most every SAVE_INTERVAL_NS */
};

#define SAVE_INTERVAL_NS (100ull * 1000 * 1000)

static void save(struct keeper *k)
{
	box_proc_record_write(k->json, &k->info, k->self, k->self_start, NULL);
	k->dirty = false;
	k->saved_at = lb_now_ns();
}

/* ms until a pending preview must be written (-1 = none pending); writes it when due. */
static int flush_due(struct keeper *k)
{
	if (!k->dirty)
		return -1;
	uint64_t now = lb_now_ns(), due = k->saved_at + SAVE_INTERVAL_NS;
	if (now >= due) {
		save(k);
		return -1;
	}
	return (int)((due - now) / 1000000 + 1);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static char *command_line(const struct lb_box_proc_spec *spec)
{
	size_t n = 0;
	for (char **a = spec->args; a && *a; a++)
		n++;
	_cleanup_free_ char **words = calloc(n + 2, sizeof(char *));
	_cleanup_free_ char *cwd = lb_box_shell_quote(spec->cwd);
	if (!words || !cwd)
		return NULL;
	words[0] = spec->command;
	for (size_t i = 0; i < n; i++)
		words[i + 1] = spec->args[i];
	_cleanup_free_ char *cmd = lb_box_shell_join(words);
	char *s = NULL;
	if (!cmd || asprintf(&s, "mkdir -p %s && cd %s && exec %s", cwd, cwd, cmd) < 0)
		return NULL;
	return s;
}

/* The attach socket, and a history process's follower's. */
static int listen_sockets(struct keeper *k, const struct lb_box_proc_spec *spec,
			  struct lb_err **err)
{
	char path[LB_PATH_BUF + 8];
	if (box_keeper_listen(k->sock, &k->lfd, err) < 0)
		return -1;
	if (!spec->history)
		return 0;
	box_proc_follow_path(k->sock, path, sizeof(path));
	return box_keeper_listen(path, &k->fol.lfd, err);
}

static int listen_all(struct keeper *k, const struct lb_box_proc_spec *spec, struct lb_err **err)
{
	char path[LB_PATH_BUF + 8];
	if (listen_sockets(k, spec, err) < 0)
		return -1;
	if (!spec->tty)
		return 0;
	box_proc_tty_path(k->sock, path, sizeof(path));
	return box_keeper_listen(path, &k->wlfd, err);
}

static void unlink_sockets(struct keeper *k)
{
	char path[LB_PATH_BUF + 8];
	unlink(k->sock);
	box_proc_follow_path(k->sock, path, sizeof(path));
	unlink(path);
	box_proc_tty_path(k->sock, path, sizeof(path));
	unlink(path);
}

/* command and args as an argv; the strings are spec's. */
static char **direct_argv(const struct lb_box_proc_spec *spec)
{
	size_t n = 0;
	for (char **a = spec->args; a && *a; a++)
		n++;
	char **argv = calloc(n + 2, sizeof(char *));
	if (!argv)
		return NULL;
	argv[0] = spec->command;
	for (size_t i = 0; i < n; i++)
		argv[i + 1] = spec->args[i];
	return argv;
}

/* proc start -t: a pty of the sandbox's devpts is the process's stdio (console socket, as an
 * exec -t); the keeper keeps its master as both stdin and stdout. stderr is the same terminal. */
static int spawn_tty(struct keeper *k, struct lb_sandbox *sb, struct lb_exec_opts *o,
		     struct lb_err **err)
{
	int sv[2], setup_exit, master = -1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return lb_err_set(err, errno, "socketpair");
	o->console_sock = sv[1];
	int r = lb_sandbox_spawn(sb, o, &k->p, &setup_exit, err);
	close(sv[1]);
	/* sent before its execve, which spawn waited for */
	if (r == 0 && lb_console_recv_master(sv[0], false, &master) < 0) {
		lb_proc_kill(&k->p, NULL);
		lb_proc_wait(&k->p);
		lb_proc_release(&k->p);
		r = lb_err_set(err, EIO, "the managed process's terminal did not come");
	}
	close(sv[0]);
	if (r < 0)
		return -1;
	k->out_r = master;
	k->in_w = fcntl(master, F_DUPFD_CLOEXEC, 0); /* closed alone to stop it (begin_stop) */
	fcntl(master, F_SETFL, O_NONBLOCK);
	return 0;
}

static int spawn_pipes(struct keeper *k, struct lb_sandbox *sb, struct lb_exec_opts *o,
		       struct lb_err **err)
{
	int in[2], out[2], errp[2], setup_exit;
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0)
		return lb_err_set(err, errno, "pipe");
	o->fds[0] = in[0], o->fds[1] = out[1], o->fds[2] = errp[1];
	int r = lb_sandbox_spawn(sb, o, &k->p, &setup_exit, err);
	close(in[0]), close(out[1]), close(errp[1]);
	k->in_w = in[1], k->out_r = out[0], k->err_r = errp[0];
	fcntl(k->in_w, F_SETFL, O_NONBLOCK);
	return r;
}

static int start_process(struct keeper *k, struct lb_box *box, const struct lb_box_session *s,
			 const struct lb_box_proc_spec *spec, struct lb_err **err)
{
	char cg[24] = "proc-";
	struct lb_sandbox *sb = NULL;
	_cleanup_free_ char *line = spec->direct ? NULL : command_line(spec);
	char *shell[] = {"/bin/sh", "-lc", line, NULL}; /* absolute: see box/exec.c */
	_cleanup_free_ char **direct = spec->direct ? direct_argv(spec) : NULL;
	char **argv = spec->direct ? direct : shell;
	if (!(spec->direct ? (void *)direct : (void *)line))
		return lb_err_set(err, ENOMEM, "managed process");
	if (lb_random_hex(cg + 5, 12, err) < 0 || !(k->info.cgroup = strdup(cg)) ||
	    lb_sandbox_open(&box->paths, s->sandbox, &sb, err) < 0)
		return -1;
	struct lb_exec_opts o = {
	    .argv = argv,
	    .env = spec->env,
	    .cwd = spec->direct ? spec->cwd : "/",
	    .fds = {-1, -1, -1},
	    .cgroup = cg,
	    .fsize = box_quota_fsize(&s->spec),
	    /* <= the session's (lb_box_proc_start): no overflow */
	    .memory_bytes = spec->memory_mb > 0 ? (uint64_t)spec->memory_mb << 20 : 0,
	    .start_deadline = lb_now_ns() + BOX_PROC_START_TIMEOUT_SEC * 1000000000ull};
	int r = spec->tty ? spawn_tty(k, sb, &o, err) : spawn_pipes(k, sb, &o, err);
	lb_sandbox_close(sb);
	if (r == 0) { /* `lbbox kill` signals it directly, checking it is still this process */
		k->info.pid = k->p.pid;
		k->info.pid_start = lb_proc_starttime(k->p.pid);
	}
	return r;
}

/* A window size from the attached client (8 bytes, struct winsize) onto the pty. */
static void on_winsize(struct keeper *k)
{
	struct winsize ws;
	if (read(k->wfd, &ws, sizeof(ws)) != (ssize_t)sizeof(ws)) {
		close_fd(&k->wfd);
		return;
	}
	if (k->out_r >= 0)
		ioctl(k->out_r, TIOCSWINSZ, &ws);
}

static int block_signals(struct keeper *k, struct lb_err **err)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGPIPE);
	sigprocmask(SIG_BLOCK, &set, NULL);
	k->sigfd = signalfd(-1, &set, SFD_CLOEXEC);
	return k->sigfd < 0 ? lb_err_set(err, errno, "signalfd") : 0;
}

static void begin_stop(struct keeper *k)
{
	if (k->kill_at)
		return;
	close_fd(&k->in_w);
	syscall(SYS_pidfd_send_signal, k->p.pidfd, SIGTERM, NULL, 0);
	k->kill_at = lb_now_ns() + BOX_PROC_STOP_GRACE_SEC * 1000000000ull;
}

static void feed_preview(struct keeper *k, const char *buf, size_t n)
{
	_cleanup_free_ char *text = NULL;
	if (lb_box_preview_add(&k->preview, buf, n, NULL) == 0 &&
	    lb_box_preview_text(&k->preview, &text, NULL) == 0) {
		free(k->info.stderr_preview);
		k->info.stderr_preview = LB_TAKE_PTR(text);
		k->dirty = true;
	}
}

/* Output may be read: not held for a follower to come, nor while it takes a chunk. */
static bool may_read(const struct keeper *k)
{
	return !(k->hold && !k->fol.came) && !box_follower_busy(&k->fol);
}

static void on_stderr(struct keeper *k)
{
	char buf[65536];
	if (!may_read(k))
		return;
	ssize_t n = read(k->err_r, buf, sizeof(buf));
	if (n < 0 && errno == EAGAIN)
		return;
	if (n <= 0)
		close_fd(&k->err_r);
	else {
		box_log_write(&k->log, 2, buf, (size_t)n);
		box_follower_send(&k->fol, 2, buf, (size_t)n);
		feed_preview(k, buf, (size_t)n);
	}
}

static void detach(struct keeper *k)
{
	close_fd(&k->cfd);
	k->pend_len = k->pend_off = 0;
	k->info.attached = false;
	save(k);
	box_touch(k->sdir);
}

static void on_client(struct keeper *k)
{
	ssize_t n = read(k->cfd, k->pend, sizeof(k->pend));
	if (n <= 0) {
		detach(k);
		return;
	}
	k->pend_len = (size_t)n;
	k->pend_off = 0;
}

static void on_stdin_writable(struct keeper *k)
{
	ssize_t n = write(k->in_w, k->pend + k->pend_off, k->pend_len - k->pend_off);
	if (n < 0 && errno != EAGAIN) {
		k->pend_len = k->pend_off = 0; /* the process closed its stdin */
		return;
	}
	if (n > 0 && (k->pend_off += (size_t)n) == k->pend_len)
		k->pend_len = k->pend_off = 0;
}

static void on_stdout(struct keeper *k)
{
	char buf[65536];
	if (!may_read(k))
		return;
	ssize_t n = read(k->out_r, buf, sizeof(buf));
	if (n <= 0) {
		if (n == 0 || errno != EAGAIN)
			close_fd(&k->out_r);
		return;
	}
	box_log_write(&k->log, 1, buf, (size_t)n);
	box_follower_send(&k->fol, 1, buf, (size_t)n);
	if (k->cfd >= 0 && lb_write_all(k->cfd, buf, (size_t)n) < 0)
		detach(k);
}

static void on_accept(struct keeper *k)
{
	k->cfd = accept4(k->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (k->cfd < 0)
		return;
	k->info.attached = true;
	save(k);
	box_touch(k->sdir);
}

/* One round of the loop; false once the process has exited. */
static bool step(struct keeper *k)
{
	enum {
		KP_PID,
		KP_SIG,
		KP_ERR,
		KP_LISTEN,
		KP_CLIENT,
		KP_OUT,
		KP_IN,
		KP_FLISTEN,
		KP_FOL,
		KP_WLISTEN,
		KP_WIN,
		KP_N
	};
	bool rd = may_read(k);
	struct pollfd pfd[KP_N] = {
	    [KP_PID] = {.fd = k->p.pidfd, .events = POLLIN},
	    [KP_SIG] = {.fd = k->sigfd, .events = POLLIN},
	    [KP_ERR] = {.fd = rd ? k->err_r : -1, .events = POLLIN},
	    [KP_LISTEN] = {.fd = k->cfd < 0 ? k->lfd : -1, .events = POLLIN},
	    [KP_CLIENT] = {.fd = k->cfd >= 0 && !k->pend_len ? k->cfd : -1, .events = POLLIN},
	    [KP_OUT] = {.fd = rd && (k->cfd >= 0 || k->info.history) ? k->out_r : -1,
			.events = POLLIN},
	    [KP_IN] = {.fd = k->pend_len ? k->in_w : -1, .events = POLLOUT},
	    [KP_FLISTEN] = {.fd = k->fol.fd < 0 ? k->fol.lfd : -1, .events = POLLIN},
	    [KP_FOL] = {.fd = k->fol.fd,
			.events = POLLIN | (box_follower_busy(&k->fol) ? POLLOUT : 0)},
	    [KP_WLISTEN] = {.fd = k->wfd < 0 ? k->wlfd : -1, .events = POLLIN},
	    [KP_WIN] = {.fd = k->wfd, .events = POLLIN},
	};
	int timeout = flush_due(k);
	if (k->kill_at) {
		uint64_t now = lb_now_ns();
		if (now >= k->kill_at)
			lb_proc_kill(&k->p, NULL);
		int kt = now >= k->kill_at ? 100 : (int)((k->kill_at - now) / 1000000 + 1);
		timeout = timeout < 0 || kt < timeout ? kt : timeout;
	}
	if (poll(pfd, KP_N, timeout) < 0)
		return true;
	struct signalfd_siginfo si;
	if (pfd[KP_SIG].revents && read(k->sigfd, &si, sizeof(si)) == sizeof(si) &&
	    si.ssi_signo != SIGPIPE)
		begin_stop(k);
	if (pfd[KP_ERR].revents)
		on_stderr(k);
	if (pfd[KP_OUT].revents)
		on_stdout(k);
	if (pfd[KP_IN].revents)
		on_stdin_writable(k);
	if (pfd[KP_CLIENT].revents)
		on_client(k);
	if (pfd[KP_LISTEN].revents)
		on_accept(k);
	if (pfd[KP_FOL].revents)
		box_follower_event(&k->fol, pfd[KP_FOL].revents);
	if (pfd[KP_FLISTEN].revents)
		box_follower_accept(&k->fol);
	if (pfd[KP_WLISTEN].revents)
		k->wfd = accept4(k->wlfd, NULL, NULL, SOCK_CLOEXEC);
	if (pfd[KP_WIN].revents)
		on_winsize(k);
	return !pfd[KP_PID].revents;
}

/* Its entry in RUNROOT/box/running (index.c), made before the process runs, while the starter
 * still holds the capacity lock (lb_box_proc_start): a concurrent start counts it. */
static int index_self(struct keeper *k, struct lb_err **err)
{
	return box_running_add(k->box, box_sdir_key(k->sdir), k->info.process_id, k->self,
			       k->self_start, err);
}

/* Its own entry only, never a successor's (a keeper not yet known removes nothing). */
static void unindex_self(struct keeper *k)
{
	if (k->self > 0 && k->info.process_id)
		box_running_remove(k->box, box_sdir_key(k->sdir), k->info.process_id, k->self,
				   k->self_start);
}

/* The process exited: the rest of its output, its status, and nothing of it left behind. */
static void finish(struct keeper *k)
{
	int status = lb_proc_wait(&k->p);
	struct pollfd fl = {.fd = k->fol.fd < 0 ? k->fol.lfd : -1, .events = POLLIN};
	if (poll(&fl, 1, 0) > 0) /* a follower that came just now still gets it all */
		box_follower_accept(&k->fol);
	k->hold = false; /* no one is waited for any more */
	if (k->err_r >= 0)
		fcntl(k->err_r, F_SETFL, O_NONBLOCK);
	for (int i = 0; i < 64 && k->err_r >= 0; i++) { /* what it wrote before exiting */
		box_follower_drain(&k->fol, k->sigfd);
		on_stderr(k);
	}
	while ((k->cfd >= 0 || k->info.history) && k->out_r >= 0 &&
	       fcntl(k->out_r, F_SETFL, O_NONBLOCK) == 0) {
		char buf[65536];
		box_follower_drain(&k->fol, k->sigfd);
		ssize_t n = read(k->out_r, buf, sizeof(buf));
		if (n <= 0)
			break;
		box_log_write(&k->log, 1, buf, (size_t)n);
		box_follower_send(&k->fol, 1, buf, (size_t)n);
		if (k->cfd >= 0 && lb_write_all(k->cfd, buf, (size_t)n) < 0)
			close_fd(&k->cfd);
	}
	box_follower_drain(&k->fol, k->sigfd);
	lb_proc_release(&k->p);
	k->info.running = false;
	k->info.attached = false;
	k->info.exited_ns = lb_realtime_ns();
	k->info.has_exit_code = true;
	k->info.exit_code = lb_exit_code_of(status);
	/* no longer counted before the record says exited: never counted while it says so */
	unindex_self(k);
	save(k);
	/* for the retention (index_exited.c); a detached run's history stays until its run goes */
	if (!k->info.history)
		box_exited_add(k->box, box_sdir_key(k->sdir), k->info.process_id, k->info.exited_ns,
			       NULL);
	box_follower_close(&k->fol); /* its end: the exit is recorded */
	unlink_sockets(k);
	box_touch(k->sdir);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int info_init(struct keeper *k, const struct lb_box_session *s,
		     const struct lb_box_proc_spec *spec, struct lb_err **err)
{
	size_t n = 0;
	for (char **e = spec->env; e && *e; e++)
		n++;
	k->info.env_keys = calloc(n + 1, sizeof(char *));
	for (size_t i = 0; k->info.env_keys && i < n; i++)
		k->info.env_keys[i] = strndup(spec->env[i], strcspn(spec->env[i], "="));
	if (k->info.env_keys)
		qsort(k->info.env_keys, n, sizeof(char *), cmp_str);
	n = 0;
	for (char **a = spec->args; a && *a; a++)
		n++;
	k->info.args = calloc(n + 1, sizeof(char *));
	for (size_t i = 0; k->info.args && i < n; i++)
		k->info.args[i] = strdup(spec->args[i]);
	k->info.session_id = strdup(s->session_id);
	k->info.process_id = strdup(spec->process_id);
	k->info.command = strdup(spec->command);
	k->info.cwd = strdup(spec->cwd);
	k->info.stderr_preview = strdup("");
	k->info.history = spec->history;
	k->info.running = true;
	k->info.started_ns = lb_realtime_ns();
	k->self = getpid();
	k->self_start = lb_proc_starttime(k->self);
	if (!k->info.env_keys || !k->info.args || !k->info.session_id || !k->info.process_id ||
	    !k->info.command || !k->info.cwd || !k->info.stderr_preview)
		return lb_err_set(err, ENOMEM, "managed process");
	return 0;
}

__attribute__((noreturn)) static void keeper_main(struct lb_box *box,
						  const struct lb_box_session *s, const char *sdir,
						  const struct lb_box_proc_spec *spec, int ready)
{
	struct keeper k = {.in_w = -1,
			   .out_r = -1,
			   .err_r = -1,
			   .lfd = -1,
			   .cfd = -1,
			   .sigfd = -1,
			   .wlfd = -1,
			   .wfd = -1,
			   .log = {.fd = -1},
			   .fol = {.lfd = -1, .fd = -1},
			   .hold = spec->history && spec->hold};
	struct lb_err *err = NULL;
	char procs[LB_PATH_BUF];
	/* nothing of the caller stays open in a long-lived process (its locks, a server's sockets)
	 */
	if (ready > 3)
		syscall(SYS_close_range, 3U, (unsigned)ready - 1, 0U);
	syscall(SYS_close_range, (unsigned)ready + 1, ~0U, 0U);
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (int fd = 0; fd < 3 && null >= 0; fd++)
		dup2(null, fd);
	snprintf(procs, sizeof(procs), "%s/procs", sdir);
	k.sdir = sdir;
	k.box = box;
	(void)!chdir("/"); /* keep no mount busy */
	umask(077);
	box_proc_paths(sdir, spec->process_id, k.json, k.sock, sizeof(k.json));
	/* mkdir, not mkdir -p: a session deleted meanwhile must not be re-created by us */
	if ((mkdir(procs, 0700) < 0 && errno != EEXIST && lb_err_set(&err, errno, "%s", procs)) ||
	    block_signals(&k, &err) < 0 || info_init(&k, s, spec, &err) < 0 ||
	    index_self(&k, &err) < 0 || (spec->history && box_log_open(&k.log, k.json, &err) < 0) ||
	    listen_all(&k, spec, &err) < 0 || start_process(&k, box, s, spec, &err) < 0) {
		unlink_sockets(&k);
		unindex_self(&k);
		lb_child_fail(ready, 1, err);
	}
	save(&k);
	close(ready); /* EOF: started */
	while (step(&k))
		;
	finish(&k);
	_exit(0);
}

int box_keeper_spawn(struct lb_box *box, const struct lb_box_session *s, const char *sdir,
		     const struct lb_box_proc_spec *spec, struct lb_err **err)
{
	int ready[2], status;
	struct lb_child_msg msg;
	if (pipe2(ready, O_CLOEXEC) < 0)
		return lb_err_set(err, errno, "pipe");
	pid_t pid = fork();
	if (pid == 0) {
		close(ready[0]);
		setsid();
		/* double fork: the keeper is nobody's child, it must outlive the caller */
		pid_t k = fork();
		if (k == 0)
			keeper_main(box, s, sdir, spec, ready[1]);
		_exit(k < 0 ? 1 : 0);
	}
	close(ready[1]);
	if (pid < 0) {
		close(ready[0]);
		return lb_err_set(err, errno, "fork");
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	int failed = lb_child_read_fail(ready[0], &msg, "managed process did not start");
	close(ready[0]);
	if (!failed && WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	return lb_err_set(err, 0, "%s", failed ? msg.msg : "managed process did not start");
}
