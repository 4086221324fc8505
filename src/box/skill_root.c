/*
 * Where a skill store is (§6.6): host_root / skills_root [/ tenants/<ns>], canonical. Apart from
 * the rest of the store (src/box/skill_*.c, which needs libarchive and libyaml) because the Box
 * runtime itself needs it on every session create: no host path may overlap the store, and the
 * runtime links neither library (the store's actions run in lbbox-skill).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"
#include "lbbox/box/skill.h"
#include "lbbox/box/text.h"
#include "skill_internal.h"

/* path against base (absolute paths stay), "~" expanded from $HOME. */
int skill_joined(const char *base, const char *path, char *out, size_t len)
{
	const char *home = getenv("HOME");
	int n;
	if (path[0] == '~' && (path[1] == '/' || !path[1]) && home)
		n = snprintf(out, len, "%s%s", home, path + 1);
	else if (path[0] == '/')
		n = snprintf(out, len, "%s", path);
	else
		n = snprintf(out, len, "%s/%s", base, path);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int lb_skill_store_path(const char *host_root, const char *skills_root, const char *ns, char *out,
			size_t len, struct lb_err **err)
{
	char cwd[LB_PATH_BUF], hr[LB_PATH_BUF], sr[LB_PATH_BUF];
	_cleanup_free_ char *h =
	    lb_box_py_strip_dup(host_root && *host_root ? host_root : "./data/box");
	_cleanup_free_ char *s =
	    lb_box_py_strip_dup(skills_root && *skills_root ? skills_root : "skills");
	_cleanup_free_ char *canonical = NULL;
	if (!h || !s || !getcwd(cwd, sizeof(cwd)))
		return lb_err_set(err, errno, "skill store");
	if (ns && (!*ns || strchr(ns, '/') || !strcmp(ns, ".") || !strcmp(ns, "..")))
		return lb_err_set(err, 0, "Invalid Box skill namespace");
	if (skill_joined(cwd, h, hr, sizeof(hr)) < 0 || skill_joined(hr, s, sr, sizeof(sr)) < 0 ||
	    (ns && strlen(sr) + strlen(ns) + 10 >= sizeof(sr)))
		return lb_err_set(err, ENAMETOOLONG, "skill store");
	if (ns)
		strcat(strcat(sr, "/tenants/"), ns);
	if (lb_path_resolve_missing(sr, &canonical, err) < 0)
		return lb_err_wrap(err, "skill store");
	if (strlen(canonical) >= len)
		return lb_err_set(err, ENAMETOOLONG, "skill store");
	strcpy(out, canonical);
	return 0;
}
