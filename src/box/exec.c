/*
 * exec in a session (§3.4, §4.1): sh -lc "mkdir -p W && cd W && CMD" joined into the session's
 * sandbox in its own child cgroup, stdout and stderr captured apart (LangBot's caps and text
 * rules), a deadline after which the exec's whole process tree is killed and the session
 * dropped. Execs of one session run one at a time (its exec.lock).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "box_internal.h"
#include "lbbox/box/text.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/tty.h"
#include "lbbox/base/util.h"

struct capture {
	int fd[2]; /* read ends: stdout, stderr */
	struct lb_box_capture out[2];
	const struct lb_box_exec_io *io; /* NULL: LangBot's exec */
	struct box_pump in;		 /* io's stdin into the command */
	uint64_t passed[2];		 /* bytes of stdout, stderr passed to io */
	struct pollfd pfd[3];		 /* stdout, stderr, the pump */
};

static void capture_close(struct capture *c)
{
	for (int i = 0; i < 2; i++) {
		if (c->fd[i] >= 0)
			close(c->fd[i]);
		c->fd[i] = -1;
		lb_box_capture_free(&c->out[i]);
	}
	box_pump_close(&c->in);
}

/* Beyond this a command does not fit one execve argument (MAX_ARG_STRLEN is 128 KiB). */
#define INLINE_CMD_MAX (64 * 1024)

/* sh -lc "mkdir -p W && cd W && CMD", with mkdir run only when cd cannot (a fork, and an exec
 * where mkdir is not built in, spared when W exists; the same outcome and messages otherwise); a
 * long CMD is sourced from fd 3 (a memfd) instead. */
static char *shell_command(const char *workdir, const char *cmd, int *fd3)
{
	_cleanup_free_ char *w = lb_box_shell_quote(workdir);
	char *s = NULL;
	*fd3 = 0;
	if (strlen(cmd) > INLINE_CMD_MAX) {
		int fd = memfd_create("lbbox-cmd", MFD_CLOEXEC);
		if (fd < 0 || lb_write_all(fd, cmd, strlen(cmd)) < 0) {
			if (fd >= 0)
				close(fd);
			return NULL;
		}
		*fd3 = fd;
		cmd = ". /proc/self/fd/3";
	}
	if (!w || asprintf(&s, "{ cd %s 2>/dev/null || { mkdir -p %s && cd %s; }; } && %s", w, w, w,
			   cmd) < 0)
		return NULL;
	return s;
}

/* Output for LangBot's result, or passed on to io as it comes; false once io's reader is gone. */
static bool keep(struct capture *c, int i, const char *buf, size_t n)
{
	int to = !c->io ? -1 : i ? c->io->err_fd : c->io->out_fd;
	if (to < 0)
		return lb_box_capture_add(&c->out[i], buf, n, NULL), true;
	return box_pass_output(to, buf, n, &c->passed[i], c->io->out_limit);
}

/* Reads what is there: 1 = got data, 0 = nothing more for now, -1 = EOF (fd closed; also when
 * no one reads it any more: the command then sees EPIPE, as in a shell pipeline). */
static int drain(struct capture *c, int i)
{
	char buf[65536];
	ssize_t n = read(c->fd[i], buf, sizeof(buf));
	if (n > 0 && keep(c, i, buf, (size_t)n))
		return 1;
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	close(c->fd[i]);
	c->fd[i] = -1;
	return -1;
}

static void on_output(void *ctx, struct pollfd *fd)
{
	struct capture *c = ctx;
	long i = fd - c->pfd;
	if (i == 2) {
		box_pump_step(&c->in);
		box_pump_arm(&c->in, fd);
	} else if (drain(c, (int)i) < 0) {
		fd->fd = -1;
	}
}

/* Until the command exits or the deadline passes; then what is already in the pipes (a
 * background process may keep them open: no waiting for EOF). With a pty its relay is served
 * (signals to lbbox go to the command); the caller drains it. */
