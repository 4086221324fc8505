/*
 * The runtime's event loop: libwebsockets' own, with stdin, the signalfd and the reply pipes
 * adopted beside the HTTP listener (jobs.c). On stdin EOF (stdio mode) or SIGTERM every
 * WebSocket is closed (1001), creates and deletes in flight finish, and every session this
 * instance owns goes.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"
#include "server.h"

#define REAP_INTERVAL_US   (30ll * 1000 * 1000) /* §3.5: the reaper's loop */
#define SHUTDOWN_JOBS_US   (3ll * 1000 * 1000)
#define SHUTDOWN_SOCKET_MS 500

/* ---- stdin, signals, the reaper ---------------------------------------------------------- */

struct stdio_in {
	struct fdwatch w;
	struct lb_rpc_reader r;
	struct peer *peer;
};

static void on_stdio_msg(void *arg, json_t *msg, json_t *seq_id, const struct lb_err *bad)
{
	struct stdio_in *in = arg;
	server_receive(in->w.s, in->peer, msg, seq_id, bad);
}

/* The runtime is to end: why, in one line on stderr (the first reason only). */
static void stop_because(struct server *s, const char *why)
{
	_cleanup_free_ char *text = lb_escape_ctl(why);
	if (!s->stop)
		fprintf(stderr, "lbbox: %s: dropping this runtime's sessions and exiting\n",
			text ? text : why);
	s->stop = true;
}

static int stdio_read(struct fdwatch *w)
{
	_cleanup_err_ struct lb_err *err = NULL;
	struct stdio_in *in = (struct stdio_in *)w;
	char buf[65536], why[512];
	ssize_t got = read(w->fd, buf, sizeof(buf));
	if (got < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	/* EOF, or a framing violation: the connection is over (§6.2), and so is the runtime */
	if (got < 0)
		snprintf(why, sizeof(why), "reading stdin: %s", strerror(errno));
	else if (got == 0)
		snprintf(why, sizeof(why), "stdin closed");
	else if (lb_rpc_reader_feed(&in->r, buf, (size_t)got, on_stdio_msg, in, &err) < 0)
		snprintf(why, sizeof(why), "protocol violation on stdin (%s), connection closed",
			 err ? err->msg : "?");
	else
		return 0;
	stop_because(w->s, why);
	return -1;
}

static void stdio_closed(struct fdwatch *w)
{
	stop_because(w->s, "stdin closed");
	w->s->in_fd = -1;
}

static int signal_read(struct fdwatch *w)
{
	/* SIGTERM, SIGINT, SIGHUP end the runtime; SIGCHLD: children to reap. Consumed here, so
	 * never delivered. */
	struct signalfd_siginfo si;
	char why[64];
	if (read(w->fd, &si, sizeof(si)) != sizeof(si))
		return 0;
	if (si.ssi_signo == SIGCHLD) {
		server_reap_children(w->s);
		return 0;
	}
	snprintf(why, sizeof(why), "SIG%s received", sigabbrev_np((int)si.ssi_signo));
	stop_because(w->s, why);
	return 0;
}

static void reap_tick(lws_sorted_usec_list_t *sul)
{
	struct server *s = lws_container_of(sul, struct server, reap_timer);
	int fd;
	lws_sul_schedule(s->lws, 0, &s->reap_timer, reap_tick, REAP_INTERVAL_US);
	server_uploads_expire(s);
	if (server_job_start(s, NULL, NULL, NULL, NULL, 0, &fd) != 0)
		return;
	size_t removed;
	lb_box_session_reap(&s->rt.box, 0, &removed, NULL);
	lb_sandbox_gc(&s->rt.box.paths, NULL); /* every sandbox (a start examines only a few) */
	_exit(0);
}

static int setup_signals(sigset_t *old)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, old);
	/* the sessions' processes outlive the jobs that start them: they come back to us */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
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

/*
 * The owned sessions go in a job while the loop goes on reaping: a sandbox's processes whose
 * parents die come back to this runtime (its subreaper), and a sandbox's pid 1 ends only once
 * they are reaped, so the runtime must not block while they go.
 */
static void drop_sessions(struct server *s)
{
	int fd;
	pid_t pid = server_job_start(s, NULL, NULL, NULL, NULL, 0, &fd);
	if (pid == 0) {
		lb_box_drop_owned(&s->rt.box);
		_exit(0);
	}
	if (pid < 0) { /* no job: in this process, the sandboxes' pid 1s ending late */
		lb_box_drop_owned(&s->rt.box);
		return;
	}
	while (s->n_jobs)
		lws_service(s->lws, 0);
	server_reap_children(s);
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
	drop_sessions(s);
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
			stop_because(s, "cannot watch stdin");
	}
	/* at once: what a runtime killed before this one left is cleaned without waiting */
	lws_sul_schedule(s->lws, 0, &s->reap_timer, reap_tick, 1);
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
