/*
 * lbbox run --profile NAME: one of LangBot's four Box profiles (spec §2) on a one-shot run.
 * Unlocked fields are defaults (memory, pids, cpus, timeout clamped to the profile's maximum);
 * locked ones hold: offline_readonly keeps the network off (an explicit --network on or host is
 * refused, not silently changed), the root read-only and every volume read-only.
 */
#include <string.h>

#include "cli.h"
#include "lbbox/box/spec.h"

static bool locked(const struct lb_box_profile *p, const char *field)
{
	for (const char *const *l = p->locked; l && *l; l++)
		if (!strcmp(*l, field))
			return true;
	return false;
}

static const char *net_name(enum lb_net_mode m)
{
	return m == LB_NET_HOST ? "host" : m == LB_NET_ON ? "on" : "off";
}

static void apply_defaults(const struct lb_box_profile *p, struct lb_spec *spec)
{
	struct lb_cgroup_limits *l = &spec->limits;
	if (!l->memory_bytes)
		l->memory_bytes = (uint64_t)p->memory_mb << 20;
	if (!l->pids)
		l->pids = (uint64_t)p->pids_limit;
	if (!l->cpu_quota_us) {
		l->cpu_period_us = 100000;
		l->cpu_quota_us = (uint64_t)(p->cpus * 100000.0 + 0.5);
	}
	uint64_t max_ms = (uint64_t)p->max_timeout_sec * 1000;
	if (!spec->timeout_ms)
		spec->timeout_ms = (uint64_t)p->timeout_sec * 1000;
	if (spec->timeout_ms > max_ms)
		spec->timeout_ms = max_ms;
}

int cli_run_profile(const char *name, struct lb_spec *spec, bool network_given, struct lb_err **err)
{
	const struct lb_box_profile *p = lb_box_profile_find(name, err);
	if (!p)
		return -1;
	enum lb_net_mode want = p->network == LB_BOX_NET_ON ? LB_NET_ON : LB_NET_OFF;
	if (locked(p, "network") && network_given && spec->net != want)
		return lb_err_set(err, 0, "--network %s is refused by the %s profile (network %s)",
				  net_name(spec->net), p->name, net_name(want));
	if (!network_given || locked(p, "network"))
		spec->net = want;
	if (locked(p, "read_only_rootfs"))
		spec->readonly_root = p->read_only_rootfs;
	if (locked(p, "host_path_mode") && p->host_path_mode == LB_BOX_MOUNT_RO)
		for (size_t i = 0; i < spec->n_mounts; i++)
			spec->mounts[i].readonly = true;
	apply_defaults(p, spec);
	return 0;
}