static bool wait_command(struct lb_proc *p, struct capture *c, uint64_t deadline)
{
	struct lb_tty *t = c->io ? c->io->tty : NULL;
	if (t) { /* without the signals (no signalfd) the relay still works */
		lb_tty_catch_signals(t, p->pid, NULL);
		return lb_wait_exit(p->pidfd, t->pfd, LB_TTY_NFDS, deadline, lb_tty_on_ready, t);
	}
	c->pfd[0] = (struct pollfd){.fd = c->fd[0]};
	c->pfd[1] = (struct pollfd){.fd = c->fd[1]};
	box_pump_arm(&c->in, &c->pfd[2]);
	size_t n = c->pfd[2].fd >= 0 ? 3 : 2;
	if (!lb_wait_exit(p->pidfd, c->pfd, n, deadline, on_output, c))
		return false;
	for (int i = 0; i < 2; i++)
		while (c->fd[i] >= 0 && drain(c, i) > 0)
			;
	return true;
}

/* Why the command could not start, as its stderr: LangBot's text, or a line on io's stderr. */
static void setup_failed(struct capture *c, const char *msg)
{
	struct sigaction sigpipe;
	if (!c->io || c->io->err_fd < 0) {
		keep(c, 1, msg, strlen(msg));
		return;
	}
	box_sigpipe_ignore(&sigpipe);
	if (keep(c, 1, msg, strlen(msg)))
		keep(c, 1, "\n", 1);
	box_sigpipe_restore(&sigpipe);
}

/* The command's stdin (-1: /dev/null), stdout and stderr into child; our ends into c. None
 * with a pty: the command's stdio is its slave. */
static int make_pipes(struct capture *c, int child[3], struct lb_err **err)
{
	if (c->io && c->io->tty)
		return 0;
	for (int i = 0; i < 2; i++) {
		int p[2];
		if (pipe2(p, O_CLOEXEC) < 0) {
			if (i == 1) /* the first pipe's read end goes with capture_close */
				close(child[1]);
			return lb_err_set(err, errno, "pipe");
		}
		c->fd[i] = p[0];
		child[i + 1] = p[1];
		fcntl(p[0], F_SETFL, O_NONBLOCK);
	}
	if (box_pump_open(&c->in, c->io ? c->io->in_fd : -1, &child[0], err) < 0) {
		close(child[1]), close(child[2]);
		return -1;
	}
	return 0;
}

static void close_child_ends(int child[3])
{
	for (int i = 0; i < 3; i++)
		if (child[i] >= 0)
			close(child[i]);
}

#define BUSY_FILE "busy-cgroups"

static void remember_busy(const char *sdir, const char *cg)
{
	char path[LB_PATH_BUF], line[32];
	snprintf(path, sizeof(path), "%s/" BUSY_FILE, sdir);
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	snprintf(line, sizeof(line), "%s\n", cg);
	lb_write_all(fd, line, strlen(line));
	close(fd);
}

/* Exec cgroups left busy earlier and empty now are removed; the busy ones stay listed. */
static void sweep_busy(struct lb_box *box, const char *sdir, const char *sandbox)
{
	char path[LB_PATH_BUF];
	_cleanup_free_ char *list = NULL;
	snprintf(path, sizeof(path), "%s/" BUSY_FILE, sdir);
	if (lb_read_file(path, 1 << 16, &list, NULL, NULL) < 0)
		return;
	unlink(path);
	char *save = NULL;
	for (char *name = strtok_r(list, "\n", &save); name; name = strtok_r(NULL, "\n", &save))
		if (!lb_sandbox_remove_child_if_empty(&box->paths, sandbox, name))
			remember_busy(sdir, name);
}

struct exec_run {
	struct lb_box *box;
	const char *id;
	const char *sdir;
	const struct lb_box_session *s;
	const struct lb_box_exec_req *req;
	struct lb_box_exec_result *res;
};

