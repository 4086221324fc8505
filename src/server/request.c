/*
 * A request from a peer: its envelope checked by the protocol (lb_rpc_request_open), then
 * answered inline when it touches no session, or run in a forked job. A fence's advance sends
 * the older generations' sessions away in a background job.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"
#include "server.h"

/* A higher generation: sessions of the Workspace's older generations go (in the background). */
static void fence_cleanup(struct server *s, const struct lb_rpc_request *req)
{
	int fd;
	if (server_job_start(s, NULL, NULL, NULL, NULL, 0, &fd) != 0)
		return;
	lb_rpc_fence_cleanup(&s->rt, req->fence, req->ctx.prefix);
	_exit(0);
}

static void run_job(struct server *s, struct peer *p, const struct lb_rpc_request *req)
{
	int fd;
	pid_t pid =
	    server_job_start(s, p, req->seq_id, req->action, req->fence[0] ? req->fence : NULL,
			     req->has_ctx ? req->ctx.generation : 0, &fd);
	if (pid == 0)
		server_job_finish(fd, lb_rpc_run_action(&s->rt, req));
	if (pid < 0)
		peer_send(p,
			  lb_rpc_reply_error(req->seq_id, LB_BOX_EBOX, "cannot start the action"));
}

/* The peer's actions still running (§6.4: at most 128 per connection). */
static size_t inflight(const struct server *s, const struct peer *p)
{
	size_t n = 0;
	for (size_t i = 0; i < s->n_jobs; i++)
		n += s->jobs[i]->peer == p->id;
	return n;
}

/* A message that is not answered (no seq_id to answer to, or not a request): one line. */
static void ignored(const struct peer *p, const char *why)
{
	_cleanup_free_ char *text = lb_escape_ctl(why);
	if (p->wsi)
		fprintf(stderr, "lbbox: ignored a message from /rpc/ws connection %llu: %s\n",
			(unsigned long long)p->id, text ? text : "?");
	else
		fprintf(stderr, "lbbox: ignored a message on stdin: %s\n", text ? text : "?");
}

void server_receive(struct server *s, struct peer *p, json_t *msg, json_t *seq_id,
		    const struct lb_err *bad)
{
	if (msg)
		server_handle(s, p, msg);
	else if (seq_id) /* LangBot would have read it: answered, not left to time out */
		peer_send(p, lb_rpc_reply_err(seq_id, bad, "ValueError"));
	else
		ignored(p, bad && bad->msg ? bad->msg : "undecodable");
}

void server_handle(struct server *s, struct peer *p, json_t *msg)
{
	struct lb_rpc_request req;
	json_t *reply;
	const char *why;
	enum lb_rpc_route route =
	    lb_rpc_request_open(&s->rt, msg, s->shutting_down, &req, &reply, &why);
	if (req.fence_advanced)
		fence_cleanup(s, &req);
	switch (route) {
	case LB_RPC_DONE:
		if (reply)
			peer_send(p, reply);
		else if (why)
			ignored(p, why);
		break;
	case LB_RPC_INLINE:
		peer_send(p, lb_rpc_inline_action(&s->rt, &req));
		break;
	case LB_RPC_QUICK:
		peer_send(p, lb_rpc_run_action(&s->rt, &req));
		break;
	case LB_RPC_UPLOAD:
		peer_send(p, server_file_chunk(s, p, req.data, req.seq_id));
		break;
	case LB_RPC_JOB:
		if (inflight(s, p) >= LB_RPC_MAX_INFLIGHT)
			peer_send(p, lb_rpc_reply_error(req.seq_id, NULL,
							"Runtime connection is busy "
							"(max 128 concurrent actions)"));
		else {
			/* the zip skill actions read the caller's own upload, handed to the job */
			if (lb_rpc_action_reads_upload(req.action))
				req.upload_fd = server_upload_take(p, req.data);
			run_job(s, p, &req);
			if (req.upload_fd >= 0)
				close(req.upload_fd);
		}
		break;
	}
	lb_rpc_request_close(&req);
}
