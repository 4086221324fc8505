/*
 * config.json's user namespace: a new one ({"type": "user"} without a path) with
 * linux.uidMappings and gidMappings, as podman --uidmap and Kubernetes' user namespaces write
 * them, or one joined by path (a pod's containers join its sandbox's). containerd and CRI-O
 * give the joined namespace's maps too: they are optional then, and must be the namespace's own
 * (checked at create, as runc does). The engine checks the maps by the kernel's rules
 * (lb_spec_check_userns).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lbbox/oci/oci.h"
#include "oci_internal.h"

/* One of linux.uidMappings / gidMappings: [{containerID, hostID, size}, ...]. */
static int parse_map(json_t *lx, const char *key, struct lb_id_map **out, size_t *n,
		     struct lb_err **err)
{
	json_t *a = lb_oci_get_typed(lx, key, JSON_ARRAY, err), *m;
	size_t i;
	if (*err)
		return -1;
	if (!json_array_size(a))
		return 0;
	/* refused before anything is allocated for it */
	if (json_array_size(a) > LB_MAX_ID_MAPS)
		return lb_err_set(err, E2BIG,
				  "config: %s has %zu ranges, the kernel takes at most %d", key,
				  json_array_size(a), LB_MAX_ID_MAPS);
	*out = calloc(json_array_size(a), sizeof(**out));
	if (!*out)
		return lb_err_set(err, ENOMEM, "config: %s", key);
	json_array_foreach(a, i, m)
	{
		static const char *const fields[] = {"containerID", "hostID", "size"};
		uint32_t *dst[] = {&(*out)[i].inside, &(*out)[i].outside, &(*out)[i].count};
		if (!json_is_object(m))
			return lb_err_set(err, EINVAL, "config: %s entries must be objects", key);
		for (size_t f = 0; f < 3; f++) {
			int64_t v;
			bool set;
			if (lb_oci_get_int(m, fields[f], 0, UINT32_MAX, &set, &v, err) < 0)
				return -1;
			if (!set)
				return lb_err_set(err, EINVAL, "config: %s entry %zu has no %s",
						  key, i, fields[f]);
			*dst[f] = (uint32_t)v;
		}
		*n = i + 1;
	}
	return 0;
}

int lb_oci_parse_userns(json_t *lx, bool userns, struct lb_spec *spec, struct lb_err **err)
{
	if (parse_map(lx, "uidMappings", &spec->uid_map, &spec->n_uid_map, err) < 0 ||
	    parse_map(lx, "gidMappings", &spec->gid_map, &spec->n_gid_map, err) < 0)
		return -1;
	bool mapped = spec->n_uid_map || spec->n_gid_map;
	if (mapped && !userns)
		return lb_err_set(err, EINVAL,
				  "config: uidMappings/gidMappings without a user namespace");
	if (userns && !spec->userns_path && (!spec->n_uid_map || !spec->n_gid_map))
		return lb_err_set(err, EINVAL,
				  "config: a new user namespace needs linux.uidMappings and "
				  "gidMappings");
	return lb_spec_check_userns(spec, err) < 0 ? lb_err_wrap(err, "config") : 0;
}
