/*
 * The runtime configuration (§3.1): LANGBOT_BOX_CONFIG, shallow-merged with every box_init
 * payload. lbbox reads box.limits (validated and applied atomically, LangBot's messages) and
 * box.local.host_root / allowed_mount_roots (host paths must lie under one).
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lbbox/cleanup.h"
#include "lbbox/util.h"
#include "server/server.h"

static const struct {
	const char *name;
	int64_t min, max;
	size_t offset; /* in struct lb_box_limits; SIZE_MAX = accepted, not used by lbbox */
} limits[] = {
    {"max_sessions", 0, 5000, offsetof(struct lb_box_limits, max_sessions)},
    {"max_managed_processes", 0, 1024, offsetof(struct lb_box_limits, max_managed_processes)},
    {"max_completed_processes", 0, 10000, offsetof(struct lb_box_limits, max_completed_processes)},
    {"max_admission_records", 1, 250000, SIZE_MAX},
    {"max_rpc_file_bytes", 1, 104857600, SIZE_MAX},
    {"completed_process_retention_sec", 0, 86400,
     offsetof(struct lb_box_limits, completed_retention_sec)},
};

static int apply_limits(struct server *s, json_t *lim, struct lb_err **err)
{
	struct lb_box_limits next = s->box.limits;
	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		json_t *v = json_object_get(lim, limits[i].name);
		if (!v)
			continue;
		if (!json_is_integer(v)) /* a real int: not a bool, not a string */
			return lb_err_box(err, "ValueError", "box.limits.%s must be an integer",
					  limits[i].name);
		json_int_t n = json_integer_value(v);
		if (n < limits[i].min || n > limits[i].max)
			return lb_err_box(
			    err, "ValueError", "box.limits.%s must be between %lld and %lld",
			    limits[i].name, (long long)limits[i].min, (long long)limits[i].max);
		if (limits[i].offset != SIZE_MAX)
			*(int64_t *)((char *)&next + limits[i].offset) = n;
	}
	s->box.limits = next;
	json_t *files = json_object_get(lim, "max_rpc_file_bytes");
	if (files)
		s->max_file_bytes = json_integer_value(files);
	return 0;
}

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

/* allowed_mount_roots: a list or a comma-separated string; none given = [host_root]. n <= 64. */
static size_t roots_of(json_t *local, char **list, char **copy)
{
	json_t *roots = json_object_get(local, "allowed_mount_roots"), *v;
	const char *host_root = json_string_value(json_object_get(local, "host_root"));
	size_t n = 0, i;
	if (json_is_array(roots)) {
		json_array_foreach(roots, i, v) if (json_string_value(v) && n < 64) list[n++] =
		    (char *)json_string_value(v);
	} else if (json_is_string(roots)) {
		*copy = strdup(json_string_value(roots));
		char *save = NULL;
		for (char *t = *copy ? strtok_r(*copy, ",", &save) : NULL; t && n < 64;
		     t = strtok_r(NULL, ",", &save))
			list[n++] = t;
	}
	if (!n && host_root)
		list[n++] = (char *)host_root;
	list[n] = NULL;
	return n;
}

/* §3.1: the default workspace (local.default_workspace under host_root, or host_root/default)
 * is created when missing; it must be a directory under an allowed root. */
static int ensure_default_workspace(const struct lb_paths *own, json_t *local, char **roots,
				    struct lb_err **err)
{
	const char *hr = json_string_value(json_object_get(local, "host_root"));
	const char *dw = json_string_value(json_object_get(local, "default_workspace"));
	char host_root[PATH_MAX], path[PATH_MAX * 2], ws[PATH_MAX], root[PATH_MAX];
	struct stat st;
	if (!hr || !*hr)
		return 0;
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
	for (char **r = roots; *r && !under; r++) {
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

static int apply_local(struct server *s, json_t *local, struct lb_err **err)
{
	char *roots[65];
	_cleanup_free_ char *copy = NULL;
	size_t n = roots_of(local, roots, &copy);
	if (ensure_default_workspace(&s->box.paths, local, roots, err) < 0)
		return -1;
	return n ? lb_box_set_allowed_roots(&s->box, roots, err) : 0;
}

int server_apply_config(struct server *s, json_t *update, struct lb_err **err)
{
	if (!json_is_object(update))
		return 0;
	json_t *merged = s->config ? json_copy(s->config) : json_object();
	json_object_update(merged, update);
	json_t *lim = json_object_get(merged, "limits");
	json_t *local = json_object_get(merged, "local");
	if ((lim && apply_limits(s, lim, err) < 0) ||
	    (json_is_object(local) && apply_local(s, local, err) < 0)) {
		json_decref(merged);
		return -1;
	}
	json_decref(s->config);
	s->config = merged;
	return 0;
}

void server_drop_owned(struct server *s)
{
	lb_box_drop_owned(&s->box);
}
