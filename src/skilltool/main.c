/*
 * lbbox-skill: the skill store's work for lbbox-server (src/server/skill_client.c), one call per
 * process, in this process (lb_rpc_skills_local), so the runtime itself needs neither libarchive
 * nor libyaml. stdin: {"op": "action" | "package_root", "action", "data", "name", "local",
 * "prefix", "upload"} (fd 3: the upload); stdout: {"ok": result} or {"error": {"class",
 * "message", "errno"}}. Not a command for people: it prints nothing else.
 */
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"
#include "lbbox/box/text.h"
#include "lbbox/rpc/rpc.h"

#define CALL_MAX (64u << 20)

static json_t *read_call(void)
{
	size_t cap = 1 << 16, len = 0;
	_cleanup_free_ char *buf = malloc(cap);
	for (;;) {
		if (!buf)
			return NULL;
		ssize_t n = read(STDIN_FILENO, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len == cap) {
			char *nb = cap < CALL_MAX ? realloc(buf, cap * 2) : NULL;
			if (!nb)
				return NULL;
			buf = nb, cap *= 2;
		}
	}
	return json_loadb(buf, len, JSON_ALLOW_NUL, NULL);
}

static json_t *error_json(const struct lb_err *e)
{
	const char *msg = e && e->msg ? e->msg : "unknown error";
	size_t len;
	/* JSON carries UTF-8 only; the runtime's reply would make the same replacement */
	_cleanup_free_ char *valid = lb_box_utf8_replace(msg, strlen(msg), &len);
	return json_pack("{s:{s:s?, s:s, s:i}}", "error", "class", e ? e->cls : NULL, "message",
			 valid ? valid : "(unprintable error text)", "errno", e ? e->errnum : 0);
}

static int run(struct lb_rpc_runtime *rt, json_t *c, json_t **out, struct lb_err **err)
{
	const char *op = json_string_value(json_object_get(c, "op"));
	const char *prefix = json_string_value(json_object_get(c, "prefix"));
	struct lb_rpc_request req = {.action = json_string_value(json_object_get(c, "action")),
				     .data = json_object_get(c, "data"),
				     .has_ctx = prefix != NULL,
				     .upload_fd =
					 json_is_true(json_object_get(c, "upload")) ? 3 : -1};
	if (prefix && strlen(prefix) >= sizeof(req.ctx.prefix))
		return lb_err_set(err, EINVAL, "bad skill call");
	if (prefix)
		snprintf(req.ctx.prefix, sizeof(req.ctx.prefix), "%s", prefix);
	if (op && !strcmp(op, "action") && req.action && json_is_object(req.data))
		return lb_rpc_skills_local.action(rt, &req, out, err);
	const char *name = json_string_value(json_object_get(c, "name"));
	char *root = NULL;
	if (!op || strcmp(op, "package_root") || !name)
		return lb_err_set(err, EINVAL, "bad skill call");
	if (lb_rpc_skills_local.package_root(rt, prefix ? &req.ctx : NULL, name, &root, err) < 0)
		return -1;
	*out = json_string(root);
	free(root);
	return *out ? 0 : lb_err_set(err, ENOMEM, "skill package");
}

int main(void)
{
	struct lb_rpc_runtime rt;
	_cleanup_err_ struct lb_err *err = NULL;
	json_t *out = NULL, *reply = NULL;
	/* a job killed at the runtime's shutdown deadline takes its helper with it */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	json_t *c = read_call();
	lb_rpc_runtime_init(&rt);
	rt.skills = &lb_rpc_skills_local;
	rt.config = json_pack("{s:O?}", "local", json_object_get(c, "local"));
	if (!json_is_object(c) || !rt.config)
		lb_err_set(&err, EINVAL, "bad skill call");
	else if (run(&rt, c, &out, &err) == 0)
		reply = json_pack("{s:o}", "ok", out);
	reply = err ? error_json(err) : reply;
	char *text = reply ? json_dumps(reply, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	int r = text && lb_write_all(STDOUT_FILENO, text, strlen(text)) == 0 ? 0 : 1;
	free(text);
	json_decref(reply);
	json_decref(c);
	json_decref(rt.config);
	rt.config = NULL;
	return r;
}
