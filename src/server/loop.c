/*
 * The runtime's event loop. Every action that touches sessions runs in a forked child (fork is
 * safe: this process has one thread) and hands its reply back through a pipe the loop watches,
 * so 20 concurrent execs and a __ping are all answered. The loop is libwebsockets' own: stdin,
 * the signalfd and the reply pipes are adopted as raw descriptors beside the HTTP listener. On
 * stdin EOF (stdio mode) or SIGTERM every WebSocket is closed (1001), creates and deletes in
 * flight finish, and every session this instance owns goes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lbbox/cleanup.h"
#include "lbbox/util.h"
#include "server/server.h"

#define REAP_INTERVAL_US   (30ll * 1000 * 1000) /* §3.5: the reaper's loop */
#define SHUTDOWN_JOBS_US   (3ll * 1000 * 1000)
#define SHUTDOWN_SOCKET_MS 500

int server_watch(struct server *s, struct fdwatch *w, int fd)
{
	lws_sock_file_fd_type u = {.filefd = fd};
	w->s = s;
	w->fd = fd;
	w->wsi =
	    lws_adopt_descriptor_vhost(s->fds_vh, LWS_ADOPT_RAW_FILE_DESC, u, "lbbox-fd", NULL);
	if (!w->wsi) {
		close(fd);
		w->fd = -1;
		return -1;
	}
	lws_set_opaque_user_data(w->wsi, w);
	return 0;
}

/* The owner goes first: lws closes the descriptor later and calls nobody. */
void server_unwatch(struct fdwatch *w)
{
	if (!w->wsi)
		return;
	lws_set_opaque_user_data(w->wsi, NULL);
	lws_set_timeout(w->wsi, PENDING_TIMEOUT_KILLED_BY_PARENT, LWS_TO_KILL_ASYNC);
	w->wsi = NULL;
}

/* Raw descriptors: dispatch to the watch that owns them. */
int server_fd_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
		       size_t len)
{
	struct fdwatch *w = lws_get_opaque_user_data(wsi);
	(void)user, (void)in, (void)len;
	switch (reason) {
	case LWS_CALLBACK_RAW_RX_FILE:
		return w && w->on_read ? w->on_read(w) : -1;
	case LWS_CALLBACK_RAW_WRITEABLE_FILE:
		return w && w->on_writable ? w->on_writable(w) : 0;
	case LWS_CALLBACK_RAW_CLOSE_FILE:
		if (w) {
			w->wsi = NULL;
			if (w->on_close)
				w->on_close(w);
		}
		return 0;
	default:
		return 0;
	}
}

