/*
 * The runtime configuration (§3.1): LANGBOT_BOX_CONFIG, shallow-merged with every box_init
 * payload. lbbox reads box.limits (validated and applied atomically, LangBot's messages) and
 * box.local.host_root / allowed_mount_roots (host paths must lie under one) / default_workspace
 * (created, under the rules of the box layer); and lbbox's own section, box.lbbox.network
 * (bridge, subnet, nameservers and allowed hosts of network "on" sessions) and
 * box.lbbox.default_image (what LangBot's default image runs as when it is not local).
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
#include "lbbox/sandbox/net.h"

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

/* A path of the peer's config lbbox can place: absolute, or relative to a working directory
 * the peer shares with lbbox (stdio: LangBot started lbbox in its own). */
static bool placeable(const struct lb_rpc_runtime *rt, const char *path)
{
	return path && *path && (path[0] == '/' || !rt->remote_peer);
}

/* allowed_mount_roots: a list or a comma-separated string; none given = [host_root]. n <= 64.
 * Paths lbbox cannot place are left out. */
static size_t roots_of(const struct lb_rpc_runtime *rt, json_t *local, char **list, char **copy)
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
	size_t kept = 0;
	for (i = 0; i < n; i++)
		if (placeable(rt, list[i]))
			list[kept++] = list[i];
	list[kept] = NULL;
	return kept;
}

/*
 * The operator's roots (LBBOX_BOX_ALLOWED_ROOTS) are not replaced by the peer's. A peer whose
 * working directory is not lbbox's (LangBot reaching `lbbox serve`) sends paths relative to its
 * own: lbbox cannot place those, so it neither creates a default workspace from them nor uses
 * them as roots (LangBot checks its host paths against them itself).
 */
static int apply_local(struct lb_rpc_runtime *rt, json_t *local, struct lb_err **err)
{
	char *roots[65];
	_cleanup_free_ char *copy = NULL;
	size_t n = roots_of(rt, local, roots, &copy);
	const char *hr = json_string_value(json_object_get(local, "host_root"));
	const char *dw = json_string_value(json_object_get(local, "default_workspace"));
	char *const *judge = rt->box.roots_fixed ? rt->box.allowed_roots : roots;
	if (placeable(rt, hr) && lb_box_ensure_default_workspace(&rt->box, hr, dw, judge, err) < 0)
		return -1;
	if (rt->box.roots_fixed || !n)
		return 0;
	return lb_box_set_allowed_roots(&rt->box, roots, err);
}

/* A list of strings, each added by add (the list replaces what was there). */
static int net_list(json_t *net, const char *key, struct lb_net_opts *n,
		    int (*add)(struct lb_net_opts *, const char *, struct lb_err **),
		    struct lb_err **err)
{
	json_t *v = json_object_get(net, key), *item;
	size_t i;
	if (!v)
		return 0;
	if (!json_is_array(v))
		return lb_err_box(err, "ValueError", "box.lbbox.network.%s must be a list", key);
	if (!strcmp(key, "dns"))
		n->n_dns = 0;
	else
		n->n_allow = 0;
	json_array_foreach(v, i, item)
	{
		struct lb_err *e = NULL;
		if (!json_is_string(item) || add(n, json_string_value(item), &e) < 0) {
			lb_err_box(err, "ValueError", "box.lbbox.network.%s: %s", key,
				   e ? e->msg : "items must be strings");
			lb_err_free(&e);
			return -1;
		}
	}
	return 0;
}

static int net_str(json_t *net, const char *key, const char **out, struct lb_err **err)
{
	json_t *v = json_object_get(net, key);
	if (v && !json_is_string(v))
		return lb_err_box(err, "ValueError", "box.lbbox.network.%s must be a string", key);
	*out = json_string_value(v);
	return 0;
}

/* box.lbbox.network: {bridge, subnet, dns, allow_hosts} for new "on" sessions, applied whole
 * or not at all. */
static int apply_network(struct lb_rpc_runtime *rt, json_t *net, struct lb_err **err)
{
	struct lb_net_opts n = rt->box.net;
	const char *bridge = NULL, *subnet = NULL;
	struct lb_err *e = NULL;
	if (!json_is_object(net))
		return lb_err_box(err, "ValueError", "box.lbbox.network must be an object");
	if (net_str(net, "bridge", &bridge, err) < 0 || net_str(net, "subnet", &subnet, err) < 0)
		return -1;
	if ((bridge && lb_net_parse_bridge(bridge, n.bridge, &e) < 0) ||
	    (subnet && lb_net_parse_subnet(subnet, &n.subnet, &n.prefix, &e) < 0)) {
		lb_err_box(err, "ValueError", "box.lbbox.network.%s: %s",
			   subnet && !bridge ? "subnet" : "bridge", e->msg);
		lb_err_free(&e);
		return -1;
	}
	if (net_list(net, "dns", &n, lb_net_opts_add_dns, err) < 0 ||
	    net_list(net, "allow_hosts", &n, lb_net_opts_add_allow, err) < 0)
		return -1;
	rt->box.net = n;
	return 0;
}

/* box.lbbox.default_image: an image name ("" = none), checked here, set by the caller once the
 * rest of the config is applied. */
static int check_default_image(json_t *v, struct lb_err **err)
{
	const char *s = json_string_value(v);
	if (!s)
		return lb_err_box(err, "ValueError", "box.lbbox.default_image must be a string");
	if (strlen(s) >= sizeof(((struct lb_box *)0)->default_image))
		return lb_err_box(err, "ValueError", "box.lbbox.default_image is too long");
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f || *p == ',')
			return lb_err_box(err, "ValueError",
					  "box.lbbox.default_image must be an image name");
	return 0;
}

int lb_rpc_apply_config(struct lb_rpc_runtime *rt, json_t *update, struct lb_err **err)
{
	if (!json_is_object(update))
		return 0;
	json_t *merged = rt->config ? json_copy(rt->config) : json_object();
	json_object_update(merged, update);
	json_t *lim = json_object_get(merged, "limits");
	json_t *local = json_object_get(merged, "local");
	json_t *net = json_object_get(json_object_get(merged, "lbbox"), "network");
	json_t *image = json_object_get(json_object_get(merged, "lbbox"), "default_image");
	if ((image && check_default_image(image, err) < 0) ||
	    (lim && apply_limits(rt, lim, err) < 0) ||
	    (json_is_object(local) && apply_local(rt, local, err) < 0) ||
	    (net && apply_network(rt, net, err) < 0)) {
		json_decref(merged);
		return -1;
	}
	if (image)
		snprintf(rt->box.default_image, sizeof(rt->box.default_image), "%s",
			 json_string_value(image));
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
