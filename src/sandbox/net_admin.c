/*
 * lbbox network ls / inspect / prune, and the collection of leases whose sandbox died with its
 * lbbox. Every network of a runroot has its state in <runroot>/net/<bridge>.json.
 */
#include <dirent.h>
#include <errno.h>
#include <netlink/netlink.h>
#include <stdio.h>
#include <string.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/sandbox/net.h"
#include "engine.h"
#include "net_internal.h"

/* The configuration of the network whose state file is <runroot>/net/<name>.json. */
static int cfg_of(const char *runroot, const char *file, struct lb_net_cfg *cfg)
{
	struct lb_net_opts o = {0};
	size_t n = strlen(file);
	char name[32];
	if (n < 6 || n - 5 >= sizeof(name) || strcmp(file + n - 5, ".json") != 0)
		return -1;
	snprintf(name, sizeof(name), "%.*s", (int)(n - 5), file);
	if (lb_net_parse_bridge(name, o.bridge, NULL) < 0)
		return -1;
	lb_net_cfg_resolve(&o, runroot, cfg);
	return 0;
}

/* Subnet of a loaded state, so a network made with LBBOX_NET_SUBNET is found as it is. */
static void cfg_subnet(struct lb_net_cfg *cfg, json_t *st)
{
	const char *s = json_string_value(json_object_get(st, "subnet"));
	if (s && lb_net_parse_subnet(s, &cfg->subnet, &cfg->prefix, NULL) == 0)
		cfg->gateway = cfg->subnet + 1;
}

typedef int (*net_fn)(struct lb_net_cfg *cfg, json_t *st, void *arg);

/* Calls fn for every network of runroot with its state loaded, its dead leases dropped. */
static int each_network(const char *runroot, net_fn fn, void *arg, struct lb_err **err)
{
	char dir[LB_PATH_BUF];
	snprintf(dir, sizeof(dir), "%s/net", runroot);
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct dirent *de;
	if (!d)
		return errno == ENOENT ? 0 : lb_err_set(err, errno, "open %s", dir);
	while ((de = readdir(d))) {
		struct lb_net_cfg cfg;
		json_t *st = NULL;
		bool removed;
		if (cfg_of(runroot, de->d_name, &cfg) < 0 || lb_net_state_load(&cfg, &st, err) < 0)
			continue;
		if (!st)
			continue;
		cfg_subnet(&cfg, st);
		bool allow = lb_ipam_prune_dead(st, &removed);
		if (removed)
			lb_net_state_save(&cfg, st, NULL);
		if (allow)
			lb_nft_sync_allow(&cfg, st, NULL);
		int r = fn(&cfg, st, arg);
		json_decref(st);
		if (r < 0)
			return -1;
	}
	return 0;
}

static int gc_one(struct lb_net_cfg *cfg, json_t *st, void *arg)
{
	return 0;
}

void lb_net_gc(const char *runroot)
{
	int lock = -1;
	if (lb_net_lock(runroot, &lock, NULL) < 0)
		return;
	each_network(runroot, gc_one, NULL, NULL);
	close(lock);
}

static int list_one(struct lb_net_cfg *cfg, json_t *st, void *arg)
{
	json_array_append_new(arg, json_pack("{s:s, s:O, s:O, s:i}", "bridge", cfg->bridge,
					     "subnet", json_object_get(st, "subnet"), "gateway",
					     json_object_get(st, "gateway"), "sandboxes",
					     (int)lb_ipam_count(st)));
	return 0;
}

int lb_net_list(const struct lb_paths *paths, json_t **out, struct lb_err **err)
{
	int lock = -1;
	if (lb_rootless())
		return lb_net_pasta_list(paths, out, err);
	json_t *a = json_array();
	if (!a)
		return lb_err_set(err, ENOMEM, "network list");
	if (lb_net_lock(paths->runroot, &lock, err) < 0) {
		json_decref(a);
		return -1;
	}
	int r = each_network(paths->runroot, list_one, a, err);
	close(lock);
	if (r < 0) {
		json_decref(a);
		return -1;
	}
	*out = a;
	return 0;
}

struct inspect_arg {
	const char *bridge;
	json_t *out;
	struct lb_err **err;
};

static int inspect_one(struct lb_net_cfg *cfg, json_t *st, void *arg)
{
	struct inspect_arg *a = arg;
	json_t *counters = NULL;
	if (strcmp(cfg->bridge, a->bridge) != 0)
		return 0;
	a->out = json_deep_copy(st);
	json_object_del(a->out, "next");
	if (lb_nft_counters_in(-1, cfg, cfg->bridge, &counters, a->err) < 0)
		return -1;
	json_object_set_new(a->out, "dropped", counters);
	return 0;
}