struct fence *server_fence(struct server *s, const char *key, bool create)
{
	for (size_t i = 0; i < s->n_fences; i++)
		if (!strcmp(s->fences[i].key, key))
			return &s->fences[i];
	if (!create || s->n_fences == SERVER_MAX_FENCES)
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

/* ---- jobs -------------------------------------------------------------------------------- */

static void job_free(struct job *j)
{
	struct server *s = j->w.s;
	for (size_t i = 0; i < s->n_jobs; i++)
		if (s->jobs[i] == j) {
			s->jobs[i] = s->jobs[--s->n_jobs];
			break;
		}
	free(j->buf);
	json_decref(j->seq_id);
	free(j);
}

/* The reply of a finished job, unless the Workspace moved on meanwhile (§6.7). */
static int job_read(struct fdwatch *w);

static void job_done(struct fdwatch *w)
{
	struct job *j = (struct job *)w;
	struct server *s = w->s;
	int status;
	job_read(w); /* what is left in the pipe */
	while (waitpid(j->pid, &status, 0) < 0 && errno == EINTR)
		;
	struct peer *p = j->peer ? peer_find(s, j->peer) : NULL;
	if (p)
		p->inflight--;
	if (p && j->seq_id) {
		json_t *reply = j->buf ? json_loadb(j->buf, j->len, 0, NULL) : NULL;
		struct fence *f = j->fence[0] ? server_fence(s, j->fence, false) : NULL;
		if (f && f->generation > j->generation) {
			json_decref(reply);
			reply = lb_rpc_reply_error(j->seq_id, "PermissionError",
						   "Stale Box placement generation");
		}
		if (!reply)
			reply = lb_rpc_reply_error(j->seq_id, LB_BOX_EBOX, "the action failed");
		peer_send(p, reply);
	}
	job_free(j);
}

static int job_read(struct fdwatch *w)
{
	struct job *j = (struct job *)w;
	for (;;) {
		if (j->cap - j->len < 4096) { /* most replies are small: grow as needed */
			size_t cap = j->cap ? j->cap * 2 : 16384;
			char *p = realloc(j->buf, cap);
			if (!p)
				return -1;
			j->buf = p, j->cap = cap;
		}
		ssize_t n = read(w->fd, j->buf + j->len, j->cap - j->len);
		if (n > 0) {
			j->len += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		return n < 0 && errno == EAGAIN ? 0 : -1; /* EOF: the child is done */
	}
}

/* In the child: nothing of the parent's connections may outlive it (a keeper it starts would
 * hold the listener and the clients' sockets open). */
static void close_sockets(void)
{
	_cleanup_closedir_ DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	struct stat st;
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.' && atoi(e->d_name) > 2 && atoi(e->d_name) != dirfd(d) &&
		    fstat(atoi(e->d_name), &st) == 0 && S_ISSOCK(st.st_mode))
			close(atoi(e->d_name));
}

/* fork + reply pipe: the parent's job, or 0 in the child with *fd its write end. */
static pid_t start_job(struct server *s, struct peer *p, json_t *seq_id, const char *action,
		       const char *fence, int64_t gen, int *fd)
{
	int pp[2];
	if (s->n_jobs >= SERVER_MAX_JOBS || pipe2(pp, O_CLOEXEC | O_NONBLOCK) < 0)
		return -1;
	struct job *j = calloc(1, sizeof(*j));
	pid_t pid = j ? fork() : -1;
	if (pid != 0) {
		close(pp[1]);
		if (pid < 0) {
			close(pp[0]);
			free(j);
			return -1;
		}
		*j = (struct job){.w = {.on_read = job_read, .on_close = job_done},
				  .pid = pid,
				  .peer = p ? p->id : 0,
				  .seq_id = json_incref(seq_id),
				  .action = action,
				  .generation = gen,
				  /* background work deletes sessions: let it finish too */
				  .wait_on_shutdown =
				      !action || server_action_waits_on_shutdown(action)};
		snprintf(j->fence, sizeof(j->fence), "%s", fence ? fence : "");
		s->jobs[s->n_jobs++] = j;
		if (p)
			p->inflight++;
		if (server_watch(s, &j->w, pp[0]) < 0) {
			kill(pid, SIGKILL);
			job_done(&j->w);
		}
		return pid;
	}
	close(pp[0]);
	if (s->in_fd >= 0)
		close(s->in_fd);
	close_sockets();
	fcntl(pp[1], F_SETFL, 0);
	*fd = pp[1];
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
	if (start_job(s, NULL, NULL, NULL, NULL, 0, &fd) != 0)
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

/* ---- requests ---------------------------------------------------------------------------- */

/* §6.7 checks of the envelope; 0 with ctx filled, 1 legacy (no context), -1 replied. */
static int check_context(struct server *s, struct peer *p, json_t *msg, const char *action,
			 json_t *seq_id, struct lb_rpc_context *ctx)
{
	json_t *c = json_object_get(msg, "context");
	struct lb_err *err = NULL;
	if (!c)
		return 1;
	if (lb_rpc_context_parse(c, ctx, &err) < 0) {
		peer_send(p, lb_rpc_reply_err(seq_id, err, "PermissionError"));
		lb_err_free(&err);
		return -1;
	}
	if (s->trusted[0] && strcmp(ctx->instance, s->trusted) != 0) {
		peer_send(p, lb_rpc_reply_error(seq_id, "PermissionError",
						"Box action context does not match the trusted "
						"instance"));
		return -1;
	}
	if (!server_is_tenant_action(action))
		return 0;
	char ns[80];
	namespace_of(ctx, ns, sizeof(ns));
	struct fence *f = server_fence(s, ns, true);
	if (!f) { /* never skip the fence: a full table refuses new Workspaces */
		peer_send(p, lb_rpc_reply_error(seq_id, LB_BOX_ECAPACITY,
						"Box placement fence capacity reached"));
		return -1;
	}
	if (ctx->generation < f->generation) {
		peer_send(p, lb_rpc_reply_error(seq_id, "PermissionError",
						"Stale Box placement generation"));
		return -1;
	}
	if (ctx->generation > f->generation) {
		bool had = f->generation >= 0;
		f->generation = ctx->generation;
		if (had)
			fence_cleanup(s, ns, ctx->prefix);
	}
	return 0;
}

static void run_job(struct server *s, struct peer *p, const char *action, json_t *data,
		    json_t *seq_id, const struct lb_rpc_context *ctx)
{
	char ns[80] = "";
	if (ctx)
		namespace_of(ctx, ns, sizeof(ns));
	int fd;
	pid_t pid =
	    start_job(s, p, seq_id, action, server_is_tenant_action(action) && ctx ? ns : NULL,
		      ctx ? ctx->generation : 0, &fd);
	if (pid == 0)
		finish_job(fd, server_run_action(s, action, data, ctx, seq_id));
	if (pid < 0)
		peer_send(p, lb_rpc_reply_error(seq_id, LB_BOX_EBOX, "cannot start the action"));
}

void server_handle(struct server *s, struct peer *p, json_t *msg)
{
	struct lb_rpc_context ctx;
	if (json_object_get(msg, "code"))
		return; /* a response: the runtime never calls LangBot */
	json_t *seq_id = json_object_get(msg, "seq_id");
	const char *action = json_string_value(json_object_get(msg, "action"));
	json_t *data = json_object_get(msg, "data");
	if (!action)
		return;
	if (!json_is_object(data) && data)
		return peer_send(
		    p, lb_rpc_reply_error(seq_id, "ValueError", "data must be an object"));
	if (s->shutting_down)
		return peer_send(
		    p, lb_rpc_reply_error(seq_id, LB_BOX_ERUNTIME, "Box runtime is shutting down"));
	if (!server_has_action(action)) {
		char text[300];
		snprintf(text, sizeof(text), "Action %.250s not found", action);
		return peer_send(p, lb_rpc_reply_error(seq_id, "ValueError", text));
	}
	int c = check_context(s, p, msg, action, seq_id, &ctx);
	if (c < 0)
		return;
	json_t *empty = data ? NULL : json_object();
	json_t *reply = server_inline_action(s, action, data ? data : empty, seq_id);
	if (reply)
		peer_send(p, reply);
	else if (p->inflight >= LB_RPC_MAX_INFLIGHT)
		peer_send(p, lb_rpc_reply_error(seq_id, NULL,
						"Runtime connection is busy "
						"(max 128 concurrent actions)"));
	else
		run_job(s, p, action, data ? data : empty, seq_id, c == 0 ? &ctx : NULL);
	json_decref(empty);
}

/* ---- stdin, signals, the reaper ---------------------------------------------------------- */

struct stdio_in {
	struct fdwatch w;
	struct lb_rpc_reader r;
	struct peer *peer;
};

static void on_stdio_msg(void *arg, json_t *msg)
{
	struct stdio_in *in = arg;
	server_handle(in->w.s, in->peer, msg);
}

static int stdio_read(struct fdwatch *w)
{
	struct stdio_in *in = (struct stdio_in *)w;
	char buf[65536];
	ssize_t got = read(w->fd, buf, sizeof(buf));
	if (got < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	/* EOF, or a framing violation: the connection is over, and so is the runtime */
	if (got <= 0 || lb_rpc_reader_feed(&in->r, buf, (size_t)got, on_stdio_msg, in, NULL) < 0) {
		w->s->stop = true;
		return -1;
	}
	return 0;
}

static void stdio_closed(struct fdwatch *w)
{
	w->s->stop = true;
	w->s->in_fd = -1;
}

static int signal_read(struct fdwatch *w)
{
	struct signalfd_siginfo si; /* SIGTERM, SIGINT, SIGHUP: consumed, so not delivered */
	if (read(w->fd, &si, sizeof(si)) == sizeof(si))
		w->s->stop = true;
	return 0;
}

static void reap_tick(lws_sorted_usec_list_t *sul)
{
	struct server *s = lws_container_of(sul, struct server, reap_timer);
	int fd;
	lws_sul_schedule(s->lws, 0, &s->reap_timer, reap_tick, REAP_INTERVAL_US);
	if (start_job(s, NULL, NULL, NULL, NULL, 0, &fd) != 0)
		return;
	size_t removed;
	lb_box_session_reap(&s->box, 0, &removed, NULL);
	_exit(0);
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
	return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* ---- shutdown ---------------------------------------------------------------------------- */

static void shutdown_deadline(lws_sorted_usec_list_t *sul)
{
	struct server *s = lws_container_of(sul, struct server, reap_timer);
	for (size_t i = 0; i < s->n_jobs; i++)
		kill(s->jobs[i]->pid, SIGKILL);
}

static void wake(lws_sorted_usec_list_t *sul)
{
	(void)sul; /* only ends lws_service()'s wait */
}

static size_t websockets(struct server *s)
{
	size_t n = s->relays;
	for (struct peer *p = s->peers; p; p = p->next)
		n += p->wsi != NULL;
	return n;
}

/* Every WebSocket closed with 1001, what must finish finishes, every owned session goes. */
static void shutdown_all(struct server *s)
{
	s->shutting_down = true;
	for (size_t i = 0; i < s->n_jobs; i++)
		if (!s->jobs[i]->wait_on_shutdown)
			kill(s->jobs[i]->pid, SIGKILL);
	static const char *const ws_protocols[] = {"http", "mcp"};
	for (size_t i = 0; s->http_vh && i < 2; i++) {
		const struct lws_protocols *pr =
		    lws_vhost_name_to_protocol(s->http_vh, ws_protocols[i]);
		if (pr)
			lws_callback_on_writable_all_protocol_vhost(s->http_vh, pr);
	}
	uint64_t until = lb_now_ns() + SHUTDOWN_SOCKET_MS * 1000000ull;
	lws_sul_schedule(s->lws, 0, &s->reap_timer, shutdown_deadline, SHUTDOWN_JOBS_US);
	lws_sul_schedule(s->lws, 0, &s->wake_timer, wake, SHUTDOWN_SOCKET_MS * 1000ll);
	while ((s->n_jobs || websockets(s)) && (s->n_jobs || lb_now_ns() < until))
		lws_service(s->lws, 0);
	lws_sul_cancel(&s->reap_timer);
	lws_sul_cancel(&s->wake_timer);
	server_drop_owned(s);
}

int server_run(struct server *s)
{
	_cleanup_err_ struct lb_err *err = NULL;
	sigset_t old;
	struct fdwatch sig = {.on_read = signal_read};
	struct stdio_in in = {.w = {.on_read = stdio_read, .on_close = stdio_closed}};
	int sigfd = setup_signals(&old), code = 0;
	if (server_http_start(s, &err) < 0) {
		fprintf(stderr, "lbbox: %s\n", err->msg);
		code = 1;
		goto out;
	}
	if (sigfd < 0 || server_watch(s, &sig, sigfd) < 0) {
		fprintf(stderr, "lbbox: cannot watch signals: %s\n", strerror(errno));
		code = 1;
		goto out;
	}
	if (s->in_fd >= 0) {
		/* read only when poll says readable: stdin stays blocking, it may share its open
		 * file with stdout, whose writes must never see EAGAIN */
		in.peer = peer_new(s, NULL);
		if (!in.peer || server_watch(s, &in.w, s->in_fd) < 0)
			s->stop = true;
	}
	lws_sul_schedule(s->lws, 0, &s->reap_timer, reap_tick, REAP_INTERVAL_US);
	while (!s->stop)
		lws_service(s->lws, 0);
	lws_sul_cancel(&s->reap_timer);
	shutdown_all(s);
	server_unwatch(&in.w);
	server_unwatch(&sig);
out:
	if (s->lws)
		lws_context_destroy(s->lws);
	s->lws = NULL;
	while (s->peers)
		peer_free(s->peers);
	json_decref(s->resources);
	lb_rpc_reader_free(&in.r);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return code;
}