/* The command ran (or could not start): fill the result from its status and output. */
static int finish(struct exec_run *x, struct capture *c, int code, struct lb_err **err)
{
	x->res->has_exit_code = !x->res->timed_out;
	x->res->exit_code = code;
	if (lb_box_capture_text(&c->out[0], &x->res->out, err) < 0 ||
	    lb_box_capture_text(&c->out[1], &x->res->err, err) < 0)
		return -1;
	if (x->res->timed_out && !x->res->err[0]) {
		free(x->res->err);
		if (asprintf(&x->res->err, "Command timed out after %lld seconds.",
			     (long long)x->req->timeout_sec) < 0)
			x->res->err = NULL;
	}
	return x->res->err ? 0 : lb_err_set(err, ENOMEM, "exec result");
}

static int run(struct exec_run *x, struct lb_sandbox *sb, struct lb_err **err)
{
	char cg[24] = "exec-";
	struct capture c = {.fd = {-1, -1}, .io = x->req->io, .in = {.src = -1, .dst = -1}};
	int child[3] = {-1, -1, -1}, setup_exit;
	const char *wd = x->req->workdir ? x->req->workdir : x->s->spec.mount_path;
	int fd3;
	_cleanup_free_ char *script = shell_command(wd, x->req->cmd, &fd3);
	/* only its cleanup reads it (clang 14 would call it unused) */
	__attribute__((unused)) _cleanup_close_ int script_fd = fd3 > 0 ? fd3 : -1;
	/* an absolute shell: a PATH given with the exec (or a writable dir on it) cannot substitute
	 * it */
	char *argv[] = {"/bin/sh", "-lc", script, NULL};
	struct lb_proc p;
	if (!script || lb_random_hex(cg + 5, 12, err) < 0 || make_pipes(&c, child, err) < 0) {
		capture_close(&c);
		return script ? -1 : lb_err_set(err, ENOMEM, "exec");
	}
	uint64_t start = lb_now_ns();
	uint64_t deadline = start + (uint64_t)x->req->timeout_sec * 1000000000ull;
	struct lb_exec_opts o = {.argv = argv,
				 .env = x->req->env,
				 .cwd = "/",
				 .fds = {child[0], child[1], child[2]},
				 .cgroup = cg,
				 .fsize = x->req->fsize_limit ? x->req->fsize_limit
							      : box_quota_fsize(&x->s->spec),
				 .fd3 = fd3,
				 .start_deadline = deadline};
	if (c.io && c.io->tty) {
		o.console_sock = c.io->tty->child_sock;
		o.console_size = lb_tty_size(c.io->tty);
	}
	int r = lb_sandbox_spawn(sb, &o, &p, &setup_exit, err);
	close_child_ends(child);
	if (r < 0) {
		/* as `docker exec` reports a missing shell: a completed result, not an RPC error; a
		 * command stopped before its execve until the deadline timed out like any other */
		int code = setup_exit;
		x->res->timed_out = (*err)->errnum == ETIMEDOUT;
		if (!x->res->timed_out)
			setup_failed(&c, (*err)->msg);
		lb_err_free(err);
		x->res->duration_ms = (lb_now_ns() - start) / 1000000;
		r = finish(x, &c, code, err);
		capture_close(&c);
		return r;
	}
	struct sigaction sigpipe;
	if (c.io)
		box_sigpipe_ignore(&sigpipe);
	x->res->timed_out = !wait_command(&p, &c, deadline);
	if (c.io)
		box_sigpipe_restore(&sigpipe);
	if (x->res->timed_out)
		lb_proc_kill(&p, NULL);
	int status = lb_proc_wait(&p);
	x->res->duration_ms = (lb_now_ns() - start) / 1000000;
	/* background processes of a finished exec keep running, as with docker exec; their cgroup
	 * is removed by a later exec once they are gone */
	if (!x->res->timed_out) { /* else release kills what is left */
		if (!lb_cgroup_remove_if_empty(p.cg))
			remember_busy(x->sdir, cg);
		p.cg = NULL;
	}
	lb_proc_release(&p);
	r = finish(x, &c, lb_exit_code_of(status), err);
	capture_close(&c);
	return r;
}

