/*
 * LangBot's built-in Box profiles (spec §2) and BoxService._apply_profile (§5.3 step 2) on a
 * spec filled from flags: a locked field wins over whatever the caller gave and an unlocked one
 * only fills a gap. (LangBot applies profiles itself before a request reaches the runtime.)
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lbbox/box/spec.h"
#include "lbbox/base/cleanup.h"
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

bool lb_box_profile_locks(const struct lb_box_profile *p, const char *field)
{
	for (const char *const *l = p->locked; l && *l; l++)
		if (!strcmp(*l, field))
			return true;
	return false;
}

int64_t lb_box_profile_timeout(const struct lb_box_profile *p, bool given, int64_t timeout_sec)
{
	if (!given || lb_box_profile_locks(p, "timeout_sec"))
		timeout_sec = p->timeout_sec;
	return timeout_sec > p->max_timeout_sec ? p->max_timeout_sec : timeout_sec;
}

/* The profile's value replaces a field the caller did not give, or one the profile locks. */
static bool takes(const struct lb_box_profile *p, unsigned given, unsigned bit, const char *field)
{
	return !(given & bit) || lb_box_profile_locks(p, field);
}

int lb_box_profile_fill(const struct lb_box_profile *p, struct lb_box_spec *s, unsigned given,
			struct lb_err **err)
{
	if (takes(p, given, LB_BOX_GIVEN_IMAGE, "image")) {
		char *image = strdup(p->image);
		if (!image)
			return lb_err_set(err, ENOMEM, "apply box profile %s", p->name);
		free(s->image);
		s->image = image;
	}
	if (takes(p, given, LB_BOX_GIVEN_NETWORK, "network"))
		s->network = p->network;
	if (takes(p, given, LB_BOX_GIVEN_HOST_PATH_MODE, "host_path_mode"))
		s->host_path_mode = p->host_path_mode;
	if (takes(p, given, LB_BOX_GIVEN_CPUS, "cpus"))
		s->cpus = p->cpus;
	if (takes(p, given, LB_BOX_GIVEN_MEMORY, "memory_mb"))
		s->memory_mb = p->memory_mb;
	if (takes(p, given, LB_BOX_GIVEN_PIDS, "pids_limit"))
		s->pids_limit = p->pids_limit;
	if (takes(p, given, LB_BOX_GIVEN_READ_ONLY, "read_only_rootfs"))
		s->read_only_rootfs = p->read_only_rootfs;
	if (takes(p, given, LB_BOX_GIVEN_QUOTA, "workspace_quota_mb"))
		s->workspace_quota_mb = p->workspace_quota_mb;
	s->timeout_sec = lb_box_profile_timeout(p, given & LB_BOX_GIVEN_TIMEOUT, s->timeout_sec);
	return 0;
}
