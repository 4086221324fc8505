/*
 * Pinning a sandbox to cpus and memory nodes (cpuset.cpus / cpuset.mems). Lists are checked
 * here, in the kernel's format, before any write: the kernel's own refusal (EINVAL) names no
 * value, and on v2 it does not refuse at all (cpus outside the parent's are silently dropped).
 *
 * The v1 trap: a new v1 cpuset cgroup starts with empty cpus and mems, and no task can join it
 * until both are set. lbbox copies the parent's values into each directory it makes rather
 * than setting cgroup.clone_children on the parent: that flag is a setting of a cgroup lbbox
 * does not own (the caller's, often the hierarchy root), it would change what every other
 * program's new cgroups get there, and copying costs two reads and two writes per sandbox
 * that asked for a cpuset, none for one that did not.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"
#include "cgroup_internal.h"

/* Cpus and nodes beyond this are refused (the kernel's own NR_CPUS is at most 8192). */
#define CPUSET_MAX_ID 8192
#define CPUSET_WORDS  (CPUSET_MAX_ID / 64)

struct cpumask {
	uint64_t w[CPUSET_WORDS];
};

/* Reads one number below CPUSET_MAX_ID at *p, advancing it; -1 when there is none. */
static long cpuset_number(const char **p)
{
	long v = 0;
	if (**p < '0' || **p > '9')
		return -1;
	for (; **p >= '0' && **p <= '9'; (*p)++) {
		v = v * 10 + (**p - '0');
		if (v >= CPUSET_MAX_ID)
			return -1;
	}
	return v;
}

/* Parses list into m (may be NULL); false when list is not a valid list. A trailing newline (as
 * the kernel's files end) is accepted; an empty list is an empty set. */
static bool cpuset_parse(const char *list, struct cpumask *m)
{
	const char *p = list;
	if (m)
		memset(m, 0, sizeof(*m));
	if (!*p || !strcmp(p, "\n"))
		return true;
	for (;;) {
		long a = cpuset_number(&p), b = a;
		if (a < 0)
			return false;
		if (*p == '-') {
			p++;
			b = cpuset_number(&p);
			if (b < a)
				return false;
		}
		for (long i = a; m && i <= b; i++)
			m->w[i / 64] |= 1ull << (i % 64);
		if (*p == ',') {
			p++;
			continue;
		}
		return !*p || !strcmp(p, "\n");
	}
}

int lb_cpuset_check(const char *list, const char *what, struct lb_err **err)
{
	size_t n = strnlen(list, LB_CPUSET_LEN);
	if (n == LB_CPUSET_LEN)
		return lb_err_set(err, 0, "cpuset %s: the list is longer than %d bytes", what,
				  LB_CPUSET_LEN - 1);
	/* echoed only once known to be harmless text */
	if (strspn(list, "0123456789,-") != n)
		return lb_err_set(err, 0, "cpuset %s: a list holds only digits, ',' and '-'", what);
	if (!n || !cpuset_parse(list, NULL))
		return lb_err_set(err, 0,
				  "cpuset %s '%s' is not a list of ascending numbers or ranges "
				  "below %d (e.g. 0-2,4)",
				  what, list, CPUSET_MAX_ID);
	return 0;
}

int lb_cpuset_set(char dst[LB_CPUSET_LEN], const char *list, const char *what, struct lb_err **err)
{
	if (*list && lb_cpuset_check(list, what, err) < 0)
		return -1;
	snprintf(dst, LB_CPUSET_LEN, "%s", list);
	return 0;
}

bool cg_cpuset_wanted(const struct lb_cgroup_limits *lim)
{
	return lim->cpus[0] || lim->mems[0] || lim->cpuset_cgroup;
}

