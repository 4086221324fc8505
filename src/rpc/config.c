/*
 * The runtime configuration (§3.1): LANGBOT_BOX_CONFIG, shallow-merged with every box_init
 * payload. lbbox reads box.limits (validated and applied atomically, LangBot's messages) and
 * box.local.host_root / allowed_mount_roots (host paths must lie under one) / default_workspace
 * (created, under the rules of the box layer).
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

#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"
#include "lbbox/rpc/rpc.h"

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

static int apply_limits(struct lb_rpc_runtime *rt, json_t *lim, struct lb_err **err)
{
	struct lb_box_limits next = rt->box.limits;
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
	rt->box.limits = next;
	json_t *files = json_object_get(lim, "max_rpc_file_bytes");
	if (files)
		rt->max_file_bytes = json_integer_value(files);
	return 0;
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

static int apply_local(struct lb_rpc_runtime *rt, json_t *local, struct lb_err **err)
{
	char *roots[65];
	_cleanup_free_ char *copy = NULL;
	size_t n = roots_of(local, roots, &copy);
	const char *hr = json_string_value(json_object_get(local, "host_root"));
	const char *dw = json_string_value(json_object_get(local, "default_workspace"));
	if (hr && *hr && lb_box_ensure_default_workspace(&rt->box, hr, dw, roots, err) < 0)
		return -1;
	return n ? lb_box_set_allowed_roots(&rt->box, roots, err) : 0;
}

int lb_rpc_apply_config(struct lb_rpc_runtime *rt, json_t *update, struct lb_err **err)
{
	if (!json_is_object(update))
		return 0;
	json_t *merged = rt->config ? json_copy(rt->config) : json_object();
	json_object_update(merged, update);
	json_t *lim = json_object_get(merged, "limits");
	json_t *local = json_object_get(merged, "local");
	if ((lim && apply_limits(rt, lim, err) < 0) ||
	    (json_is_object(local) && apply_local(rt, local, err) < 0)) {
		json_decref(merged);
		return -1;
	}
	json_decref(rt->config);
	rt->config = merged;
	return 0;
}

void lb_rpc_runtime_init(struct lb_rpc_runtime *rt)
{
	*rt = (struct lb_rpc_runtime){.max_file_bytes = 20971520 /* §3.1's default */};
}

void lb_rpc_runtime_fini(struct lb_rpc_runtime *rt)
{
	json_decref(rt->config);
	json_decref(rt->features);
	lb_box_fini(&rt->box);
	rt->config = rt->features = NULL;
}
