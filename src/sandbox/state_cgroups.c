/*
 * The cgroups a sandbox's state records, and the check that each is one lbbox could have made
 * for it: destroy kills every task of a recorded cgroup and the GC removes its directories, so a
 * damaged record naming "/sys/fs/cgroup/memory" (or a service's cgroup) must never be used.
 * lbbox names a sandbox's cgroup lbbox-<id> (start.c), or as its spec says (an OCI bundle's
 * cgroupsPath), and that name is then recorded with the paths.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/json_util.h"
#include "lbbox/base/util.h"
#include "engine.h"

#define EARLY_CGROUPS "cgroups"

#define CG_ROOT "/sys/fs/cgroup/"
/* the early file's line that gives the cgroup's name when it is not lbbox-<id> */
#define NAME_LINE "name="

/* Clean components (none empty, ".", ".."), the last one leaf. */
static bool clean_path_to(const char *p, const char *leaf)
{
	for (;;) {
		const char *e = strchrnul(p, '/');
		size_t n = (size_t)(e - p);
		if (!n || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		if (!*e)
			return !strcmp(p, leaf);
		p = e + 1;
	}
}

int lb_state_cgroup_check(const char *id, const char *name, const char *path, struct lb_err **err)
{
	char own[32];
	snprintf(own, sizeof(own), "lbbox-%s", id);
	if (name && !lb_cgroup_name_ok(name))
		return lb_err_set(err, 0, "sandbox %s: its state names the cgroup '%.64s'", id,
				  name);
	if (!path || strncmp(path, CG_ROOT, strlen(CG_ROOT)) ||
	    !clean_path_to(path + strlen(CG_ROOT), name ? name : own))
		return lb_err_set(err, 0,
				  "sandbox %s: its state names %.200s, not a cgroup of its own", id,
				  path ? path : "no cgroup");
	return 0;
}

/* What the path leads to now: a cgroup below a hierarchy's root (never that root, which holds
 * every task of the host), or nothing. */
static int check_in_place(const char *id, const char *path, struct lb_err **err)
{
	struct statx t;
	struct statfs fs;
	if (statx(AT_FDCWD, path, 0, 0, &t) < 0 || statfs(path, &fs) < 0)
		return errno == ENOENT ? 0 : lb_err_set(err, errno, "sandbox %s: %s", id, path);
	bool cgroup = fs.f_type == CGROUP_SUPER_MAGIC || fs.f_type == CGROUP2_SUPER_MAGIC;
	if (!cgroup || lb_statx_mount_root(&t))
		return lb_err_set(err, 0,
				  "sandbox %s: its state names %.200s, not a cgroup of its own", id,
				  path);
	return 0;
}

int lb_state_write_cgroups(const char *statedir, const char *name, const struct lb_cgroup *cg,
			   struct lb_err **err)
{
	char path[LB_PATH_BUF], text[(LB_CGROUP_MAX_DIRS + 1) * LB_PATH_BUF] = "";
	if (name)
		snprintf(text, sizeof(text), NAME_LINE "%s\n", name);
	for (const char *const *c = lb_cgroup_paths(cg); c && *c; c++)
		snprintf(text + strlen(text), sizeof(text) - strlen(text), "%s\n", *c);
	snprintf(path, sizeof(path), "%s/" EARLY_CGROUPS, statedir);
	return lb_write_fileat(AT_FDCWD, path, text, strlen(text), O_CREAT | O_EXCL, 0600, err);
}

int lb_state_read_cgroups(const char *statedir, char ***out, struct lb_err **err)
{
	char path[LB_PATH_BUF];
	_cleanup_free_ char *text = NULL;
	const char *id = lb_statedir_id(statedir);
	*out = NULL;
	snprintf(path, sizeof(path), "%s/" EARLY_CGROUPS, statedir);
	if (lb_read_file(path, (LB_CGROUP_MAX_DIRS + 1) * LB_PATH_BUF, &text, NULL, NULL) < 0)
		return 0;
	_cleanup_strv_ char **v = calloc(LB_CGROUP_MAX_DIRS + 1, sizeof(char *));
	if (!v)
		return lb_err_set(err, ENOMEM, "sandbox %s: cgroups", id);
	const char *name = NULL;
	size_t n = 0;
	for (char *save = NULL, *l = strtok_r(text, "\n", &save); l && n < LB_CGROUP_MAX_DIRS;
	     l = strtok_r(NULL, "\n", &save)) {
		if (!name && !n && !strncmp(l, NAME_LINE, strlen(NAME_LINE))) {
			name = l + strlen(NAME_LINE);
			continue;
		}
		if (lb_state_cgroup_check(id, name, l, err) < 0)
			return -1;
		if (!(v[n++] = strdup(l)))
			return lb_err_set(err, ENOMEM, "sandbox %s: cgroups", id);
	}
	*out = LB_TAKE_PTR(v);
	return 0;
}

static int check_one(const char *id, const char *name, const char *path, struct lb_err **err)
{
	return lb_state_cgroup_check(id, name, path, err) < 0 ? -1 : check_in_place(id, path, err);
}

/* Both lists of state.json, when it parses (a damaged one leaves the early list to use). */
static int check_state_json(const char *statedir, const char *id, struct lb_err **err)
{
	char path[LB_PATH_BUF];
	snprintf(path, sizeof(path), "%s/state.json", statedir);
	_cleanup_json_ json_t *st = json_load_file(path, 0, NULL);
	json_t *paths = json_object_get(st, "cgroups"), *dirs = json_object_get(st, "cgroup_dirs"),
	       *v;
	const char *name = json_string_value(json_object_get(st, "cgroup_name"));
	size_t i;
	json_array_foreach(paths, i, v)
	{
		if (check_one(id, name, json_string_value(v), err) < 0)
			return -1;
	}
	json_array_foreach(dirs, i, v)
	{
		if (check_one(id, name, json_string_value(json_object_get(v, "path")), err) < 0)
			return -1;
	}
	return 0;
}

int lb_state_check_cgroups(const char *statedir, char ***early, struct lb_err **err)
{
	const char *id = lb_statedir_id(statedir);
	_cleanup_strv_ char **list = NULL;
	if (early)
		*early = NULL;
	if (check_state_json(statedir, id, err) < 0 ||
	    lb_state_read_cgroups(statedir, &list, err) < 0)
		return -1;
	for (char **c = list; c && *c; c++)
		if (check_in_place(id, *c, err) < 0)
			return -1;
	if (early)
		*early = LB_TAKE_PTR(list);
	return 0;
}
