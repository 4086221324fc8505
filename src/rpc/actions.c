/*
 * LangBot's Box actions (§6.6) on the box layer. Tenant actions run with the caller's context:
 * session ids become physical ones (§6.7) on the way in, and every "session_id" in the reply is
 * mapped back on the way out. Errors carry LangBot's classes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/json_util.h"
#include "lbbox/rpc/rpc.h"
#include "lbbox/sandbox/net.h"
#include "actions.h"

typedef int (*action_fn)(struct lb_rpc_runtime *rt, json_t *data, const struct lb_rpc_context *ctx,
			 json_t **out, struct lb_err **err);

static int key_error(const char *key, struct lb_err **err)
{
	return lb_err_box(err, "KeyError", "'%s'", key);
}

/* data[key] as a physical session id (verbatim without a context: the legacy protocol). */
static int physical(json_t *data, const char *key, const struct lb_rpc_context *ctx, char **out,
		    struct lb_err **err)
{
	json_t *v = json_object_get(data, key);
	if (!v)
		return key_error(key, err);
	const char *id = json_string_value(v);
	if (!id)
		return lb_err_box(err, LB_BOX_EVALIDATION, "%s must be a string", key);
	if (lb_box_check_id(id, key, err) < 0)
		return -1;
	if (!ctx)
		return (*out = strdup(id)) ? 0 : lb_err_set(err, ENOMEM, "session id");
	return lb_rpc_physical_id(ctx, id, out, err);
}

/* A BoxSpec request with its session id made physical. */
static int parse_spec(json_t *data, const struct lb_rpc_context *ctx, struct lb_box_spec *bs,
		      struct lb_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (ctx && physical(data, "session_id", ctx, &id, err) < 0)
		return -1;
	json_t *copy = json_copy(data);
	if (id)
		json_object_set_new(copy, "session_id", json_string(id));
	int r = lb_rpc_spec_parse(copy, bs, err);
	json_decref(copy);
	return r;
}

/* A BoxSpec with skill_name's package mounted (§6.11). */
static int parse_spec_skill(struct lb_rpc_runtime *rt, json_t *data,
			    const struct lb_rpc_context *ctx, struct lb_box_spec *bs,
			    struct lb_err **err)
{
	if (parse_spec(data, ctx, bs, err) < 0 || rpc_skill_fence(rt, err) < 0)
		return -1;
	return rpc_skill_mount(rt, ctx, bs, err);
}

static int get_or_create(struct lb_rpc_runtime *rt, const struct lb_box_spec *bs,
			 struct lb_box_session *out, struct lb_err **err)
{
	bool created;
	return lb_box_session_get_or_create(&rt->box, bs, NULL, out, &created, err);
}

static int do_create(struct lb_rpc_runtime *rt, json_t *data, const struct lb_rpc_context *ctx,
		     json_t **out, struct lb_err **err)
{
	struct lb_box_spec bs = {0};
	struct lb_box_session sess;
	int r = parse_spec_skill(rt, data, ctx, &bs, err);
	if (r == 0 && (r = get_or_create(rt, &bs, &sess, err)) == 0) {
		*out = lb_rpc_session_json(&sess);
		lb_box_session_free(&sess);
	}
	lb_box_spec_free(&bs);
	return r;
}

static int do_exec(struct lb_rpc_runtime *rt, json_t *data, const struct lb_rpc_context *ctx,
		   json_t **out, struct lb_err **err)
{
	struct lb_box_spec bs = {0};
	struct lb_box_session sess;
	struct lb_box_exec_result res;
	int r = parse_spec_skill(rt, data, ctx, &bs, err);
	if (r == 0 && !bs.cmd[0])
		r = lb_err_box(err, LB_BOX_EVALIDATION, "cmd must not be empty");
	if (r == 0 && (r = get_or_create(rt, &bs, &sess, err)) == 0) {
		lb_box_session_free(&sess);
		struct lb_box_exec_req req = {.cmd = bs.cmd,
					      .workdir = bs.workdir,
					      .env = bs.env,
					      .timeout_sec = bs.timeout_sec};
		if ((r = lb_box_exec(&rt->box, bs.session_id, &req, &res, err)) == 0) {
			*out = lb_rpc_exec_result_json(bs.session_id, &res);
			lb_box_exec_result_free(&res);
		}
	}
	lb_box_spec_free(&bs);
	return r;
}

