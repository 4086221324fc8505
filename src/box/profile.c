/*
 * LangBot's built-in Box profiles (spec §2) and BoxService._apply_profile (§5.3 step 2): on the
 * raw request payload, before validation, so a locked field wins over whatever the caller sent
 * and an unlocked one only fills a gap.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "box_spec_internal.h"
#include "lbbox/box_spec.h"
#include "lbbox/cleanup.h"
#include "text_internal.h"

static const char *const no_locks[] = {NULL};
static const char *const offline_locks[] = {"network", "host_path_mode", "read_only_rootfs", NULL};

/* Sorted by name: the "available profiles" list of the error is in this order. */
static const struct lb_box_profile profiles[] = {
    {"default", LB_BOX_DEFAULT_IMAGE, LB_BOX_NET_OFF, 30, LB_BOX_MOUNT_RW, 120, 1.0, 512, 128, true,
     0, no_locks},
    {"network_basic", LB_BOX_DEFAULT_IMAGE, LB_BOX_NET_ON, 30, LB_BOX_MOUNT_RW, 120, 1.0, 512, 128,
     true, 0, no_locks},
    {"network_extended", LB_BOX_DEFAULT_IMAGE, LB_BOX_NET_ON, 30, LB_BOX_MOUNT_RW, 300, 2.0, 1024,
     256, false, 0, no_locks},
    {"offline_readonly", LB_BOX_DEFAULT_IMAGE, LB_BOX_NET_OFF, 30, LB_BOX_MOUNT_RO, 60, 0.5, 256,
     64, true, 0, offline_locks},
};

#define N_PROFILES (sizeof(profiles) / sizeof(profiles[0]))

/* LangBot reads str(box.local.profile).strip() or "default". */
const struct lb_box_profile *lb_box_profile_find(const char *name, struct lb_err **err)
{
	_cleanup_free_ char *want = lb_box_py_strip_dup(name ? name : "");

	if (!want) {
		lb_err_set(err, ENOMEM, "box profile");
		return NULL;
	}
	for (size_t i = 0; i < N_PROFILES; i++)
		if (!strcmp(profiles[i].name, *want ? want : "default"))
			return &profiles[i];
	lb_err_box(err, LB_BOX_EVALIDATION,
		   "unknown box profile '%s', available profiles: default, network_basic, "
		   "network_extended, offline_readonly",
		   want);
	return NULL;
}

static bool profile_locks(const struct lb_box_profile *p, const char *field)
{
	for (const char *const *l = p->locked; l && *l; l++)
		if (!strcmp(*l, field))
			return true;
	return false;
}

/* The profile's value of one of the nine profile fields, as JSON (enums as their value). */
static json_t *profile_value(const struct lb_box_profile *p, const char *field)
{
	if (!strcmp(field, "image"))
		return json_string(p->image);
	if (!strcmp(field, "network"))
		return json_string(lb_box_net_name(p->network));
	if (!strcmp(field, "timeout_sec"))
		return json_integer(p->timeout_sec);
	if (!strcmp(field, "host_path_mode"))
		return json_string(lb_box_mount_mode_name(p->host_path_mode));
	if (!strcmp(field, "cpus"))
		return json_real(p->cpus);
	if (!strcmp(field, "memory_mb"))
		return json_integer(p->memory_mb);
	if (!strcmp(field, "pids_limit"))
		return json_integer(p->pids_limit);
	if (!strcmp(field, "read_only_rootfs"))
		return json_boolean(p->read_only_rootfs);
	return json_integer(p->workspace_quota_mb);
}

/* timeout_sec above max_timeout_sec becomes max_timeout_sec; a value that is no integer is
 * left for validation to reject. Python reads "99999999999999999999" as a (huge) int, so an
 * int64 overflow upwards clamps too. */
static int clamp_timeout(const struct lb_box_profile *p, json_t *payload)
{
	const json_t *v = json_object_get(payload, "timeout_sec");
	const char *msg = NULL;
	int64_t t = 0;
	int overflow = 0;

	if (!v || (lb_box_lax_int(v, &t, &overflow, &msg) < 0 && overflow <= 0))
		return 0;
	if (overflow > 0 || t > p->max_timeout_sec)
		return json_object_set_new(payload, "timeout_sec",
					   json_integer(p->max_timeout_sec));
	return 0;
}

int lb_box_profile_apply(const struct lb_box_profile *p, json_t *payload, struct lb_err **err)
{
	static const char *const fields[] = {
	    "image",	 "network",    "timeout_sec",	   "host_path_mode",	"cpus",
	    "memory_mb", "pids_limit", "read_only_rootfs", "workspace_quota_mb"};

	if (!json_is_object(payload))
		return lb_err_box(err, LB_BOX_EVALIDATION, "box request payload must be an object");
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		/* "absent" is the key missing: an explicit null stays and fails validation */
		if (!profile_locks(p, fields[i]) && json_object_get(payload, fields[i]))
			continue;
		if (json_object_set_new(payload, fields[i], profile_value(p, fields[i])) < 0)
			return lb_err_set(err, ENOMEM, "apply box profile %s", p->name);
	}
	if (clamp_timeout(p, payload) < 0)
		return lb_err_set(err, ENOMEM, "apply box profile %s", p->name);
	return 0;
}
