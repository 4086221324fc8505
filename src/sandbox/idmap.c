/*
 * uid and gid maps of a sandbox's user namespace (root only, e.g. an OCI bundle's uidMappings):
 * checked against the kernel's own rules before anything exists, so a bad map is one line from
 * lbbox rather than an EINVAL from a write to /proc/PID/uid_map halfway through a start.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "engine.h"

/* The kernel reads a map in one write of less than a page. */
#define MAP_TEXT_MAX 4095

static bool overlap(uint32_t a, uint32_t b, uint32_t count_a, uint32_t count_b)
{
	return (uint64_t)a < (uint64_t)b + count_b && (uint64_t)b < (uint64_t)a + count_a;
}

/* The kernel refuses a range whose last id would be 2^32 - 1 or beyond ((u32)-1 is no id). */
static bool fits(uint32_t first, uint32_t count)
{
	return (uint64_t)first + count <= UINT32_MAX;
}

int lb_id_map_check(const struct lb_id_map *map, size_t n, const char *what, struct lb_err **err)
{
	if (n == 0)
		return lb_err_set(err, EINVAL, "%s map: no ranges", what);
	if (n > LB_MAX_ID_MAPS)
		return lb_err_set(err, E2BIG, "%s map: %zu ranges, the kernel takes at most %d",
				  what, n, LB_MAX_ID_MAPS);
	for (size_t i = 0; i < n; i++) {
		const struct lb_id_map *m = &map[i];
		if (m->count == 0)
			return lb_err_set(err, EINVAL, "%s map: range %zu has size 0", what, i);
		if (!fits(m->inside, m->count) || !fits(m->outside, m->count))
			return lb_err_set(err, ERANGE, "%s map: range %zu (%u %u %u) goes past %u",
					  what, i, m->inside, m->outside, m->count, UINT32_MAX - 1);
		for (size_t j = 0; j < i; j++) {
			const struct lb_id_map *o = &map[j];
			if (overlap(m->inside, o->inside, m->count, o->count) ||
			    overlap(m->outside, o->outside, m->count, o->count))
				return lb_err_set(err, EINVAL, "%s map: ranges %zu and %zu overlap",
						  what, j, i);
		}
	}
	char text[MAP_TEXT_MAX + 1];
	if (lb_id_map_text(map, n, text, sizeof(text)) < 0)
		return lb_err_set(err, E2BIG,
				  "%s map: too long for the kernel (%zu ranges; it reads less than "
				  "%d bytes)",
				  what, n, MAP_TEXT_MAX + 1);
	return 0;
}

bool lb_id_map_has(const struct lb_id_map *map, size_t n, uint32_t id)
{
	for (size_t i = 0; i < n; i++)
		if (id >= map[i].inside && (uint64_t)id < (uint64_t)map[i].inside + map[i].count)
			return true;
	return false;
}

int lb_id_map_text(const struct lb_id_map *map, size_t n, char *out, size_t size)
{
	size_t len = 0;
	out[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		int w = snprintf(out + len, size - len, "%u %u %u\n", map[i].inside, map[i].outside,
				 map[i].count);
		if (w < 0 || (size_t)w >= size - len)
			return -1;
		len += (size_t)w;
	}
	return 0;
}

int lb_spec_check_userns(const struct lb_spec *spec, struct lb_err **err)
{
	if (spec->userns_path && spec->layers)
		return lb_err_set(
		    err, ENOTSUP,
		    "a joined user namespace needs a directory rootfs (not an image's "
		    "layers)");
	/* a joined namespace's own maps are checked once it is open (userns_join.c) */
	if (!spec->n_uid_map && !spec->n_gid_map)
		return 0;
	if (!spec->n_uid_map || !spec->n_gid_map)
		return lb_err_set(err, EINVAL,
				  "a user namespace needs both a uid map and a gid map");
	if (lb_id_map_check(spec->uid_map, spec->n_uid_map, "uid", err) < 0 ||
	    lb_id_map_check(spec->gid_map, spec->n_gid_map, "gid", err) < 0)
		return -1;
	/* pid 1 becomes the namespace's root to build the sandbox (as runc's init does) */
	if (!lb_id_map_has(spec->uid_map, spec->n_uid_map, 0) ||
	    !lb_id_map_has(spec->gid_map, spec->n_gid_map, 0))
		return lb_err_set(err, EINVAL,
				  "the uid and gid maps must map 0 (the sandbox's root)");
	if (!lb_id_map_has(spec->uid_map, spec->n_uid_map, spec->uid) ||
	    !lb_id_map_has(spec->gid_map, spec->n_gid_map, spec->gid))
		return lb_err_set(err, EINVAL,
				  "user %u:%u is not mapped in the sandbox's user namespace",
				  spec->uid, spec->gid);
	if (spec->layers)
		return lb_err_set(err, ENOTSUP,
				  "uid/gid maps need a directory rootfs (not an image's layers)");
	return 0;
}
