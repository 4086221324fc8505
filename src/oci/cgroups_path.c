/*
 * A systemd-style linux.cgroupsPath, "slice:prefix:name" (what podman and kubelet write with the
 * systemd cgroup manager), read as the cgroupfs path runc's systemd driver would give the unit:
 * the slice expanded as systemd nests slices ("a-b.slice" -> /a.slice/a-b.slice), then the unit,
 * "prefix-name.scope" (or name itself when it is a slice). lbbox makes cgroupfs directories
 * there itself; no systemd is asked for anything.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbbox/oci/oci.h"
#include "oci_internal.h"

#define SLICE_SUFFIX ".slice"

/* No '/', no control character, not "." or "..": one path component as it is. */
static bool plain_component(const char *s)
{
	if (!strcmp(s, ".") || !strcmp(s, ".."))
		return false;
	for (const char *c = s; *c; c++)
		if (*c == '/' || (unsigned char)*c < 0x20 || *c == 0x7f)
			return false;
	return true;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && !strcmp(s + n - k, suffix);
}

/* "a-b-c.slice" -> "/a.slice/a-b.slice/a-b-c.slice"; "-.slice" (the root slice) -> "". */
static int expand_slice(const char *slice, char *out, size_t len, struct lb_err **err)
{
	size_t n = strlen(slice), k = strlen(SLICE_SUFFIX), used = 0;
	if (n <= k || !ends_with(slice, SLICE_SUFFIX) || !plain_component(slice))
		return lb_err_set(err, EINVAL,
				  "config: cgroupsPath slice %.64s is not a slice name", slice);
	out[0] = '\0';
	if (n == k + 1 && slice[0] == '-')
		return 0;
	/* each '-' opens a level; an empty component ("a--b", "-a") names no slice */
	for (size_t start = 0, i = 0; i <= n - k; i++) {
		if (i < n - k && slice[i] != '-')
			continue;
		if (i == start)
			return lb_err_set(err, EINVAL,
					  "config: cgroupsPath slice %.64s is not a slice name",
					  slice);
		int w = snprintf(out + used, len - used, "/%.*s" SLICE_SUFFIX, (int)i, slice);
		if (w < 0 || (size_t)w >= len - used)
			return lb_err_set(err, ENAMETOOLONG, "config: cgroupsPath is too long");
		used += (size_t)w;
		start = i + 1;
	}
	return 0;
}

int lb_oci_systemd_cgroups_path(const char *p, char **out, struct lb_err **err)
{
	char slice[256], prefix[256], path[1024];
	const char *c1 = strchr(p, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	*out = NULL;
	if (!c2 || strchr(c2 + 1, ':'))
		return lb_err_set(err, EINVAL, "config: cgroupsPath %.64s is not slice:prefix:name",
				  p);
	const char *name = c2 + 1;
	if ((size_t)(c1 - p) >= sizeof(slice) || (size_t)(c2 - c1 - 1) >= sizeof(prefix) ||
	    strlen(name) >= 256)
		return lb_err_set(err, ENAMETOOLONG, "config: cgroupsPath is too long");
	/* an empty slice is runc's default, system.slice */
	if (c1 == p)
		snprintf(slice, sizeof(slice), "system.slice");
	else
		snprintf(slice, sizeof(slice), "%.*s", (int)(c1 - p), p);
	snprintf(prefix, sizeof(prefix), "%.*s", (int)(c2 - c1 - 1), c1 + 1);
	if (!*name || !plain_component(name) || !plain_component(prefix))
		return lb_err_set(err, EINVAL, "config: cgroupsPath %.64s names no usable unit", p);
	if (expand_slice(slice, path, sizeof(path), err) < 0)
		return -1;
	size_t used = strlen(path);
	int w = ends_with(name, SLICE_SUFFIX)
		    ? snprintf(path + used, sizeof(path) - used, "/%s", name)
		: *prefix ? snprintf(path + used, sizeof(path) - used, "/%s-%s.scope", prefix, name)
			  : snprintf(path + used, sizeof(path) - used, "/%s.scope", name);
	if (w < 0 || (size_t)w >= sizeof(path) - used)
		return lb_err_set(err, ENAMETOOLONG, "config: cgroupsPath is too long");
	*out = strdup(path);
	return *out ? 0 : lb_err_set(err, ENOMEM, "config: cgroupsPath");
}
