/*
 * The stdio transport of the Box runtime (§6.2, §7.2): one JSON message per line on stdin and
 * stdout, chunked beyond 16 KiB. The loop never blocks on sandbox work: every action that
 * touches sessions runs in a forked child (fork is safe here: this process has one thread) and
 * hands its reply back through a pipe, so 20 concurrent execs and a __ping are all answered. At
 * most 128 actions are in flight. On stdin EOF or SIGTERM every session this instance owns goes.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lbbox/cleanup.h"
#include "lbbox/util.h"
#include "server/server.h"

#define REAP_INTERVAL_MS     30000 /* §3.5: the reaper's loop */
#define SHUTDOWN_JOB_WAIT_NS (3ull * 1000 * 1000 * 1000)

static void send_reply(struct server *s, json_t *reply)
{
	_cleanup_free_ char *text = lb_rpc_dumps(reply);
	_cleanup_free_ char *framed = NULL;
	size_t len;
	json_decref(reply);
	if (text && lb_rpc_frame(text, strlen(text), &framed, &len, NULL) == 0)
		lb_write_all(s->out_fd, framed, len);
}

static struct fence *fence_find(struct server *s, const char *key)
{
	for (size_t i = 0; i < s->n_fences; i++)
		if (!strcmp(s->fences[i].key, key))
			return &s->fences[i];
	if (s->n_fences == SERVER_MAX_FENCES)
		return NULL;
	struct fence *f = &s->fences[s->n_fences++];
	snprintf(f->key, sizeof(f->key), "%s", key);
	f->generation = -1;
	return f;
}

/* The Workspace namespace of a prefix "ws-<hash>-g<N>". */
static void namespace_of(const struct lb_rpc_context *c, char *out, size_t len)
{
	snprintf(out, len, "%s", c->prefix);
	char *g = strrchr(out, '-');
	if (g)
		*g = '\0';
}

static pid_t start_job(struct server *s, json_t *seq_id, const char *fence, int64_t gen, bool wait,
		       int *fd)
{
	int p[2];
	/* replies are bounded by the busy check; background work must not overflow the table */
	if (s->n_jobs >= sizeof(s->jobs) / sizeof(s->jobs[0]) || pipe2(p, O_CLOEXEC) < 0)
		return -1;
	pid_t pid = fork();
	if (pid != 0) {
		close(p[1]);
		if (pid < 0) {
			close(p[0]);
			return -1;
		}
		struct job *j = &s->jobs[s->n_jobs++];
		*j = (struct job){.pid = pid,
				  .fd = p[0],
				  .seq_id = json_incref(seq_id),
				  .generation = gen,
				  .wait_on_shutdown = wait};
		snprintf(j->fence, sizeof(j->fence), "%s", fence ? fence : "");
		*fd = p[1];
		return pid;
	}
	close(p[0]);
	close(s->in_fd);
	*fd = p[1];
	return 0;
}

/* In the child: write the reply's text to the pipe and end. */
__attribute__((noreturn)) static void finish_job(int fd, json_t *reply)
{
	char *text = reply ? lb_rpc_dumps(reply) : NULL;
	if (text)
		lb_write_all(fd, text, strlen(text));
	_exit(0);
}

/* A higher generation: sessions of the Workspace's older generations go (in the background). */
static void fence_cleanup(struct server *s, const char *ns, const char *prefix)
{
	int fd;
	pid_t pid = start_job(s, NULL, NULL, 0, false, &fd);
	if (pid != 0)
		return;
	struct lb_box_session *v = NULL;
	size_t n = 0;
	size_t nl = strlen(ns), pl = strlen(prefix);
	if (lb_box_session_list(&s->box, &v, &n, NULL) == 0)
		for (size_t i = 0; i < n; i++) {
			const char *id = v[i].session_id;
			if (!strncmp(id, ns, nl) && id[nl] == '-' &&
			    !(strncmp(id, prefix, pl) == 0 && id[pl] == '-'))
				lb_box_session_delete(&s->box, id, NULL);
		}
	lb_box_session_list_free(v, n);
	_exit(0);
}

