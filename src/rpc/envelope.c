/*
 * A request's envelope (§6.4, §6.7): what is answered, what is ignored, and the tenancy checks
 * -- the trusted instance, and the generation fence per Workspace, whose advance makes the older
 * generations' sessions go.
 */
#include <stdio.h>
#include <string.h>

#include "lbbox/rpc/rpc.h"
#include "actions.h"

bool lb_rpc_name_valid(const char *v, const char *extra, size_t max)
{
	size_t n = strlen(v);
	if (n == 0 || n > max)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = v[i];
		bool alnum =
		    (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		if (!alnum && (i == 0 || !strchr(extra, c)))
			return false;
	}
	return true;
}

struct lb_rpc_fence *lb_rpc_fence(struct lb_rpc_runtime *rt, const char *ns, bool create)
{
	for (size_t i = 0; i < rt->n_fences; i++)
		if (!strcmp(rt->fences[i].key, ns))
			return &rt->fences[i];
	if (!create || rt->n_fences == LB_RPC_MAX_FENCES)
		return NULL;
	struct lb_rpc_fence *f = &rt->fences[rt->n_fences++];
	snprintf(f->key, sizeof(f->key), "%s", ns);
	f->generation = -1;
	return f;
}

void lb_rpc_namespace_of(const struct lb_rpc_context *c, char *out, size_t len)
{
	snprintf(out, len, "%s", c->prefix);
	char *g = strrchr(out, '-');
	if (g)
		*g = '\0';
}

void lb_rpc_fence_cleanup(struct lb_rpc_runtime *rt, const char *ns, const char *prefix)
{
	struct lb_box_session *v = NULL;
	size_t n = 0, nl = strlen(ns), pl = strlen(prefix);
	if (lb_box_session_list(&rt->box, &v, &n, NULL) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		const char *id = v[i].session_id;
		if (!strncmp(id, ns, nl) && id[nl] == '-' &&
		    !(strncmp(id, prefix, pl) == 0 && id[pl] == '-'))
			lb_box_session_delete(&rt->box, id, NULL);
	}
	lb_box_session_list_free(v, n);
}

/* §6.7: the context's instance must be the trusted one; a tenant action passes the fence of its
 * Workspace (a higher generation advances it). NULL, or the error reply. */
static json_t *check_context(struct lb_rpc_runtime *rt, json_t *c, struct lb_rpc_request *req)
{
	struct lb_err *err = NULL;
	if (lb_rpc_context_parse(c, &req->ctx, &err) < 0) {
		json_t *r = lb_rpc_reply_err(req->seq_id, err, "PermissionError");
		lb_err_free(&err);
		return r;
	}
	req->has_ctx = true;
	if (rt->trusted[0] && strcmp(req->ctx.instance, rt->trusted) != 0)
		return lb_rpc_reply_error(req->seq_id, "PermissionError",
					  "Box action context does not match the trusted instance");
	if (!rpc_is_tenant_action(req->action))
		return NULL;
	lb_rpc_namespace_of(&req->ctx, req->fence, sizeof(req->fence));
	struct lb_rpc_fence *f = lb_rpc_fence(rt, req->fence, true);
	if (!f) /* never skip the fence: a full table refuses new Workspaces */
		return lb_rpc_reply_error(req->seq_id, LB_BOX_ECAPACITY,
					  "Box placement fence capacity reached");
	if (req->ctx.generation < f->generation)
		return lb_rpc_reply_error(req->seq_id, "PermissionError",
					  "Stale Box placement generation");
	if (req->ctx.generation > f->generation) {
		req->fence_advanced = f->generation >= 0;
		f->generation = req->ctx.generation;
	}
	return NULL;
}

/* The checks before the context, in LangBot's order; NULL when they pass. */
static json_t *check_message(json_t *msg, bool shutting_down, const char *action, json_t *seq_id)
{
	struct lb_err *err = NULL;
	json_t *data = json_object_get(msg, "data"), *r;
	if (lb_rpc_check_nul(msg, &err) < 0) {
		r = lb_rpc_reply_err(seq_id, err, LB_BOX_EVALIDATION);
		lb_err_free(&err);
		return r;
	}
	if (!action)
		return lb_rpc_reply_error(seq_id, "ValueError", "action must be a string");
	if (data && !json_is_object(data))
		return lb_rpc_reply_error(seq_id, "ValueError", "data must be an object");
	if (shutting_down)
		return lb_rpc_reply_error(seq_id, LB_BOX_ERUNTIME, "Box runtime is shutting down");
	if (rpc_has_action(action))
		return NULL;
	/* the whole name: lb_rpc_reply_error cuts the text on a character boundary */
	lb_err_box(&err, "ValueError", "Action %s not found", action);
	r = lb_rpc_reply_err(seq_id, err, "ValueError");
	lb_err_free(&err);
	return r;
}

enum lb_rpc_route lb_rpc_request_open(struct lb_rpc_runtime *rt, json_t *msg, bool shutting_down,
				      struct lb_rpc_request *req, json_t **reply,
				      const char **ignored)
{
	json_t *c = json_object_get(msg, "context"), *data = json_object_get(msg, "data");
	*req = (struct lb_rpc_request){.seq_id = json_object_get(msg, "seq_id"), .upload_fd = -1};
	*reply = NULL;
	*ignored = NULL;
	if (json_object_get(msg, "code"))
		return LB_RPC_DONE; /* a response: the runtime never calls LangBot */
	if (!json_object_get(msg, "action"))
		return *ignored = "neither an action nor a response", LB_RPC_DONE;
	req->action = json_string_value(json_object_get(msg, "action"));
	if ((*reply = check_message(msg, shutting_down, req->action, req->seq_id)) ||
	    (c && (*reply = check_context(rt, c, req))))
		return LB_RPC_DONE;
	req->data = data ? json_incref(data) : json_object();
	if (!strcmp(req->action, "__file_chunk"))
		return LB_RPC_UPLOAD;
	if (rpc_is_inline_action(req->action))
		return LB_RPC_INLINE;
	return rpc_is_quick_action(req->action) ? LB_RPC_QUICK : LB_RPC_JOB;
}

void lb_rpc_request_close(struct lb_rpc_request *req)
{
	json_decref(req->data);
	req->data = NULL;
}
