/*
 * A request from a peer (§6.4, §6.7): answered inline when it touches no session, otherwise
 * run in a job. The tenancy envelope is checked here: the trusted instance, and the generation
 * fence per Workspace, whose advance removes the older generations' sessions in the background.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lbbox/cleanup.h"
#include "lbbox/util.h"
#include "server/server.h"

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
void server_namespace_of(const struct lb_rpc_context *c, char *out, size_t len)
{
	snprintf(out, len, "%s", c->prefix);
	char *g = strrchr(out, '-');
	if (g)
		*g = '\0';
}

/* A higher generation: sessions of the Workspace's older generations go (in the background). */
static void fence_cleanup(struct server *s, const char *ns, const char *prefix)
{
	int fd;
	if (server_job_start(s, NULL, NULL, NULL, NULL, 0, &fd) != 0)
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
	server_namespace_of(ctx, ns, sizeof(ns));
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
		server_namespace_of(ctx, ns, sizeof(ns));
	int fd;
	pid_t pid = server_job_start(s, p, seq_id, action,
				     server_is_tenant_action(action) && ctx ? ns : NULL,
				     ctx ? ctx->generation : 0, &fd);
	if (pid == 0)
		server_job_finish(fd, server_run_action(s, action, data, ctx, seq_id));
	if (pid < 0)
		peer_send(p, lb_rpc_reply_error(seq_id, LB_BOX_EBOX, "cannot start the action"));
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
	struct lb_rpc_context ctx;
	struct lb_err *err = NULL;
	if (json_object_get(msg, "code"))
		return; /* a response: the runtime never calls LangBot */
	json_t *seq_id = json_object_get(msg, "seq_id");
	json_t *jaction = json_object_get(msg, "action");
	const char *action = json_string_value(jaction);
	json_t *data = json_object_get(msg, "data");
	if (!jaction)
		return ignored(p, "neither an action nor a response");
	if (lb_rpc_check_nul(msg, &err) < 0) {
		peer_send(p, lb_rpc_reply_err(seq_id, err, LB_BOX_EVALIDATION));
		return lb_err_free(&err);
	}
	if (!action)
		return peer_send(
		    p, lb_rpc_reply_error(seq_id, "ValueError", "action must be a string"));
	if (!json_is_object(data) && data)
		return peer_send(
		    p, lb_rpc_reply_error(seq_id, "ValueError", "data must be an object"));
	if (s->shutting_down)
		return peer_send(
		    p, lb_rpc_reply_error(seq_id, LB_BOX_ERUNTIME, "Box runtime is shutting down"));
	if (!server_has_action(action)) {
		/* the whole name: lb_rpc_reply_error cuts the text on a character boundary */
		lb_err_box(&err, "ValueError", "Action %s not found", action);
		peer_send(p, lb_rpc_reply_err(seq_id, err, "ValueError"));
		return lb_err_free(&err);
	}
	int c = check_context(s, p, msg, action, seq_id, &ctx);
	if (c < 0)
		return;
	json_t *empty = data ? NULL : json_object();
	json_t *reply = server_inline_action(s, p, action, data ? data : empty, seq_id);
	if (reply)
		peer_send(p, reply);
	else if (inflight(s, p) >= LB_RPC_MAX_INFLIGHT)
		peer_send(p, lb_rpc_reply_error(seq_id, NULL,
						"Runtime connection is busy "
						"(max 128 concurrent actions)"));
	else
		run_job(s, p, action, data ? data : empty, seq_id, c == 0 ? &ctx : NULL);
	json_decref(empty);
}
