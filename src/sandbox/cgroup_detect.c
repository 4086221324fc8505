/*
 * Which cgroup hierarchies exist (/proc/self/mountinfo, never hard-coded paths), where lbbox
 * itself sits in them (/proc/self/cgroup), and the plan: v2 when it has the controllers, else
 * one directory per v1 hierarchy, else none (refused when a limit is asked for).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"
#include "cgroup_internal.h"

/* One cgroup mount from /proc/self/mountinfo. */
struct cg_mount {
	char *root;	  /* the cgroup shown at the mount point, as a path in the hierarchy */
	char *mountpoint; /* absolute, octal escapes decoded */
	char *ctrls;	  /* v1: controllers as mounted ("cpu,cpuacct"); v2: "" */
	unsigned roles;	  /* CG_* bits this hierarchy carries (v1) */
	bool v2;
};

struct cg_mounts {
	struct cg_mount *v;
	size_t n;
};

/* v1 controller names; the other super options (rw, name=systemd, xattr ...) are not. */
static const char *const cg_v1_controllers[] = {
    "cpuset",	  "cpu",      "cpuacct", "blkio", "memory", "devices", "freezer", "net_cls",
    "perf_event", "net_prio", "hugetlb", "pids",  "rdma",   "misc",    NULL,
};

static bool cg_is_v1_controller(const char *s)
{
	for (const char *const *c = cg_v1_controllers; *c; c++)
		if (!strcmp(*c, s))
			return true;
	return false;
}

/* Keeps the controller names of a comma list, in order: "rw,cpu,cpuacct" -> "cpu,cpuacct". */
static char *cg_filter_controllers(const char *list, unsigned *roles)
{
	_cleanup_free_ char *copy = strdup(list);
	char *out = calloc(1, strlen(list) + 1);
	unsigned r = 0;

	if (!copy || !out) {
		free(out);
		return NULL;
	}
	char *save = NULL;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (!cg_is_v1_controller(t))
			continue;
		if (*out)
			strcat(out, ",");
		strcat(out, t);
		r |= cg_role_of(t);
	}
	if (roles)
		*roles = r;
	return out;
}

/* ---- /proc/self/mountinfo ------------------------------------------------------------------ */

static bool cg_is_octal(char c)
{
	return c >= '0' && c <= '7';
}

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void cg_unescape(char *s)
{
	char *w = s;
	for (const char *r = s; *r; w++) {
		if (r[0] == '\\' && cg_is_octal(r[1]) && cg_is_octal(r[2]) && cg_is_octal(r[3])) {
			*w = (char)(((r[1] - '0') << 6) | ((r[2] - '0') << 3) | (r[3] - '0'));
			r += 4;
		} else {
			*w = *r++;
		}
	}
	*w = '\0';
}

static void cg_mount_clear(struct cg_mount *m)
{
	free(m->root);
	free(m->mountpoint);
	free(m->ctrls);
}

static void cg_mounts_free(struct cg_mounts *ms)
{
	for (size_t i = 0; i < ms->n; i++)
		cg_mount_clear(&ms->v[i]);
	free(ms->v);
}

/*
 * "36 25 0:32 / /sys/fs/cgroup/memory rw,relatime shared:15 - cgroup cgroup rw,memory":
 * fills m for cgroup and cgroup2 mounts. Returns 1 when filled, 0 for other mounts, -1 on ENOMEM.
 */
static int cg_parse_mount(char *line, struct cg_mount *m)
{
	char *f[5] = {0}, *save = NULL;
	char *t = strtok_r(line, " ", &save);

	for (int i = 0; i < 5 && t; i++, t = strtok_r(NULL, " ", &save))
		f[i] = t;
	while (t && strcmp(t, "-")) /* optional fields end at "-" */
		t = strtok_r(NULL, " ", &save);
	char *fstype = strtok_r(NULL, " ", &save);
	char *source = strtok_r(NULL, " ", &save);
	char *super = strtok_r(NULL, " ", &save);
	if (!f[4] || !fstype || !source || !super)
		return 0;
	m->v2 = !strcmp(fstype, "cgroup2");
	if (!m->v2 && strcmp(fstype, "cgroup"))
		return 0;
	cg_unescape(f[3]);
	cg_unescape(f[4]);
	m->root = strdup(f[3]);
	m->mountpoint = strdup(f[4]);
	m->ctrls = m->v2 ? strdup("") : cg_filter_controllers(super, &m->roles);
	return m->root && m->mountpoint && m->ctrls ? 1 : -1;
}

