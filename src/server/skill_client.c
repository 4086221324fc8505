/*
 * The skill store through the helper lbbox-skill, found beside lbbox-server as lbbox finds its
 * other helpers (lb_self_dir). The store needs libarchive and libyaml, which with what they load
 * (libxml2, ICU, libstdc++) add ~3 MiB to the runtime and a larger page table to every forked
 * job; a skill action is rare, so it pays for one helper process instead (from its job, never
 * from the event loop).
 *
 * One call, one helper: its stdin holds {"op": "action" | "package_root", "action", "data",
 * "name", "local": config.local, "prefix": the context's prefix or null, "upload": bool}, fd 3
 * the upload when "upload" is true; its stdout is {"ok": result} or {"error": {"class",
 * "message", "errno"}} (src/skilltool/main.c). Results and errors are the in-process ones
 * (lb_rpc_skills_local), so replies are the same byte for byte.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"
#include "server.h"

extern char **environ;

#define SKILL_REPLY_MAX (64u << 20) /* a reply is at most a 16 MiB message and its escaping */

/* An error class the helper named, as the static string lb_err wants. */
static const char *class_of(const char *name)
{
	static const char *const known[] = {
	    LB_BOX_EVALIDATION, LB_BOX_ENOTFOUND,   LB_BOX_ECONFLICT,	 LB_BOX_ECAPACITY,
	    LB_BOX_EMPNOTFOUND, LB_BOX_EMPCONFLICT, LB_BOX_EUNAVAILABLE, LB_BOX_ERUNTIME,
	    LB_BOX_EADMISSION,	LB_BOX_EBOX,	    "KeyError",		 "ValueError",
	    "PermissionError",	"TypeError"};
	for (size_t i = 0; name && i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(known[i], name))
			return known[i];
	return name ? LB_BOX_EVALIDATION : NULL;
}

/* The call's text in a sealed-off memory file, read from its start by the helper. */
static int call_file(json_t *call, int *fd, struct lb_err **err)
{
	_cleanup_free_ char *text = json_dumps(call, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!text)
		return lb_err_set(err, ENOMEM, "skill call");
	int f = memfd_create("lbbox-skill-call", MFD_CLOEXEC);
	if (f < 0)
		return lb_err_set(err, errno, "memfd_create");
	if (lb_write_all(f, text, strlen(text)) < 0 || lseek(f, 0, SEEK_SET) < 0) {
		int e = errno;
		close(f);
		return lb_err_set(err, e, "skill call");
	}
	*fd = f;
	return 0;
}

static pid_t spawn_helper(int in, int out, int upload_fd, struct lb_err **err)
{
	char dir[LB_PATH_BUF], path[LB_PATH_BUF + 16];
	char *const argv[] = {"lbbox-skill", NULL};
	posix_spawn_file_actions_t fa;
	pid_t pid;
	if (lb_self_dir(dir, sizeof(dir), err) < 0)
		return lb_err_wrap(err, "find lbbox-skill");
	snprintf(path, sizeof(path), "%s/lbbox-skill", dir);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in, STDIN_FILENO);
	posix_spawn_file_actions_adddup2(&fa, out, STDOUT_FILENO);
	if (upload_fd >= 0)
		posix_spawn_file_actions_adddup2(&fa, upload_fd, 3);
	posix_spawn_file_actions_addclosefrom_np(&fa, upload_fd >= 0 ? 4 : 3);
	int r = posix_spawn(&pid, path, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (r != 0)
		return lb_err_set(err, r, "the skill helper %s", path);
	return pid;
}

/* Everything the helper wrote, until it closes its end. */
static int read_reply(int fd, struct sbuf *b)
{
	char buf[65536];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n == 0)
			return 0;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || b->len + (size_t)n > SKILL_REPLY_MAX ||
		    sbuf_add(b, buf, (size_t)n) < 0)
			return -1;
	}
}