static int do_get_session(struct lb_rpc_runtime *rt, json_t *data, const struct lb_rpc_context *ctx,
			  json_t **out, struct lb_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (physical(data, "session_id", ctx, &id, err) < 0)
		return -1;
	*out = lb_rpc_session_details_json(&rt->box, id, err);
	return *out ? 0 : -1;
}

/* The caller's sessions: those under its prefix (every one for a legacy peer). */
static bool mine(const struct lb_rpc_context *ctx, const char *id)
{
	size_t n = ctx ? strlen(ctx->prefix) : 0;
	return !ctx || (!strncmp(id, ctx->prefix, n) && id[n] == '-');
}

static int do_get_sessions(struct lb_rpc_runtime *rt, json_t *data,
			   const struct lb_rpc_context *ctx, json_t **out, struct lb_err **err)
{
	struct lb_box_session *v = NULL;
	size_t n = 0;
	if (lb_box_session_list(&rt->box, &v, &n, err) < 0)
		return -1;
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		if (mine(ctx, v[i].session_id))
			json_array_append_new(a, lb_rpc_session_json(&v[i]));
	lb_box_session_list_free(v, n);
	*out = json_pack("{s:o}", "sessions", a);
	return 0;
}

static int do_delete(struct lb_rpc_runtime *rt, json_t *data, const struct lb_rpc_context *ctx,
		     json_t **out, struct lb_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (physical(data, "session_id", ctx, &id, err) < 0 ||
	    lb_box_session_delete(&rt->box, id, err) < 0)
		return -1;
	*out = json_pack("{s:O}", "deleted", json_object_get(data, "session_id"));
	return 0;
}

static int do_start_proc(struct lb_rpc_runtime *rt, json_t *data, const struct lb_rpc_context *ctx,
			 json_t **out, struct lb_err **err)
{
	_cleanup_free_ char *id = NULL;
	struct lb_box_proc_spec spec = {0};
	struct lb_box_proc_info info;
	json_t *js = json_object_get(data, "spec");
	if (physical(data, "session_id", ctx, &id, err) < 0)
		return -1;
	if (!js)
		return key_error("spec", err);
	int r = lb_rpc_proc_spec_parse(js, &spec, err);
	if (r == 0 && (r = lb_box_proc_start(&rt->box, id, &spec, &info, err)) == 0) {
		*out = lb_rpc_proc_json(&info);
		lb_box_proc_info_free(&info);
	}
	lb_box_proc_spec_free(&spec);
	return r;
}

static const char *process_id(json_t *data)
{
	const char *p = json_string_value(json_object_get(data, "process_id"));
	return p ? p : "default";
}

/* The session (physical id) and process a get / stop names. */
static int proc_ids(json_t *data, const struct lb_rpc_context *ctx, char **id, struct lb_err **err)
{
	if (physical(data, "session_id", ctx, id, err) < 0)
		return -1;
	return lb_box_check_id(process_id(data), "process_id", err);
}

static int do_get_proc(struct lb_rpc_runtime *rt, json_t *data, const struct lb_rpc_context *ctx,
		       json_t **out, struct lb_err **err)
{
	_cleanup_free_ char *id = NULL;
	struct lb_box_proc_info info;
	if (proc_ids(data, ctx, &id, err) < 0 ||
	    lb_box_proc_get(&rt->box, id, process_id(data), &info, err) < 0)
		return -1;
	*out = lb_rpc_proc_json(&info);
	lb_box_proc_info_free(&info);
	return 0;
}

static int do_stop_proc(struct lb_rpc_runtime *rt, json_t *data, const struct lb_rpc_context *ctx,
			json_t **out, struct lb_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (proc_ids(data, ctx, &id, err) < 0 ||
	    lb_box_proc_stop(&rt->box, id, process_id(data), err) < 0)
		return -1;
	*out = json_pack("{s:s}", "stopped", process_id(data));
	return 0;
}

/* available: a session with LangBot's default limits can really be built on this host. */
json_t *lb_rpc_backend_info(const struct lb_rpc_runtime *rt)
{
	return json_pack("{s:s, s:b}", "name", "lbbox", "available",
			 lb_box_host_ready(rt->features));
}

