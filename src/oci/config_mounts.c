/*
 * config.json's mounts. The engine builds /proc, /sys, /dev, /dev/pts, /dev/shm and /dev/mqueue
 * itself (with its own masks), so those standard entries are recognised and left to it; binds
 * and tmpfs mounts elsewhere become the engine's volumes; any other file system is refused.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"
#include "lbbox/oci/oci.h"
#include "oci_internal.h"

/* The kernel file systems a container gets anyway, where engines put them. */
static bool engine_provides(const char *type, const char *dest)
{
	static const char *const std[][2] = {
	    {"proc", "/proc"},
	    {"sysfs", "/sys"},
	    {"devpts", "/dev/pts"},
	    {"mqueue", "/dev/mqueue"},
	    {"cgroup", "/sys/fs/cgroup"},
	    {"cgroup2", "/sys/fs/cgroup"},
	    {"tmpfs", "/dev"},
	    {"tmpfs", "/dev/shm"},
	    {"bind", "/dev/shm"},
	};
	for (size_t i = 0; i < sizeof(std) / sizeof(std[0]); i++)
		if (!strcmp(type, std[i][0]) && !strcmp(dest, std[i][1]))
			return true;
	return false;
}

static bool has_option(char **opts, const char *o)
{
	for (; opts && *opts; opts++)
		if (!strcmp(*opts, o))
			return true;
	return false;
}

/* tmpfs options: size= (bytes, k/m/g) and mode= (octal); the rest (nosuid, nodev, noexec,
 * strictatime ...) are what the engine does anyway or harmless. */
static int tmpfs_opts(char **opts, struct lb_mount *m, struct lb_err **err)
{
	m->tmpfs_size = 64ULL << 20;
	m->tmpfs_mode = 01777;
	for (; opts && *opts; opts++) {
		if (!strncmp(*opts, "size=", 5)) {
			if (lb_parse_size(*opts + 5, &m->tmpfs_size, err) < 0)
				return lb_err_wrap(err, "config: tmpfs option %.64s", *opts);
			if (!m->tmpfs_size)
				return lb_err_set(err, EINVAL, "config: tmpfs option %.64s", *opts);
		} else if (!strncmp(*opts, "mode=", 5)) {
			char *end;
			unsigned long mode = strtoul(*opts + 5, &end, 8);
			if (*end || end == *opts + 5 || mode > 07777)
				return lb_err_set(err, EINVAL, "config: tmpfs option %.64s", *opts);
			m->tmpfs_mode = (uint32_t)mode;
		}
	}
	return 0;
}

static int bind_source(const char *bundle, const char *src, struct lb_mount *m, struct lb_err **err)
{
	if (!src || !*src)
		return lb_err_set(err, EINVAL, "config: a bind mount to %.64s has no source",
				  m->target);
	if (src[0] == '/' ? !(m->source = strdup(src))
			  : asprintf(&m->source, "%s/%s", bundle, src) < 0) {
		m->source = NULL;
		return lb_err_set(err, ENOMEM, "config: mount source");
	}
	/* The bundle's author (podman, containerd) runs as root and chose these paths: LangBot's
	 * blocked-path rule for a user's volumes does not apply, as it does not to runc. */
	m->owned = true;
	return 0;
}

static int parse_mount(const char *bundle, json_t *j, struct lb_spec *spec, struct lb_err **err)
{
	const char *dest, *type, *src;
	_cleanup_strv_ char **opts = NULL;
	if (!json_is_object(j))
		return lb_err_set(err, EINVAL, "config: mounts entries must be objects");
	if (lb_oci_get_string(j, "destination", true, &dest, err) < 0 ||
	    lb_oci_get_string(j, "type", false, &type, err) < 0 ||
	    lb_oci_get_string(j, "source", false, &src, err) < 0 ||
	    lb_oci_get_strv(j, "options", 64, &opts, err) < 0)
		return -1;
	if (dest[0] != '/')
		return lb_err_set(err, EINVAL, "config: mount destination %.64s is not absolute",
				  dest);
	if (strlen(dest) >= 4096)
		return lb_err_set(err, ENAMETOOLONG, "config: mount destination is too long");
	bool bind = has_option(opts, "bind") || has_option(opts, "rbind");
	if (!type || !*type || !strcmp(type, "none"))
		type = bind ? "bind" : "";
	if (engine_provides(type, dest))
		return 0;
	if (strcmp(type, "bind") && strcmp(type, "tmpfs"))
		return lb_err_set(err, EINVAL,
				  "config: mount type '%.32s' on %.64s is not supported", type,
				  dest);
	if (spec->n_mounts >= LB_MAX_MOUNTS)
		return lb_err_set(err, E2BIG, "config: more than %d mounts", LB_MAX_MOUNTS);
	struct lb_mount *m = &spec->mounts[spec->n_mounts];
	*m = (struct lb_mount){.readonly = has_option(opts, "ro")};
	if (!(m->target = strdup(dest)))
		return lb_err_set(err, ENOMEM, "config: mount");
	spec->n_mounts++;
	return !strcmp(type, "tmpfs") ? tmpfs_opts(opts, m, err) : bind_source(bundle, src, m, err);
}

int lb_oci_parse_mounts(const char *bundle, json_t *root, struct lb_spec *spec, struct lb_err **err)
{
	json_t *a = lb_oci_get_typed(root, "mounts", JSON_ARRAY, err), *m;
	size_t i;
	if (!a)
		return *err ? -1 : 0;
	if (json_array_size(a) > 4 * LB_MAX_MOUNTS)
		return lb_err_set(err, E2BIG, "config: more than %d mounts", 4 * LB_MAX_MOUNTS);
	json_array_foreach(a, i, m)
	{
		if (parse_mount(bundle, m, spec, err) < 0)
			return -1;
	}
	return 0;
}