/* The directory above path ("/a/b/c" -> "/a/b"), opened; false at the top. */
static bool cpuset_parent(const char *path, struct cg_dir *out)
{
	out->path = strdup(path);
	char *slash = out->path ? strrchr(out->path, '/') : NULL;
	if (!slash || slash == out->path) {
		errno = ENOENT;
		return false;
	}
	*slash = '\0';
	out->fd = open(out->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return out->fd >= 0;
}

static void cpuset_dir_close(struct cg_dir *d)
{
	if (d->fd >= 0)
		close(d->fd);
	free(d->path);
}

/* The file holding what a cgroup may use; v2 shows it only where cpuset is enabled for it. */
static const char *cpuset_effective_file(bool v2, bool mems)
{
	if (v2)
		return mems ? "cpuset.mems.effective" : "cpuset.cpus.effective";
	return mems ? "cpuset.effective_mems" : "cpuset.effective_cpus";
}

/* What the nearest ancestor of path that shows one lets its children use (on v2 a cgroup
 * whose parent did not enable cpuset has no cpuset files: its own parent's set applies). */
static int cpuset_available(const char *path, bool v2, bool mems, char **out, struct lb_err **err)
{
	const char *file = cpuset_effective_file(v2, mems);
	_cleanup_free_ char *at = strdup(path);
	if (!at)
		return lb_err_set(err, ENOMEM, "cgroup %s", path);
	for (;;) {
		_cleanup_(cpuset_dir_close) struct cg_dir p = {.fd = -1};
		if (!cpuset_parent(at, &p))
			return lb_err_set(err, errno ? errno : ENOENT, "no cpuset above %s", path);
		if (faccessat(p.fd, file, F_OK, 0) == 0)
			return cg_read(&p, file, out, err);
		free(at);
		at = LB_TAKE_PTR(p.path);
	}
}

int cg_cpuset_within_parent(const struct cg_dir *d, bool v2, bool mems, const char *list,
			    struct lb_err **err)
{
	_cleanup_free_ char *avail = NULL;
	struct cpumask want, have;
	const char *what = mems ? "mems" : "cpus";
	if (lb_cpuset_check(list, what, err) < 0 ||
	    cpuset_available(d->path, v2, mems, &avail, err) < 0)
		return -1;
	avail[strcspn(avail, "\n")] = '\0';
	if (!cpuset_parse(avail, &have))
		return lb_err_set(err, EINVAL, "cgroup above %s offers an unreadable %s '%s'",
				  d->path, what, avail);
	cpuset_parse(list, &want);
	for (size_t i = 0; i < CPUSET_WORDS; i++)
		if (want.w[i] & ~have.w[i])
			return lb_err_set(err, 0, "cpuset %s '%s' is not within the '%s' available",
					  what, list, avail);
	return 0;
}

/* d's cpus or mems: the asked list, else its parent's (a new v1 cpuset has none). */
static int cpuset_v1_fill(const struct cg_dir *d, const struct cg_dir *parent, const char *file,
			  const char *asked, struct lb_err **err)
{
	_cleanup_free_ char *inherited = NULL;
	if (*asked)
		return cg_write(d, file, asked, err);
	if (cg_read(parent, file, &inherited, err) < 0)
		return -1;
	inherited[strcspn(inherited, "\n")] = '\0';
	if (!inherited[0])
		return lb_err_set(err, 0, "cgroup %s has no cpus or mems to give", parent->path);
	return cg_write(d, file, inherited, err);
}

/* Depth bound of the walk up the hierarchy (a cgroup path has far fewer levels). */
#define CPUSET_MAX_DEPTH 64

static bool cpuset_v1_empty(const struct cg_dir *d, const char *file)
{
	_cleanup_free_ char *v = NULL;
	return cg_read(d, file, &v, NULL) == 0 && v[strspn(v, " \n")] == '\0';
}

/*
 * An ancestor someone else made (a slice made for systemd-style cgroupsPaths, a manager that
 * never set it) may hold empty cpus or mems, and then nothing below it takes a task: filled from
 * its own parent, top-down, as runc and crun do. Only an empty value is written, and only for a
 * sandbox that asked for cpus or mems: these are cgroups lbbox does not own, and the values
 * written there are never taken back.
 */
static int cpuset_v1_fill_empty(const struct cg_dir *d, int depth, struct lb_err **err)
{
	static const char *const files[] = {"cpuset.cpus", "cpuset.mems"};
	_cleanup_(cpuset_dir_close) struct cg_dir parent = {.fd = -1};
	bool ec = cpuset_v1_empty(d, files[0]), em = cpuset_v1_empty(d, files[1]);
	if (!ec && !em)
		return 0;
	if (depth >= CPUSET_MAX_DEPTH || !cpuset_parent(d->path, &parent))
		return lb_err_set(err, 0, "cgroup %s has no cpus or mems to give", d->path);
	if (cpuset_v1_fill_empty(&parent, depth + 1, err) < 0)
		return -1;
	for (size_t i = 0; i < 2; i++)
		if ((i ? em : ec) && cpuset_v1_fill(d, &parent, files[i], "", err) < 0)
			return -1;
	return 0;
}

int cg_cpuset_v1_make(struct cg_dir *d, const struct lb_cgroup_limits *lim, struct lb_err **err)
{
	_cleanup_(cpuset_dir_close) struct cg_dir parent = {.fd = -1};
	if (!cpuset_parent(d->path, &parent))
		return lb_err_set(err, errno, "open the cgroup above %s", d->path);
	bool asked = lim->cpus[0] || lim->mems[0];
	if (asked && cpuset_v1_fill_empty(&parent, 0, err) < 0)
		return -1;
	if ((lim->cpus[0] && cg_cpuset_within_parent(d, false, false, lim->cpus, err) < 0) ||
	    (lim->mems[0] && cg_cpuset_within_parent(d, false, true, lim->mems, err) < 0))
		return -1;
	if (cg_dir_make(d, err) < 0)
		return -1;
	/* a task joins only once both are set */
	if (cpuset_v1_fill(d, &parent, "cpuset.mems", lim->mems, err) < 0 ||
	    cpuset_v1_fill(d, &parent, "cpuset.cpus", lim->cpus, err) < 0)
		return -1;
	return 0;
}

static bool cpuset_v1_has(const struct cg_dir *d, const char *file)
{
	_cleanup_free_ char *v = NULL;
	return cg_read(d, file, &v, NULL) == 0 && v[strspn(v, " \n")] != '\0';
}

bool cg_cpuset_v1_can_give(const char *dir)
{
	struct cg_dir d = {.path = (char *)dir};
	d.fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	bool ok = d.fd >= 0 && cpuset_v1_has(&d, "cpuset.cpus") && cpuset_v1_has(&d, "cpuset.mems");
	if (d.fd >= 0)
		close(d.fd);
	return ok;
}

int cg_cpuset_v2_apply(const struct cg_dir *d, const struct lb_cgroup_limits *lim,
		       struct lb_err **err)
{
	if (lim->cpus[0] && (cg_cpuset_within_parent(d, true, false, lim->cpus, err) < 0 ||
			     cg_write(d, "cpuset.cpus", lim->cpus, err) < 0))
		return -1;
	if (lim->mems[0] && (cg_cpuset_within_parent(d, true, true, lim->mems, err) < 0 ||
			     cg_write(d, "cpuset.mems", lim->mems, err) < 0))
		return -1;
	return 0;
}