static json_t *limits_json(const struct lb_box_limits *l, int64_t max_file_bytes)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:I}", "max_sessions", (json_int_t)l->max_sessions,
			 "max_managed_processes", (json_int_t)l->max_managed_processes,
			 "max_completed_processes", (json_int_t)l->max_completed_processes,
			 "max_admission_records", (json_int_t)100000, "max_rpc_file_bytes",
			 (json_int_t)max_file_bytes);
}

/* §3.7, with the real count of running managed processes (0.5.5 always reports 0). */
static int do_status(struct lb_rpc_runtime *rt, json_t *data, const struct lb_rpc_context *ctx,
		     json_t **out, struct lb_err **err)
{
	size_t active, procs;
	lb_box_status(&rt->box, ctx ? ctx->prefix : NULL, &active, &procs);
	*out =
	    json_pack("{s:o, s:I, s:I, s:I, s:o}", "backend", lb_rpc_backend_info(rt),
		      "active_sessions", (json_int_t)active, "managed_processes", (json_int_t)procs,
		      "session_ttl_sec", (json_int_t)rt->box.limits.session_ttl_sec, "limits",
		      limits_json(&rt->box.limits, rt->max_file_bytes));
	return 0;
}

static int do_shutdown(struct lb_rpc_runtime *rt, json_t *data, const struct lb_rpc_context *ctx,
		       json_t **out, struct lb_err **err)
{
	lb_box_drop_owned(&rt->box);
	*out = json_object();
	return 0;
}

static const struct {
	const char *name;
	action_fn fn;
	bool tenant, waits, sandbox; /* sandbox: builds one, so needs a usable backend */
	bool quick; /* answered in the event loop: reads only the indexes (LB_RPC_QUICK) */
} actions[] = {
    {"box_exec", do_exec, true, false, true, false},
    {"box_create_session", do_create, true, true, true, false},
    {"box_get_session", do_get_session, true, false, false, false},
    {"box_get_sessions", do_get_sessions, true, false, false, false},
    {"box_delete_session", do_delete, true, true, false, false},
    {"box_start_managed_process", do_start_proc, true, true, true, false},
    {"box_get_managed_process", do_get_proc, true, false, false, false},
    {"box_stop_managed_process", do_stop_proc, true, true, false, false},
    {"box_status", do_status, true, false, false, true},
    {"box_shutdown", do_shutdown, false, true, false, false},
};

/* §3.2: no backend -> BoxBackendUnavailableError, naming what this host lacks. */
static int backend_usable(const struct lb_rpc_runtime *rt, struct lb_err **err)
{
	const json_t *f = rt->features, *cg = json_object_get(f, "cgroups");
	char missing[256] = "";
	size_t n = 0;
	static const char *const ctl[] = {"memory", "pids", "cpu"};
	if (lb_box_host_ready(f))
		return 0;
	bool rootless = json_is_true(json_object_get(f, "rootless"));
	if (!json_is_true(json_object_get(f, "namespaces")))
		n += (size_t)snprintf(missing + n, sizeof(missing) - n, ", %s",
				      rootless ? "user namespaces" : "namespaces");
	for (size_t i = 0; i < 3 && n < sizeof(missing); i++)
		if (!json_is_true(json_object_get(cg, ctl[i])))
			n += (size_t)snprintf(missing + n, sizeof(missing) - n,
					      ", a writable %s cgroup", ctl[i]);
	return lb_err_box(
	    err, LB_BOX_EUNAVAILABLE,
	    "LangBot Box backend unavailable. lbbox cannot isolate a sandbox with its "
	    "limits on this host (missing: %s); see /readyz or box_health",
	    n > 2 ? missing + 2 : "unknown");
}

static const char *const inline_actions[] = {"__ping",
					     "__file_chunk",
					     "box_init",
					     "box_health",
					     "box_get_backend_info",
					     "box_upsert_sandbox_admission_grant",
					     "box_revoke_sandbox_admission_grant",
					     "box_verify_shared_workspace",
					     NULL};

static int find(const char *action)
{
	for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++)
		if (!strcmp(actions[i].name, action))
			return (int)i;
	return -1;
}

bool rpc_is_tenant_action(const char *action)
{
	int i = find(action);
	return (i >= 0 && actions[i].tenant) || rpc_is_skill_action(action);
}

bool lb_rpc_action_waits_on_shutdown(const char *action)
{
	int i = find(action);
	/* the skill actions write files (a package, an unpacked upload): not cut off midway */
	return (i >= 0 && actions[i].waits) || rpc_is_skill_action(action);
}

