/*
 * The loop's descriptors and the actions' processes. Every descriptor the loop watches besides
 * the HTTP side (stdin, the signalfd, reply pipes, keeper sockets) is an lws raw file with a
 * struct fdwatch as its opaque data. Every action that touches sessions runs in a forked child
 * (fork is safe: this process has one thread) and hands its reply back through a pipe, so 20
 * concurrent execs and a __ping are all answered; the reply goes to the peer named by id.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"
#include "server.h"

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

static void job_free(struct job *j)
{
	struct server *s = j->w.s;
	for (size_t i = 0; i < s->n_jobs; i++)
		if (s->jobs[i] == j) {
			s->jobs[i] = s->jobs[--s->n_jobs];
			break;
		}
	sbuf_free(&j->reply);
	json_decref(j->seq_id);
	free(j);
}

/* The reply of a finished job, unless the Workspace moved on meanwhile (§6.7). */
static int job_read(struct fdwatch *w);

static void job_done(struct fdwatch *w)
{
	struct job *j = (struct job *)w;
	struct server *s = w->s;
	job_read(w); /* what is left in the pipe */
	/* the reply is complete: not waiting for the job's exit (its memory's teardown) to send it;
	 * one still exiting is reaped with the next SIGCHLD (server_reap_children) */
	if (!j->reaped)
		waitpid(j->pid, NULL, WNOHANG);
	struct peer *p = j->peer ? peer_find(s, j->peer) : NULL;
	if (p && j->seq_id) {
		json_t *reply = j->reply.len ? json_loadb(j->reply.p, j->reply.len, 0, NULL) : NULL;
		struct lb_rpc_fence *f = j->fence[0] ? lb_rpc_fence(&s->rt, j->fence, false) : NULL;
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
	char buf[65536];
	for (;;) {
		ssize_t n = read(w->fd, buf, sizeof(buf));
		if (n > 0) {
			if (sbuf_add(&j->reply, buf, (size_t)n) < 0)
				return -1;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		return n < 0 && errno == EAGAIN ? 0 : -1; /* EOF: the child is done */
	}
}

void server_reap_children(struct server *s)
{
	pid_t pid;
	while ((pid = waitpid(-1, NULL, WNOHANG)) > 0)
		for (size_t i = 0; i < s->n_jobs; i++)
			if (s->jobs[i]->pid == pid)
				s->jobs[i]->reaped = true;
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
pid_t server_job_start(struct server *s, struct peer *p, json_t *seq_id, const char *action,
		       const char *fence, int64_t gen, int *fd)
{
	int pp[2];
	if (s->n_jobs >= SERVER_MAX_JOBS || pipe2(pp, O_CLOEXEC | O_NONBLOCK) < 0)
		return -1;
	struct job *j = calloc(1, sizeof(*j));
	pid_t parent = getpid();
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
				      !action || lb_rpc_action_waits_on_shutdown(action)};
		snprintf(j->fence, sizeof(j->fence), "%s", fence ? fence : "");
		s->jobs[s->n_jobs++] = j;
		if (server_watch(s, &j->w, pp[0]) < 0) {
			kill(pid, SIGKILL);
			job_done(&j->w);
		}
		return pid;
	}
	/* a job dies with its runtime (it holds the runtime's instance lock, and could answer no
	 * one): what it left half done is the next runtime's reaper's, as an orphan's */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
	/* SIGCHLD is the runtime's signalfd's, not the job's */
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_UNBLOCK, &chld, NULL);
	close(pp[0]);
	if (s->in_fd >= 0)
		close(s->in_fd);
	close_sockets();
	lb_box_forked(&s->rt.box);
	fcntl(pp[1], F_SETFL, 0);
	*fd = pp[1];
	return 0;
}

/* In the child: write the reply's text to the pipe and end. */
void server_job_finish(int fd, json_t *reply)
{
	char *text = reply ? lb_rpc_dumps(reply) : NULL;
	if (text)
		lb_write_all(fd, text, strlen(text));
	/* the reply's end for the runtime now, not once _exit has torn our memory down */
	close(fd);
	_exit(0);
}