static int cg_mounts_add(struct cg_mounts *ms, char *line)
{
	struct cg_mount m = {0};
	int r = cg_parse_mount(line, &m);
	if (r <= 0) {
		cg_mount_clear(&m);
		return r;
	}
	struct cg_mount *nv = realloc(ms->v, (ms->n + 1) * sizeof(*nv));
	if (!nv) {
		cg_mount_clear(&m);
		return -1;
	}
	ms->v = nv;
	ms->v[ms->n++] = m;
	return 0;
}

static int cg_mounts_read(struct cg_mounts *ms, struct lb_err **err)
{
	_cleanup_free_ char *buf = NULL;
	char *save = NULL;

	if (lb_read_file("/proc/self/mountinfo", 1 << 24, &buf, NULL, err) < 0)
		return -1;
	for (char *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		if (cg_mounts_add(ms, l) < 0)
			return lb_err_set(err, ENOMEM, "read /proc/self/mountinfo");
	return 0;
}

/* ---- lbbox's own cgroup and placement ---------------------------------------------------- */

/* Does the line "id:field:path" of /proc/self/cgroup describe the hierarchy of ctrls? */
static bool cg_line_matches(const char *id, const char *field, const char *ctrls)
{
	if (!*ctrls) /* the v2 line is "0::/path"; "N:name=systemd:" is not it */
		return !strcmp(id, "0") && !*field;
	_cleanup_free_ char *f = cg_filter_controllers(field, NULL);
	return f && !strcmp(f, ctrls);
}

/* lbbox's own cgroup, as a path in the hierarchy whose controllers are ctrls ("" = v2). */
static int cg_own_path(const char *ctrls, char **out, struct lb_err **err)
{
	_cleanup_free_ char *buf = NULL;
	char *save = NULL;

	if (lb_read_file("/proc/self/cgroup", 1 << 16, &buf, NULL, err) < 0)
		return -1;
	for (char *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *c1 = strchr(l, ':');
		char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c1 = *c2 = '\0';
		if (!cg_line_matches(l, c1 + 1, ctrls))
			continue;
		*out = strdup(c2 + 1);
		return *out ? 0 : lb_err_set(err, ENOMEM, "read /proc/self/cgroup");
	}
	return lb_err_set(err, ENOENT, "no %s hierarchy in /proc/self/cgroup",
			  *ctrls ? ctrls : "cgroup2");
}

/*
 * Once lbbox moved itself into <parent>/lbbox-leaf (v2 no-internal-process rule), its cgroup
 * for placement purposes is still <parent>: new cgroups go beside the leaf, not under it.
 */
static void cg_strip_leaf(char *path)
{
	static const char leaf[] = "/" CG_LEAF_NAME;
	size_t n = strlen(path), l = sizeof(leaf) - 1;

	if (n < l || strcmp(path + n - l, leaf))
		return;
	path[n - l] = '\0';
	if (!*path)
		strcpy(path, "/");
}

/* True when a component of p is "..": cgroup paths must stay inside their hierarchy. */
bool cg_has_dotdot(const char *p)
{
	for (const char *s = p; (s = strstr(s, "..")); s += 2) {
		bool start = s == p || s[-1] == '/';
		bool end = !s[2] || s[2] == '/';
		if (start && end)
			return true;
	}
	return false;
}

/* Host directory of the cgroup cgpath as seen through m (the mount may show a subtree only). */
static int cg_resolve(const struct cg_mount *m, const char *cgpath, char **out, struct lb_err **err)
{
	const char *rel = cgpath;
	size_t rl = strlen(m->root);

	if (strcmp(m->root, "/")) {
		if (strncmp(cgpath, m->root, rl) || (cgpath[rl] && cgpath[rl] != '/'))
			return lb_err_set(err, ENOENT, "cgroup %s is not visible at %s", cgpath,
					  m->mountpoint);
		rel = cgpath + rl;
	}
	while (*rel == '/')
		rel++;
	*out = *rel ? cg_path_join(m->mountpoint, rel) : strdup(m->mountpoint);
	return *out ? 0 : lb_err_set(err, ENOMEM, "cgroup %s", cgpath);
}

/* Writable directory under which the new cgroup goes: parent, or lbbox's own cgroup. */
static int cg_base_dir(const struct cg_mount *m, const char *parent, char **out,
		       struct lb_err **err)
{
	_cleanup_free_ char *own = NULL, *base = NULL;

	if (!parent) {
		if (cg_own_path(m->ctrls, &own, err) < 0)
			return -1;
		if (m->v2)
			cg_strip_leaf(own);
		parent = own;
	}
	if (cg_has_dotdot(parent))
		return lb_err_set(err, EINVAL, "cgroup path %s leaves the hierarchy", parent);
	if (cg_resolve(m, parent, &base, err) < 0)
		return -1;
	if (access(base, W_OK) < 0)
		return lb_err_set(err, errno, "cgroup %s is not usable", base);
	*out = LB_TAKE_PTR(base);
	return 0;
}

/*
 * 1 with *base set when m can hold the new cgroup, 0 when not. An explicit parent that cannot be
 * used is the caller's error; lbbox's own cgroup merely being unusable in one hierarchy
 * (read-only mount, another cgroup namespace) is not: another hierarchy may do.
 */
static int cg_try_base(const struct cg_mount *m, const char *parent, char **base,
		       struct lb_err **err)
{
	_cleanup_err_ struct lb_err *quiet = NULL;

	if (parent)
		return cg_base_dir(m, parent, base, err) < 0 ? -1 : 1;
	return cg_base_dir(m, NULL, base, &quiet) < 0 ? 0 : 1;
}

/* /sys/fs/cgroup itself (pure v2), or a cgroup2 mount that offers memory, pids and cpu. */
static bool cg_v2_candidate(const struct cg_mount *m)
{
	_cleanup_free_ char *path = NULL, *ctrls = NULL;

	if (!m->v2)
		return false;
	if (!strcmp(m->mountpoint, "/sys/fs/cgroup"))
		return true;
	path = cg_path_join(m->mountpoint, "cgroup.controllers");
	if (!path || lb_read_file(path, 4096, &ctrls, NULL, NULL) < 0)
		return false;
	return cg_has_word(ctrls, "memory") && cg_has_word(ctrls, "pids") &&
	       cg_has_word(ctrls, "cpu");
}

static int cg_add_dir(struct lb_cgroup *cg, const struct cg_mount *m, const char *base,
		      const char *name)
{
	struct cg_dir *d = &cg->dirs[cg->ndirs++];

	d->fd = -1;
	d->roles = m->v2 ? CG_V2_ROLES : m->roles;
	d->path = cg_path_join(base, name);
	d->hier = m->v2 ? NULL : strdup(m->ctrls);
	return d->path && (m->v2 || d->hier) ? 0 : -1;
}

/* 1 when a usable cgroup2 hierarchy was found and added to cg, 0 when none, -1 on error. */
static int cg_plan_v2(struct lb_cgroup *cg, const struct cg_mounts *ms, const char *parent,
		      const char *name, struct lb_err **err)
{
	for (size_t i = 0; i < ms->n; i++) {
		_cleanup_free_ char *base = NULL;
		if (!cg_v2_candidate(&ms->v[i]))
			continue;
		int r = cg_try_base(&ms->v[i], parent, &base, err);
		if (r == 0)
			continue;
		if (r > 0 && cg_add_dir(cg, &ms->v[i], base, name) < 0)
			return lb_err_set(err, ENOMEM, "cgroup %s", name);
		return r;
	}
	return 0;
}

/*
 * Cpus or mems asked below an explicit parent that has no cpuset directory (a slice systemd made
 * in every v1 hierarchy but cpuset): refused, naming the parent. lbbox does not make the missing
 * ancestors (runc does): they would outlive the container, since nothing records them for
 * delete to remove.
 */
static int cg_try_base_cpuset(const struct cg_mount *m, const char *parent, char **base,
			      struct lb_err **err)
{
	struct lb_err *e = NULL;
	int r = cg_try_base(m, parent, base, &e);
	if (r >= 0 || !parent || !e || e->errnum != ENOENT) {
		if (err && !*err)
			*err = e;
		else
			lb_err_free(&e);
		return r;
	}
	lb_err_free(&e);
	return lb_err_set(err, 0,
			  "cgroup parent %s has no cpuset cgroup (%s): cpus and mems cannot be "
			  "set below it",
			  parent, m->mountpoint);
}

/*
 * The cpuset hierarchy alone is used only when lim asks for a cpuset: a sandbox without one
 * costs no directory there (lbbox run's hot path). Asked without values (a cgroup to pin later),
 * it is skipped quietly where unusable like lbbox's own unusable cgroup, and where the parent
 * has no cpus or mems to give: filling them would write into cgroups lbbox does not own.
 */
static int cg_try_base_v1(const struct cg_mount *m, const char *parent,
			  const struct lb_cgroup_limits *lim, char **base, struct lb_err **err)
{
	_cleanup_err_ struct lb_err *quiet = NULL;

	if (m->roles != CG_CPUSET)
		return cg_try_base(m, parent, base, err);
	if (!cg_cpuset_wanted(lim))
		return 0;
	if (lim->cpus[0] || lim->mems[0])
		return cg_try_base_cpuset(m, parent, base, err);
	if (cg_try_base(m, parent, base, &quiet) <= 0)
		return 0;
	if (cg_cpuset_v1_can_give(*base))
		return 1;
	free(*base);
	*base = NULL;
	return 0;
}

/* Adds one directory per usable v1 hierarchy that carries a controller lbbox uses. */
static int cg_plan_v1(struct lb_cgroup *cg, const struct cg_mounts *ms, const char *parent,
		      const char *name, const struct lb_cgroup_limits *lim, struct lb_err **err)
{
	unsigned have = 0;

	for (size_t i = 0; i < ms->n && cg->ndirs < CG_MAX_DIRS; i++) {
		const struct cg_mount *m = &ms->v[i];
		_cleanup_free_ char *base = NULL;
		/* the same hierarchy may be mounted twice: the first usable mount wins */
		if (m->v2 || !(m->roles & ~have))
			continue;
		int r = cg_try_base_v1(m, parent, lim, &base, err);
		if (r < 0)
			return -1;
		if (r > 0 && cg_add_dir(cg, m, base, name) < 0)
			return lb_err_set(err, ENOMEM, "cgroup %s", name);
		if (r > 0)
			have |= m->roles;
	}
	return 0;
}

/* No hierarchy to use: fine without limits, never silently without them. */
static int cg_plan_none(struct lb_cgroup *cg, const struct lb_cgroup_limits *lim,
			struct lb_err **err)
{
	unsigned roles = cg_limits_roles(lim);

	if (roles)
		return lb_err_set(err, 0,
				  "cannot enforce the %s limit: no writable cgroup hierarchy",
				  cg_role_name(roles & -roles));
	cg->version = LB_CGROUP_NONE;
	return 0;
}

int cg_plan(struct lb_cgroup *cg, const char *name, const char *parent,
	    const struct lb_cgroup_limits *lim, struct lb_err **err)
{
	_cleanup_(cg_mounts_free) struct cg_mounts ms = {0};

	if (cg_mounts_read(&ms, err) < 0)
		return -1;
	int r = cg_plan_v2(cg, &ms, parent, name, err);
	if (r < 0)
		return -1;
	if (r > 0) {
		cg->version = LB_CGROUP_V2;
		return 0;
	}
	if (cg_plan_v1(cg, &ms, parent, name, lim, err) < 0)
		return -1;
	if (cg->ndirs > 0) {
		cg->version = LB_CGROUP_V1;
		return 0;
	}
	return cg_plan_none(cg, lim, err);
}

/* Does the cgroup parent exist as a directory in m's hierarchy? */
static bool cg_parent_in(const struct cg_mount *m, const char *parent)
{
	_cleanup_free_ char *dir = NULL;
	struct stat st;
	return cg_resolve(m, parent, &dir, NULL) == 0 && stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

bool lb_cgroup_parent_missing(const char *parent)
{
	_cleanup_(cg_mounts_free) struct cg_mounts ms = {0};
	bool any = false;

	if (!parent || cg_has_dotdot(parent) || cg_mounts_read(&ms, NULL) < 0)
		return false;
	/* the plan uses the first cgroup2 hierarchy with the controllers, and then no other */
	for (size_t i = 0; i < ms.n; i++)
		if (cg_v2_candidate(&ms.v[i]))
			return !cg_parent_in(&ms.v[i], parent);
	for (size_t i = 0; i < ms.n; i++) {
		if (ms.v[i].v2 || !ms.v[i].roles)
			continue;
		if (cg_parent_in(&ms.v[i], parent))
			return false;
		any = true;
	}
	return any;
}

int cg_make(struct lb_cgroup *cg, const struct lb_cgroup_limits *lim, struct lb_err **err)
{
	switch (cg->version) {
	case LB_CGROUP_V2:
		return cg_v2_create(cg, lim, err);
	case LB_CGROUP_V1:
		return cg_v1_create(cg, lim, err);
	default:
		return 0;
	}
}