int lb_net_inspect(const struct lb_paths *paths, const struct lb_net_opts *opts, json_t **out,
		   struct lb_err **err)
{
	struct lb_net_cfg cfg;
	int lock = -1;
	if (lb_rootless())
		return lb_net_pasta_inspect(paths, opts, out, err);
	lb_net_cfg_resolve(opts, paths->runroot, &cfg);
	struct inspect_arg a = {.bridge = cfg.bridge, .err = err};
	if (lb_net_lock(paths->runroot, &lock, err) < 0)
		return -1;
	int r = each_network(paths->runroot, inspect_one, &a, err);
	close(lock);
	if (r < 0) {
		json_decref(a.out);
		return -1;
	}
	if (!a.out)
		return lb_err_set(err, 0,
				  "no network %s in %s (it is created by the first "
				  "lbbox run --network on)",
				  cfg.bridge, paths->runroot);
	*out = a.out;
	return 0;
}

struct prune_arg {
	const char *nft;
	json_t *pruned;
	int forward_was; /* 0 when a pruned network found forwarding off */
	size_t kept;
	struct lb_err **err;
};

static int remove_network(struct lb_net_cfg *cfg, struct lb_err **err)
{
	struct nl_sock *sk = NULL;
	bool exists, owned;
	if (lb_nl_open(&sk, err) < 0)
		return -1;
	int r = lb_link_lookup(sk, cfg->bridge, &exists, &owned, cfg, err);
	if (r == 0 && owned)
		r = lb_bridge_delete(sk, cfg->bridge, err);
	nl_socket_free(sk);
	if (r < 0 || lb_nft_delete_table(cfg, err) < 0)
		return -1;
	return lb_net_state_remove(cfg, err);
}

static int prune_one(struct lb_net_cfg *cfg, json_t *st, void *arg)
{
	struct prune_arg *a = arg;
	if (lb_ipam_count(st) > 0) {
		a->kept++;
		return 0;
	}
	snprintf(cfg->nft, sizeof(cfg->nft), "%s", a->nft);
	if (remove_network(cfg, a->err) < 0)
		return -1;
	if (json_integer_value(json_object_get(st, "ip_forward_was")) == 0 &&
	    json_is_integer(json_object_get(st, "ip_forward_was")))
		a->forward_was = 0;
	json_array_append_new(a->pruned, json_string(cfg->bridge));
	return 0;
}

/* The chosen network's bridge without a state file (the runroot was wiped): still ours. */
static int prune_stray(struct lb_net_cfg *cfg, struct prune_arg *a)
{
	json_t *st = NULL;
	struct nl_sock *sk = NULL;
	bool exists = false, owned = false;
	if (lb_net_state_load(cfg, &st, NULL) < 0 || st) {
		json_decref(st);
		return 0;
	}
	if (lb_nl_open(&sk, a->err) < 0)
		return -1;
	int r = lb_link_lookup(sk, cfg->bridge, &exists, &owned, cfg, a->err);
	nl_socket_free(sk);
	if (r < 0 || !owned)
		return r;
	if (remove_network(cfg, a->err) < 0)
		return -1;
	json_array_append_new(a->pruned, json_string(cfg->bridge));
	return 0;
}

int lb_net_prune(const struct lb_paths *paths, const struct lb_net_opts *opts, json_t **pruned,
		 struct lb_err **err)
{
	struct lb_net_cfg cfg;
	int lock = -1;
	if (lb_rootless()) /* nothing is shared between rootless sandboxes: nothing to prune */
		return (*pruned = json_array()) ? 0 : lb_err_set(err, ENOMEM, "network prune");
	lb_net_cfg_resolve(opts, paths->runroot, &cfg);
	struct prune_arg a = {.nft = cfg.nft, .pruned = json_array(), .forward_was = 1, .err = err};
	if (lb_nft_check(&cfg, err) < 0 || lb_net_lock(paths->runroot, &lock, err) < 0) {
		json_decref(a.pruned);
		return -1;
	}
	int r = each_network(paths->runroot, prune_one, &a, err);
	if (r == 0)
		r = prune_stray(&cfg, &a);
	/* forwarding goes back off only when lbbox turned it on and no network of ours is left */
	if (r == 0 && a.kept == 0 && a.forward_was == 0)
		lb_ip_forward_restore(0);
	close(lock);
	if (r < 0) {
		json_decref(a.pruned);
		return -1;
	}
	*pruned = a.pruned;
	return 0;
}