/* {"ok": ...} into *ok, {"error": ...} into *err. */
static int parse_reply(const struct sbuf *b, json_t **ok, struct lb_err **err)
{
	json_t *r = b->len ? json_loadb(b->p, b->len, JSON_ALLOW_NUL, NULL) : NULL;
	json_t *v = json_object_get(r, "ok"), *e = json_object_get(r, "error");
	int ret = 0;
	if (v)
		*ok = json_incref(v);
	else if (json_is_object(e)) {
		const char *msg = json_string_value(json_object_get(e, "message"));
		lb_err_box(err, class_of(json_string_value(json_object_get(e, "class"))), "%s",
			   msg ? msg : "unknown error");
		if (*err)
			(*err)->errnum = (int)json_integer_value(json_object_get(e, "errno"));
		ret = -1;
	} else
		ret = lb_err_set(err, 0, "the skill helper lbbox-skill gave no answer");
	json_decref(r);
	return ret;
}

static int call(json_t *call, int upload_fd, json_t **ok, struct lb_err **err)
{
	_cleanup_close_ int in = -1;
	int pp[2], status = 0;
	struct sbuf b = {0};
	if (call_file(call, &in, err) < 0)
		return -1;
	if (pipe2(pp, O_CLOEXEC) < 0)
		return lb_err_set(err, errno, "pipe");
	pid_t pid = spawn_helper(in, pp[1], upload_fd, err);
	close(pp[1]);
	int r = pid < 0 ? -1 : read_reply(pp[0], &b);
	close(pp[0]);
	if (pid > 0) {
		if (r < 0)
			kill(pid, SIGKILL);
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
	}
	if (pid > 0 && r == 0)
		r = parse_reply(&b, ok, err);
	else if (pid > 0)
		r = lb_err_set(err, 0, "the skill helper lbbox-skill: its answer is too large");
	if (r < 0 && pid > 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
		lb_err_wrap(err, "the skill helper lbbox-skill ended with status %d",
			    lb_exit_code_of(status));
	sbuf_free(&b);
	return r;
}

static json_t *call_json(const struct lb_rpc_runtime *rt, const char *op,
			 const struct lb_rpc_context *ctx)
{
	json_t *local = json_object_get(rt->config, "local");
	return json_pack("{s:s, s:O?, s:s?}", "op", op, "local", local, "prefix",
			 ctx ? ctx->prefix : NULL);
}

static int helper_action(struct lb_rpc_runtime *rt, const struct lb_rpc_request *req, json_t **out,
			 struct lb_err **err)
{
	json_t *c = call_json(rt, "action", req->has_ctx ? &req->ctx : NULL);
	if (!c || json_object_set_new(c, "action", json_string(req->action)) < 0 ||
	    json_object_set(c, "data", req->data) < 0 ||
	    json_object_set_new(c, "upload", json_boolean(req->upload_fd >= 0)) < 0) {
		json_decref(c);
		return lb_err_set(err, ENOMEM, "skill call");
	}
	int r = call(c, req->upload_fd, out, err);
	json_decref(c);
	return r;
}

static int helper_package_root(struct lb_rpc_runtime *rt, const struct lb_rpc_context *ctx,
			       const char *name, char **out, struct lb_err **err)
{
	json_t *c = call_json(rt, "package_root", ctx), *root = NULL;
	if (!c || json_object_set_new(c, "name", json_string(name)) < 0) {
		json_decref(c);
		return lb_err_set(err, ENOMEM, "skill call");
	}
	int r = call(c, -1, &root, err);
	json_decref(c);
	if (r < 0)
		return -1;
	*out = json_is_string(root) ? strdup(json_string_value(root)) : NULL;
	json_decref(root);
	return *out ? 0 : lb_err_set(err, ENOMEM, "skill package");
}

const struct lb_rpc_skills server_skills = {.action = helper_action,
					    .package_root = helper_package_root};