/* §6.7 checks of the envelope; 0 with ctx filled, 1 legacy (no context), -1 replied. */
static int check_context(struct server *s, json_t *msg, const char *action, json_t *seq_id,
			 struct lb_rpc_context *ctx)
{
	json_t *c = json_object_get(msg, "context");
	struct lb_err *err = NULL;
	if (!c)
		return 1;
	if (lb_rpc_context_parse(c, ctx, &err) < 0) {
		send_reply(s, lb_rpc_reply_err(seq_id, err, "PermissionError"));
		lb_err_free(&err);
		return -1;
	}
	if (s->trusted[0] && strcmp(ctx->instance, s->trusted) != 0) {
		send_reply(s, lb_rpc_reply_error(seq_id, "PermissionError",
						 "Box action context does not match the trusted "
						 "instance"));
		return -1;
	}
	if (!server_is_tenant_action(action))
		return 0;
	char ns[80];
	namespace_of(ctx, ns, sizeof(ns));
	struct fence *f = fence_find(s, ns);
	if (f && ctx->generation < f->generation) {
		send_reply(s, lb_rpc_reply_error(seq_id, "PermissionError",
						 "Stale Box placement generation"));
		return -1;
	}
	if (f && ctx->generation > f->generation) {
		bool had = f->generation >= 0;
		f->generation = ctx->generation;
		if (had)
			fence_cleanup(s, ns, ctx->prefix);
	}
	return 0;
}

static void handle(void *arg, json_t *msg)
{
	struct server *s = arg;
	struct lb_rpc_context ctx;
	if (json_object_get(msg, "code"))
		return; /* a response: the runtime never calls LangBot */
	json_t *seq_id = json_object_get(msg, "seq_id");
	const char *action = json_string_value(json_object_get(msg, "action"));
	json_t *data = json_object_get(msg, "data");
	if (!action)
		return;
	if (!json_is_object(data) && data)
		return send_reply(
		    s, lb_rpc_reply_error(seq_id, "ValueError", "data must be an object"));
	if (s->shutting_down)
		return send_reply(
		    s, lb_rpc_reply_error(seq_id, LB_BOX_ERUNTIME, "Box runtime is shutting down"));
	if (!server_has_action(action)) {
		char text[300];
		snprintf(text, sizeof(text), "Action %s not found", action);
		return send_reply(s, lb_rpc_reply_error(seq_id, "ValueError", text));
	}
	int c = check_context(s, msg, action, seq_id, &ctx);
	if (c < 0)
		return;
	json_t *empty = data ? NULL : json_object();
	json_t *reply = server_inline_action(s, action, data ? data : empty, seq_id);
	if (reply) {
		json_decref(empty);
		return send_reply(s, reply);
	}
	if (s->n_jobs >= LB_RPC_MAX_INFLIGHT) {
		json_decref(empty);
		return send_reply(s, lb_rpc_reply_error(seq_id, NULL,
							"Runtime connection is busy "
							"(max 128 concurrent actions)"));
	}
	char ns[80] = "";
	if (c == 0)
		namespace_of(&ctx, ns, sizeof(ns));
	int fd;
	pid_t pid =
	    start_job(s, seq_id, server_is_tenant_action(action) && c == 0 ? ns : NULL,
		      c == 0 ? ctx.generation : 0, server_action_waits_on_shutdown(action), &fd);
	if (pid == 0)
		finish_job(fd, server_run_action(s, action, data ? data : empty,
						 c == 0 ? &ctx : NULL, seq_id));
	json_decref(empty);
	if (pid < 0)
		send_reply(s, lb_rpc_reply_error(seq_id, LB_BOX_EBOX, "cannot start the action"));
}

static void job_free(struct server *s, size_t i)
{
	struct job *j = &s->jobs[i];
	close(j->fd);
	free(j->buf);
	json_decref(j->seq_id);
	s->jobs[i] = s->jobs[--s->n_jobs];
}

/* The reply of a finished job, unless the Workspace moved on meanwhile (§6.7). */
static void job_done(struct server *s, size_t i)
{
	struct job *j = &s->jobs[i];
	int status;
	while (waitpid(j->pid, &status, 0) < 0 && errno == EINTR)
		;
	if (j->seq_id || j->buf) {
		json_t *reply = j->buf ? json_loadb(j->buf, j->len, 0, NULL) : NULL;
		struct fence *f = j->fence[0] ? fence_find(s, j->fence) : NULL;
		if (f && f->generation > j->generation) {
			json_decref(reply);
			reply = lb_rpc_reply_error(j->seq_id, "PermissionError",
						   "Stale Box placement generation");
		}
		if (!reply && j->seq_id)
			reply = lb_rpc_reply_error(j->seq_id, LB_BOX_EBOX, "the action failed");
		if (reply)
			send_reply(s, reply);
	}
	job_free(s, i);
}

