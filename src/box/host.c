/*
 * The Box runtime's host: its settings from the environment, read the same way by `lbbox
 * session`, `lbbox proc` and lbbox-server (the instance owning new sessions, the capacities of
 * §3.1, LangBot's allowed mount roots, how a session's image is found), the default workspace
 * box_init asks for, and whether the host can give a session what LangBot promises.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lbbox/box/box.h"
#include "lbbox/sandbox/net.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"

/* path made absolute against the cwd and normalised lexically (".", "..", "//"), as Python's
 * Path.resolve() does for paths that do not exist yet. */
static void absolute(const char *path, char *out, size_t len)
{
	char joined[PATH_MAX * 2], cwd[PATH_MAX];
	if (path[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		snprintf(joined, sizeof(joined), "%s", path);
	else
		snprintf(joined, sizeof(joined), "%s/%s", cwd, path);
	size_t n = 0;
	char *save = NULL;
	out[0] = '\0';
	for (char *t = strtok_r(joined, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
		if (!strcmp(t, "."))
			continue;
		if (!strcmp(t, "..")) {
			char *slash = strrchr(out, '/');
			n = slash ? (size_t)(slash - out) : 0;
			out[n] = '\0';
			continue;
		}
		n += (size_t)snprintf(out + n, len > n ? len - n : 0, "/%s", t);
		if (n >= len)
			n = len - 1;
	}
	if (!n)
		snprintf(out, len, "/");
}

/* §3.1: the default workspace (local.default_workspace under host_root, or host_root/default)
 * is created when missing; it must be a directory under an allowed root. */
int lb_box_ensure_default_workspace(const struct lb_box *box, const char *hr, const char *dw,
				    char *const *roots, struct lb_err **err)
{
	const struct lb_paths *own = &box->paths;
	char host_root[PATH_MAX], path[PATH_MAX * 2], ws[PATH_MAX], root[PATH_MAX];
	struct stat st;
	absolute(hr, host_root, sizeof(host_root));
	if (dw && *dw && dw[0] == '/')
		snprintf(path, sizeof(path), "%s", dw);
	else
		snprintf(path, sizeof(path), "%s/%s", host_root, dw && *dw ? dw : "default");
	absolute(path, ws, sizeof(ws));
	if (!roots[0])
		return lb_err_box(err, LB_BOX_EVALIDATION, "no allowed mount roots are configured");
	/* judged by the path it has (or will have) once symlinks are resolved, and created without
	 * following any: a link planted under host_root cannot send it elsewhere */
	_cleanup_free_ char *canon = NULL;
	if (lb_path_resolve_missing(ws, &canon, err) < 0)
		return lb_err_reclass(err, LB_BOX_EVALIDATION, "default workspace %s", ws);
	bool under = false;
	for (char *const *r = roots; *r && !under; r++) {
		absolute(*r, root, sizeof(root));
		_cleanup_free_ char *real = NULL; /* a root may not exist yet either */
		if (lb_path_resolve_missing(root, &real, NULL) < 0)
			continue;
		size_t n = strlen(real);
		under = real && !strncmp(canon, real, n) &&
			(canon[n] == '/' || canon[n] == '\0' || n == 1);
	}
	if (!under)
		return lb_err_box(err, LB_BOX_EVALIDATION,
				  "default workspace %s is outside the allowed mount roots", ws);
	/* the rules every host path obeys: never a blocked directory or lbbox's own state */
	if (lb_check_host_path(canon, ws, err) < 0 ||
	    lb_paths_check_mount(own, canon, ws, err) < 0) {
		if (err && *err)
			(*err)->cls = LB_BOX_EVALIDATION;
		return -1;
	}
	if (stat(canon, &st) == 0 && !S_ISDIR(st.st_mode))
		return lb_err_box(err, LB_BOX_EVALIDATION,
				  "default workspace %s is not a directory", ws);
	if (lb_mkdir_nofollow(canon, 0755, NULL) < 0)
		return lb_err_reclass(err, LB_BOX_EVALIDATION,
				      "cannot create the default workspace %s", ws);
	return 0;
}

/* LBBOX_BOX_MAX_SESSIONS / _PROCESSES / _COMPLETED: the capacities of §3.1 (box.limits). */
static void env_limit(const char *name, int64_t *v)
{
	uint64_t n;
	const char *s = getenv(name);
	if (s && lb_parse_u64(s, &n, NULL) == 0)
		*v = (int64_t)n;
}

/* LBBOX_BOX_ALLOWED_ROOTS=/a:/b: LangBot's local.allowed_mount_roots */
static int env_roots(struct lb_box *box, struct lb_err **err)
{
	const char *roots = getenv("LBBOX_BOX_ALLOWED_ROOTS");
	if (!roots)
		return 0;
	_cleanup_free_ char *copy = strdup(roots);
	char *v[64], *save = NULL;
	size_t n = 0;
	for (char *t = copy ? strtok_r(copy, ":", &save) : NULL; t && n < 63;
	     t = strtok_r(NULL, ":", &save))
		v[n++] = t;
	v[n] = NULL;
	if (lb_box_set_allowed_roots(box, v, err) < 0)
		return -1;
	box->roots_fixed = true;
	return 0;
}

/* A comma-separated list of name, each item added by add. */
static int env_list(struct lb_net_opts *n, const char *name,
		    int (*add)(struct lb_net_opts *, const char *, struct lb_err **),
		    struct lb_err **err)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return 0;
	_cleanup_free_ char *copy = strdup(v);
	char *save = NULL;
	if (!copy)
		return lb_err_set(err, ENOMEM, "%s", name);
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
		if (add(n, t, err) < 0)
			return lb_err_wrap(err, "%s", name);
	return 0;
}

static int env_net(struct lb_net_opts *n, struct lb_err **err)
{
	if (lb_net_opts_env(n, err) < 0 ||
	    env_list(n, "LBBOX_BOX_NET_DNS", lb_net_opts_add_dns, err) < 0 ||
	    env_list(n, "LBBOX_BOX_NET_ALLOW_HOSTS", lb_net_opts_add_allow, err) < 0)
		return -1;
	return 0;
}

int lb_box_open_env(struct lb_box *box, const struct lb_paths *paths, struct lb_err **err)
{
	const char *pull = getenv("LBBOX_BOX_PULL");
	if (lb_box_init(box, paths, getenv("LBBOX_BOX_OWNER"), err) < 0)
		return -1;
	env_limit("LBBOX_BOX_MAX_SESSIONS", &box->limits.max_sessions);
	env_limit("LBBOX_BOX_MAX_PROCESSES", &box->limits.max_managed_processes);
	env_limit("LBBOX_BOX_MAX_COMPLETED", &box->limits.max_completed_processes);
	box->image_aliases = getenv("LBBOX_BOX_IMAGE_ALIASES");
	box->pull = !pull || strcmp(pull, "0") != 0;
	if (env_net(&box->net, err) < 0)
		return -1;
	return env_roots(box, err);
}

bool lb_box_host_ready(const json_t *f)
{
	const json_t *cg = json_object_get(f, "cgroups");
	return json_is_true(json_object_get(f, "namespaces")) &&
	       json_is_true(json_object_get(cg, "memory")) &&
	       json_is_true(json_object_get(cg, "pids")) &&
	       json_is_true(json_object_get(cg, "cpu"));
}
