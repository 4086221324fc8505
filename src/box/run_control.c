/*
 * What `lbbox kill`, `stop`, `rm` and `exec` do to a detached run. Signals go to main itself,
 * through a pidfd checked against the start time its keeper recorded (never a recycled pid);
 * the hard kill is by main's cgroup, so what it forked goes too.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "box_internal.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/process.h"
#include "lbbox/base/tty.h"
#include "lbbox/base/util.h"
#include "lbbox/box/run.h"

static int not_running(const char *name, struct lb_err **err)
{
	return lb_err_set(err, 0, "run %s is not running", name);
}

/* main's pidfd, -1 when it is gone (or its pid is someone else's now). */
static int main_pidfd(const struct lb_box_proc_info *m)
{
	if (!m->running || m->pid <= 0 || !m->pid_start)
		return -1;
	int fd = (int)syscall(SYS_pidfd_open, m->pid, 0);
	if (fd >= 0 && lb_proc_starttime(m->pid) != m->pid_start) {
		close(fd);
		return -1;
	}
	return fd;
}

int lb_box_run_kill(struct lb_box *box, const char *name, int sig, struct lb_err **err)
{
	struct lb_box_run r;
	if (lb_box_run_get(box, name, &r, err) < 0)
		return -1;
	int fd = r.has_main ? main_pidfd(&r.main) : -1;
	lb_box_run_free(&r);
	if (fd < 0)
		return not_running(name, err);
	int rc = (int)syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0);
	int e = errno;
	close(fd);
	return rc < 0 && e != ESRCH ? lb_err_set(err, e, "signal run %s", name) : 0;
}

/* The keeper's pidfd, from main's record (-1 when it has ended). */
static int keeper_pidfd(struct lb_box *box, const char *name)
{
	char sdir[LB_PATH_BUF], json[LB_PATH_BUF];
	struct lb_box_proc_info info;
	pid_t keeper;
	uint64_t kstart;
	int fd = -1;
	box_session_dir(box, name, sdir, sizeof(sdir));
	box_proc_paths(sdir, LB_BOX_RUN_PROC, json, NULL, sizeof(json));
	if (box_proc_read(json, &info, &keeper, &kstart, NULL) < 0)
		return -1;
	bool alive = info.running && box_keeper_alive(keeper, kstart, &fd);
	lb_box_proc_info_free(&info);
	if (!alive && fd >= 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Its whole cgroup, then the keeper's end (it records the exit). */
static void kill_hard(struct lb_box *box, const char *name, int kfd)
{
	struct lb_box_session s;
	struct lb_box_run r;
	if (box_record_read(box, name, &s, NULL) < 0)
		return;
	if (lb_box_run_get(box, name, &r, NULL) == 0) {
		if (r.has_main && r.main.running && r.main.cgroup[0])
			lb_sandbox_kill_child(&box->paths, s.sandbox, r.main.cgroup, NULL);
		lb_box_run_free(&r);
	}
	lb_box_session_free(&s);
	struct pollfd p = {.fd = kfd, .events = POLLIN};
	poll(&p, 1, 10000);
}

int lb_box_run_stop(struct lb_box *box, const char *name, unsigned grace_sec, struct lb_err **err)
{
	struct lb_box_run r;
	if (lb_box_run_get(box, name, &r, err) < 0)
		return -1;
	lb_box_run_free(&r);
	_cleanup_close_ int kfd = keeper_pidfd(box, name);
	if (kfd < 0)
		return 0; /* exited already */
	if (grace_sec > 0 && lb_box_run_kill(box, name, SIGTERM, NULL) == 0) {
		struct pollfd p = {.fd = kfd, .events = POLLIN};
		if (poll(&p, 1, (int)grace_sec * 1000) > 0)
			return 0; /* the keeper recorded main's exit and ended */
	}
	kill_hard(box, name, kfd);
	return 0;
}

int lb_box_run_remove(struct lb_box *box, const char *name, bool force, struct lb_err **err)
{
	struct lb_box_run r;
	if (lb_box_run_get(box, name, &r, err) < 0)
		return -1;
	bool running = r.has_main && r.main.running;
	lb_box_run_free(&r);
	if (running && !force)
		return lb_err_set(err, 0,
				  "run %s is running: stop it first (lbbox stop %s) or use rm -f",
				  name, name);
	if (running)
		lb_box_run_stop(box, name, 0, NULL);
	return lb_box_session_delete(box, name, err);
}

static int spawn_wait(struct lb_sandbox *sb, struct lb_exec_opts *o, struct lb_tty *tty, int *code,
		      struct lb_err **err)
{
	struct lb_proc p;
	int setup_exit;
	if (tty) {
		o->console_sock = tty->child_sock;
		o->console_size = lb_tty_size(tty);
	}
	if (lb_sandbox_spawn(sb, o, &p, &setup_exit, err) < 0) {
		*code = setup_exit;
		return -1;
	}
	if (tty) { /* the relay until it exits; without a signalfd it still relays */
		lb_tty_catch_signals(tty, p.pid, NULL);
		lb_wait_exit(p.pidfd, tty->pfd, LB_TTY_NFDS, 0, lb_tty_on_ready, tty);
	}
	*code = lb_exit_code_of(lb_proc_wait(&p));
	lb_proc_release(&p); /* what it left running in its cgroup goes with it */
	return 0;
}

int lb_box_run_exec(struct lb_box *box, const char *name, const struct lb_box_run_exec *x,
		    int *code, struct lb_err **err)
{
	struct lb_box_run r;
	struct lb_box_session s;
	struct lb_sandbox *sb = NULL;
	char cg[24] = "exec-";
	*code = LB_EXIT_SETUP;
	if (lb_box_run_get(box, name, &r, err) < 0)
		return -1;
	bool running = r.has_main && r.main.running;
	int rc = running ? 0 : not_running(name, err);
	if (rc == 0)
		rc = box_record_read(box, name, &s, err);
	if (rc == 0) {
		struct lb_exec_opts o = {.argv = x->argv,
					 .env = x->env,
					 .cwd = x->cwd ? x->cwd : r.workdir,
					 .fds = {x->fds[0], x->fds[1], x->fds[2]},
					 .cgroup = cg,
					 .fsize = box_quota_fsize(&s.spec)};
		rc = lb_random_hex(cg + 5, 12, err) < 0 ||
			     lb_sandbox_open(&box->paths, s.sandbox, &sb, err) < 0
			 ? -1
			 : spawn_wait(sb, &o, x->tty, code, err);
		if (sb)
			lb_sandbox_close(sb);
		lb_box_session_free(&s);
	}
	lb_box_run_free(&r);
	return rc;
}
