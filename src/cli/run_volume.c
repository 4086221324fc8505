/* Volumes as podman spells them: -v HOST:SANDBOX[:OPTS] and --mount type=bind|tmpfs,... */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"
#include "run_internal.h"

#define TMPFS_DEFAULT_SIZE (64ULL << 20)
#define TMPFS_DEFAULT_MODE 01777

/* A host path as given: absolute, or relative to the current directory. The engine
 * canonicalises and checks it later (lb_spec_check). */
static int host_path(const char *given, const char *arg, char **out, struct lb_err **err)
{
	if (given[0] == '/')
		return (*out = strdup(given)) ? 0 : lb_err_set(err, ENOMEM, "volume");
	/* podman reads a bare word as a named volume; lbbox has none */
	if (given[0] != '.' && !strchr(given, '/'))
		return lb_err_set(err, 0,
				  "invalid volume '%s': named volumes are not supported (for a "
				  "directory here, write ./%s)",
				  arg, given);
	_cleanup_free_ char *cwd = getcwd(NULL, 0);
	if (!cwd)
		return lb_err_set(err, errno, "volume '%s': current directory", arg);
	if (asprintf(out, "%s/%s", cwd, given) < 0)
		return lb_err_set(err, ENOMEM, "volume");
	return 0;
}

/* -v's options: ro/rw, and z/Z (SELinux relabelling: no SELinux here, accepted as podman does
 * without it). */
static int volume_options(char *opts, const char *arg, bool *ro, struct lb_err **err)
{
	for (char *save = NULL, *o = strtok_r(opts, ",", &save); o;
	     o = strtok_r(NULL, ",", &save)) {
		if (!strcmp(o, "ro") || !strcmp(o, "rw"))
			*ro = !strcmp(o, "ro");
		else if (strcmp(o, "z") && strcmp(o, "Z"))
			return lb_err_set(err, 0,
					  "invalid volume '%s': unknown option '%s' (ro, rw, z, Z)",
					  arg, o);
	}
	return 0;
}

int cli_parse_volume(const char *arg, struct lb_mount *out, struct lb_err **err)
{
	_cleanup_free_ char *copy = strdup(arg);
	if (!copy)
		return lb_err_set(err, ENOMEM, "volume");
	char *target = strchr(copy, ':');
	if (!target || target == copy)
		return lb_err_set(err, 0, "invalid volume '%s': expected HOST:SANDBOX[:ro|rw]",
				  arg);
	*target++ = '\0';
	char *opts = strchr(target, ':');
	bool ro = false;
	if (opts)
		*opts++ = '\0';
	if (opts && volume_options(opts, arg, &ro, err) < 0)
		return -1;
	if (target[0] != '/')
		return lb_err_set(err, 0, "invalid volume '%s': sandbox path must be absolute",
				  arg);
	*out = (struct lb_mount){.readonly = ro};
	if (host_path(copy, arg, &out->source, err) < 0)
		return -1;
	if (!(out->target = strdup(target)))
		return lb_err_set(err, ENOMEM, "volume");
	return 0;
}

/* One key=value of --mount into m (type already known: tmpfs when m->tmpfs_size is set). */
static int mount_key(struct lb_mount *m, const char *key, const char *val, const char *arg,
		     struct lb_err **err)
{
	bool is_tmpfs = m->tmpfs_size != 0;
	if (!strcmp(key, "dst") || !strcmp(key, "destination") || !strcmp(key, "target"))
		return val ? cli_set_string(&m->target, val, err) : -1;
	if (!strcmp(key, "ro") || !strcmp(key, "readonly"))
		return cli_parse_bool(val, &m->readonly, err);
	if (!strcmp(key, "relabel") || !strcmp(key, "type"))
		return 0;
	if (!is_tmpfs && (!strcmp(key, "src") || !strcmp(key, "source")))
		return val ? host_path(val, arg, &m->source, err) : -1;
	if (is_tmpfs && !strcmp(key, "tmpfs-size") && val)
		return lb_parse_size(val, &m->tmpfs_size, err) < 0 || !m->tmpfs_size ? -1 : 0;
	if (is_tmpfs && !strcmp(key, "tmpfs-mode") && val) {
		char *end = NULL;
		unsigned long mode = strtoul(val, &end, 8);
		m->tmpfs_mode = (uint32_t)mode;
		return end != val && !*end && mode <= 07777 ? 0 : -1;
	}
	return lb_err_set(err, 0, "invalid --mount '%s': unknown option '%s' for type %s", arg, key,
			  is_tmpfs ? "tmpfs" : "bind");
}

/* The type first: it decides which keys are valid. */
static int mount_type(const char *arg, bool *tmpfs, struct lb_err **err)
{
	const char *t = strstr(arg, "type=");
	if (!t || (t != arg && t[-1] != ','))
		return lb_err_set(err, 0, "invalid --mount '%s': type=bind or type=tmpfs missing",
				  arg);
	t += 5;
	size_t n = strcspn(t, ",");
	if (n == 4 && !strncmp(t, "bind", 4))
		*tmpfs = false;
	else if (n == 5 && !strncmp(t, "tmpfs", 5))
		*tmpfs = true;
	else
		return lb_err_set(err, 0,
				  "invalid --mount '%s': type %.*s is not supported (bind, tmpfs)",
				  arg, (int)n, t);
	return 0;
}

int cli_parse_mount_spec(const char *arg, struct lb_mount *out, struct lb_err **err)
{
	bool tmpfs = false;
	_cleanup_free_ char *copy = strdup(arg);
	if (!copy)
		return lb_err_set(err, ENOMEM, "--mount");
	if (mount_type(arg, &tmpfs, err) < 0)
		return -1;
	*out = (struct lb_mount){0};
	if (tmpfs) {
		out->tmpfs_size = TMPFS_DEFAULT_SIZE;
		out->tmpfs_mode = TMPFS_DEFAULT_MODE;
	}
	for (char *save = NULL, *kv = strtok_r(copy, ",", &save); kv;
	     kv = strtok_r(NULL, ",", &save)) {
		char *val = strchr(kv, '=');
		if (val)
			*val++ = '\0';
		if (mount_key(out, kv, val, arg, err) < 0)
			return lb_err_set(err, 0, "invalid --mount '%s': bad value for '%s'", arg,
					  kv);
	}
	if (!out->target || out->target[0] != '/')
		return lb_err_set(err, 0, "invalid --mount '%s': dst must be an absolute path",
				  arg);
	if (!tmpfs && !out->source)
		return lb_err_set(err, 0, "invalid --mount '%s': src missing", arg);
	return 0;
}
