/*
 * The hooks of a container's creation and start (runtime-spec config.md, "POSIX-platform
 * Hooks"), placed on the engine's hook points (struct lb_hooks): prestart and createRuntime run
 * here, in lbbox-runc, while the container's pid 1 waits with its mounts built; createContainer
 * in the container's namespaces before pivot_root, and startContainer inside the container once
 * start opened the gate, both run by the engine with the command's rights. A failure of any of
 * them ends the container and the life cycle goes on at poststop.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/json_util.h"
#include "lbbox/base/process.h"
#include "lbbox/base/util.h"
#include "lbbox/oci/oci.h"
#include "oci_internal.h"

void lb_oci_run_poststop(struct lb_oci_state *st)
{
	st->status = LB_OCI_STOPPED;
	_cleanup_json_ json_t *state = lb_oci_state_json(st);
	if (state)
		lb_oci_hooks_run(st->hooks, "poststop", state, NULL); /* runc: warnings only */
}

static int hooks_in_runtime(void *ctx, pid_t pid, struct lb_err **err)
{
	struct lb_oci_hooks_plan *b = ctx;
	b->began = true;
	b->st->pid = pid;
	b->st->status = LB_OCI_CREATING;
	_cleanup_json_ json_t *state = lb_oci_state_json(b->st);
	if (!state)
		return lb_err_set(err, ENOMEM, "hook state");
	if (lb_oci_hooks_run(b->st->hooks, "prestart", state, err) < 0 ||
	    lb_oci_hooks_run(b->st->hooks, "createRuntime", state, err) < 0)
		return -1;
	return 0;
}

/* In the container's pid 1's child (a copy of this process). */
static int hooks_in_container(void *ctx, enum lb_hook_point point, pid_t pid, struct lb_err **err)
{
	struct lb_oci_hooks_plan *b = ctx;
	bool mounted = point == LB_HOOK_MOUNTED;
	b->st->pid = pid;
	b->st->status = mounted ? LB_OCI_CREATING : LB_OCI_CREATED;
	_cleanup_json_ json_t *state = lb_oci_state_json(b->st);
	if (!state)
		return lb_err_set(err, ENOMEM, "hook state");
	return lb_oci_hooks_run(b->st->hooks, mounted ? "createContainer" : "startContainer", state,
				err);
}

int lb_oci_plan_hooks(const char *dir, struct lb_oci_config *cfg, struct lb_oci_hooks_plan *b,
		      struct lb_err **err)
{
	json_t *h = cfg->hooks;
	static const char *const kinds[] = {"prestart", "createRuntime", "createContainer",
					    "startContainer"};
	bool any = false;
	for (size_t i = 0; i < 4; i++)
		any = any || lb_oci_hooks_has(h, kinds[i]);
	if (!any)
		return 0;
	b->h = (struct lb_hooks){.parent = hooks_in_runtime, .ctx = b};
	if (lb_oci_hooks_has(h, "createContainer") || lb_oci_hooks_has(h, "startContainer"))
		b->h.child = hooks_in_container;
	b->h.mounted_timeout_s = lb_oci_hooks_timeout(h, "createContainer");
	b->h.started_timeout_s = lb_oci_hooks_timeout(h, "startContainer");
	if (lb_oci_hooks_has(h, "startContainer")) {
		snprintf(b->report, sizeof(b->report), "%s/started", dir);
		if (mkfifo(b->report, 0600) < 0)
			return lb_err_set(err, errno, "mkfifo %s", b->report);
		b->h.start_report = b->report;
	}
	cfg->spec.hooks = &b->h;
	return 0;
}

/* pid 1's report once its startContainer hooks ran (the "started" fifo), or its end. pid 1
 * bounds them itself (their timeouts + LB_HOOKS_MARGIN_S); this wait is bounded too, a margin
 * later, so start never hangs on a container, whatever runs in it. */
int lb_oci_await_started(int rfd, int pidfd, unsigned timeout_s, struct lb_err **err)
{
	struct lb_child_msg msg;
	struct pollfd p[2] = {{.fd = rfd, .events = POLLIN}, {.fd = pidfd, .events = POLLIN}};
	unsigned limit = timeout_s + 2 * LB_HOOKS_MARGIN_S;
	uint64_t deadline = lb_now_ns() + (uint64_t)limit * 1000000000ULL;
	for (;;) {
		uint64_t now = lb_now_ns();
		if (now >= deadline)
			return lb_err_set(err, 0, "startContainer hooks: no report after %u s",
					  limit);
		if (poll(p, 2, (int)((deadline - now) / 1000000 + 1)) < 0 && errno != EINTR)
			return lb_err_set(err, errno, "wait for the startContainer hooks");
		/* one write of less than PIPE_BUF: all of it or nothing */
		ssize_t n = read(rfd, &msg, sizeof(msg));
		if (n == (ssize_t)sizeof(msg)) {
			msg.msg[sizeof(msg.msg) - 1] = '\0';
			return msg.exit_code ? lb_err_set(err, 0, "%s", msg.msg) : 0;
		}
		/* end of file: pid 1, the one writer, closed the fifo without a word (it writes
		 * before it closes), so it is exiting */
		if (n >= 0 || p[1].revents)
			return lb_err_set(err, 0,
					  "the container's pid 1 exited before its command");
		if (errno != EAGAIN && errno != EINTR)
			return lb_err_set(err, errno, "read the startContainer report");
	}
}

/* With startContainer hooks: the report fifo and a pidfd on pid 1, both taken before the gate
 * opens (pid 1 may report and exit at once; the fifo keeps the report while we hold it). */
int lb_oci_watch_start(const char *dir, const struct lb_oci_state *st, int *rfd, int *pidfd,
		       struct lb_err **err)
{
	char report[LB_PATH_BUF + 16];
	snprintf(report, sizeof(report), "%s/started", dir);
	*rfd = open(report, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (*rfd < 0)
		return lb_err_set(err, errno, "open %s", report);
	*pidfd = (int)syscall(SYS_pidfd_open, st->pid, 0);
	if (*pidfd < 0 || lb_proc_starttime(st->pid) != st->pid_start)
		return lb_err_set(err, 0, "container %s is not running", st->id);
	return 0;
}