/* exec.lock of a session that still exists (not a stale one of a deleted namesake). */
static int lock_session(struct lb_box *box, const char *id, const char *sdir, int *fd,
			struct lb_err **err)
{
	char path[LB_PATH_BUF], del[LB_PATH_BUF];
	struct stat a, b;
	snprintf(path, sizeof(path), "%s/exec.lock", sdir);
	snprintf(del, sizeof(del), "%s/deleting.json", sdir);
	if (access(sdir, F_OK) < 0)
		return lb_err_box(err, LB_BOX_ENOTFOUND, "session %s not found", id);
	if (box_flock(sdir, "exec.lock", LOCK_EX, false, fd, err) < 0)
		return lb_err_reclass(err, LB_BOX_ENOTFOUND, "session %s not found", id);
	if (fstat(*fd, &a) < 0 || stat(path, &b) < 0 || a.st_ino != b.st_ino ||
	    access(del, F_OK) == 0) {
		close(*fd);
		*fd = -1;
		return lb_err_box(err, LB_BOX_ENOTFOUND, "session %s is being deleted", id);
	}
	return 0;
}

/* The timed-out session, unless it was deleted and re-created meanwhile (another sandbox). */
static int drop_if_same(struct lb_box *box, const char *id, const char *sandbox,
			struct lb_err **err)
{
	_cleanup_close_ int glock = -1;
	struct lb_box_session cur;
	if (box_global_lock(box, &glock, err) < 0)
		return -1;
	if (box_record_read(box, id, &cur, NULL) < 0)
		return 0;
	bool same = !strcmp(cur.sandbox, sandbox);
	lb_box_session_free(&cur);
	return same ? box_session_drop_unlocking(box, id, &glock, err) : 0;
}

int lb_box_exec(struct lb_box *box, const char *session_id, const struct lb_box_exec_req *req,
		struct lb_box_exec_result *res, struct lb_err **err)
{
	char sdir[LB_PATH_BUF];
	_cleanup_close_ int lock = -1;
	struct lb_box_session s;
	struct lb_sandbox *sb = NULL;
	memset(res, 0, sizeof(*res));
	if (!req->cmd || !req->cmd[0])
		return lb_err_box(err, LB_BOX_EVALIDATION, "cmd must not be empty");
	if (req->timeout_sec <= 0)
		return lb_err_box(err, LB_BOX_EVALIDATION, "timeout_sec must be greater than 0");
	if (req->timeout_sec > LB_BOX_MAX_TIMEOUT_SEC) /* a deadline in ns must not overflow */
		return lb_err_box(err, LB_BOX_EVALIDATION, "timeout_sec must be at most %lld",
				  LB_BOX_MAX_TIMEOUT_SEC);
	box_session_dir(box, session_id, sdir, sizeof(sdir));
	if (lock_session(box, session_id, sdir, &lock, err) < 0 ||
	    box_record_read(box, session_id, &s, err) < 0)
		return -1;
	struct exec_run x = {
	    .box = box, .id = session_id, .sdir = sdir, .s = &s, .req = req, .res = res};
	sweep_busy(box, sdir, s.sandbox);
	int r = lb_sandbox_open(&box->paths, s.sandbox, &sb, err);
	if (r < 0)
		lb_err_reclass(err, LB_BOX_EBOX, "session %s is not running", session_id);
	else
		r = run(&x, sb, err);
	lb_sandbox_close(sb);
	char sandbox[13];
	memcpy(sandbox, s.sandbox, sizeof(sandbox));
	lb_box_session_free(&s);
	box_touch(sdir);
	if (r == 0 && res->timed_out) {
		/* LangBot drops a timed-out session and waits for it before replying */
		close(lock);
		lock = -1;
		r = drop_if_same(box, session_id, sandbox, err);
	}
	if (r < 0)
		lb_box_exec_result_free(res);
	return r;
}

void lb_box_exec_result_free(struct lb_box_exec_result *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}