static void job_read(struct server *s, size_t i)
{
	struct job *j = &s->jobs[i];
	if (j->len + 65536 > j->cap) {
		size_t cap = (j->cap + 65536) * 2;
		char *p = realloc(j->buf, cap);
		if (!p)
			return;
		j->buf = p, j->cap = cap;
	}
	ssize_t n = read(j->fd, j->buf + j->len, j->cap - j->len);
	if (n > 0) {
		j->len += (size_t)n;
		return;
	}
	if (n < 0 && errno == EINTR)
		return;
	job_done(s, i);
}

static void background_reap(struct server *s)
{
	int fd;
	pid_t pid = start_job(s, NULL, NULL, 0, false, &fd);
	if (pid != 0)
		return;
	size_t removed;
	lb_box_session_reap(&s->box, 0, &removed, NULL);
	_exit(0);
}

/* Finishes what must finish (creates, deletes), kills the rest, drops every owned session. */
static void shutdown_all(struct server *s)
{
	s->shutting_down = true;
	uint64_t deadline = lb_now_ns() + SHUTDOWN_JOB_WAIT_NS;
	for (size_t i = 0; i < s->n_jobs; i++)
		if (!s->jobs[i].wait_on_shutdown)
			kill(s->jobs[i].pid, SIGKILL);
	while (s->n_jobs) {
		struct pollfd p = {.fd = s->jobs[0].fd, .events = POLLIN};
		uint64_t now = lb_now_ns();
		if (now >= deadline)
			kill(s->jobs[0].pid, SIGKILL);
		if (poll(&p, 1, now >= deadline ? 100 : (int)((deadline - now) / 1000000 + 1)) != 0)
			job_read(s, 0);
	}
	server_drop_owned(s);
}

static int setup_signals(sigset_t *old)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, old);
	signal(SIGPIPE, SIG_IGN);
	return signalfd(-1, &set, SFD_CLOEXEC);
}

int server_run_stdio(struct server *s)
{
	struct lb_rpc_reader r = {0};
	sigset_t old;
	int sigfd = setup_signals(&old);
	uint64_t next_reap = lb_now_ns() + REAP_INTERVAL_MS * 1000000ull;
	bool eof = false;
	while (!eof) {
		struct pollfd p[2 + LB_RPC_MAX_INFLIGHT + 8];
		size_t n = 0;
		p[n++] = (struct pollfd){.fd = s->in_fd, .events = POLLIN};
		p[n++] = (struct pollfd){.fd = sigfd, .events = POLLIN};
		for (size_t i = 0; i < s->n_jobs; i++)
			p[n++] = (struct pollfd){.fd = s->jobs[i].fd, .events = POLLIN};
		uint64_t now = lb_now_ns();
		int timeout = now >= next_reap ? 0 : (int)((next_reap - now) / 1000000 + 1);
		if (poll(p, n, timeout) < 0 && errno != EINTR)
			break;
		if (lb_now_ns() >= next_reap) {
			background_reap(s);
			next_reap = lb_now_ns() + REAP_INTERVAL_MS * 1000000ull;
		}
		for (size_t i = n; i-- > 2;) /* backwards: job_done moves the last job into i */
			if (p[i].revents && i - 2 < s->n_jobs)
				job_read(s, i - 2);
		if (p[1].revents) { /* SIGTERM, SIGINT, SIGHUP: consumed, so it is not delivered */
			struct signalfd_siginfo si;
			(void)!read(sigfd, &si, sizeof(si));
			break;
		}
		if (p[0].revents) {
			char buf[65536];
			ssize_t got = read(s->in_fd, buf, sizeof(buf));
			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0 ||
			    lb_rpc_reader_feed(&r, buf, (size_t)got, handle, s, NULL) < 0)
				eof =
				    true; /* EOF, or a framing violation: the connection is over */
		}
	}
	shutdown_all(s);
	lb_rpc_reader_free(&r);
	close(sigfd);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return 0;
}