bool rpc_is_quick_action(const char *action)
{
	int i = find(action);
	return i >= 0 && actions[i].quick;
}

bool rpc_is_inline_action(const char *action)
{
	for (const char *const *a = inline_actions; *a; a++)
		if (!strcmp(*a, action))
			return true;
	return false;
}

bool rpc_has_action(const char *action)
{
	return rpc_is_inline_action(action) || find(action) >= 0 || rpc_is_skill_action(action);
}

json_t *lb_rpc_run_action(struct lb_rpc_runtime *rt, const struct lb_rpc_request *req)
{
	struct lb_err *err = NULL;
	json_t *out = NULL;
	const struct lb_rpc_context *ctx = req->has_ctx ? &req->ctx : NULL;
	int i = find(req->action);
	if (i < 0 && rpc_is_skill_action(req->action)) {
		if (rpc_skill_run(rt, req, &out, &err) == 0)
			return lb_rpc_reply_ok(req->seq_id, out);
		json_t *reply = lb_rpc_reply_err(req->seq_id, err, LB_BOX_EVALIDATION);
		lb_err_free(&err);
		return reply;
	}
	if (i < 0 || (actions[i].sandbox && backend_usable(rt, &err) < 0) ||
	    actions[i].fn(rt, req->data, ctx, &out, &err) < 0) {
		json_t *reply = lb_rpc_reply_err(req->seq_id, err, LB_BOX_EBOX);
		lb_err_free(&err);
		return reply;
	}
	if (ctx)
		lb_rpc_map_back(out, ctx->prefix);
	return lb_rpc_reply_ok(req->seq_id, out);
}

/* What workspace_quota_mb really does here, by kind of workspace (lb_box_workspace_quota_hard). */
static json_t *hard_workspace_quota(void)
{
	return json_pack(
	    "{s:b, s:b, s:s}", "own_workspace", 1, "host_path", 0, "detail",
	    "a session without host_path gets a tmpfs of workspace_quota_mb as its "
	    "workspace (writes past it fail with ENOSPC); a host_path workspace keeps "
	    "the soft limit: no file may outgrow the quota (RLIMIT_FSIZE), the total is "
	    "LangBot's own check");
}

/* What a session asking for LangBot's default image runs in, when that image is not local. */
static json_t *default_image_json(const struct lb_box *box)
{
	char buf[512];
	const char *local = lb_box_default_image(box, buf, sizeof(buf));
	return json_pack("{s:s, s:s?}", "name", LB_BOX_DEFAULT_IMAGE, "local", local);
}

json_t *lb_rpc_inline_action(struct lb_rpc_runtime *rt, const struct lb_rpc_request *req)
{
	struct lb_err *err = NULL;
	const char *action = req->action;
	json_t *seq_id = req->seq_id;
	if (!strcmp(action, "box_get_backend_info"))
		return lb_rpc_reply_ok(seq_id, lb_rpc_backend_info(rt));
	if (!strcmp(action, "box_health")) {
		/* beyond LangBot: which isolation this host really gives */
		json_t *info = lb_rpc_backend_info(rt);
		json_object_set(info, "features", rt->features);
		json_object_set_new(info, "network", lb_net_opts_json(&rt->box.net));
		json_object_set_new(info, "allowed_mount_roots",
				    rt->box.allowed_roots ? lb_json_from_strv(rt->box.allowed_roots)
							  : json_null());
		json_object_set_new(info, "hard_workspace_quota", hard_workspace_quota());
		json_object_set_new(info, "default_image", default_image_json(&rt->box));
		return lb_rpc_reply_ok(seq_id, info);
	}
	if (!strcmp(action, "box_init")) {
		if (lb_rpc_apply_config(rt, req->data, &err) < 0) {
			json_t *r = lb_rpc_reply_err(seq_id, err, LB_BOX_EVALIDATION);
			lb_err_free(&err);
			return r;
		}
		return lb_rpc_reply_ok(seq_id, json_pack("{s:b}", "initialized", 1));
	}
	if (strstr(action, "admission") || !strcmp(action, "box_verify_shared_workspace"))
		return lb_rpc_reply_error(seq_id, LB_BOX_EADMISSION,
					  "Sandbox admission enforcement is not enabled");
	return lb_rpc_reply_ok(seq_id, json_object()); /* __ping */
}
