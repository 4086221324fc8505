/*
 * /proc/self/mountinfo: every mount as its filesystem (device), the directory of that
 * filesystem it shows (root) and where (mount point). With it a path is named by what it is —
 * (device, path inside the filesystem) — whatever bind mounts make it appear under.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/mountinfo.h"
#include "lbbox/base/util.h"

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape(char *s)
{
	char *w = s;
	for (const char *r = s; *r; w++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '7' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w = (char)(((r[1] - '0') << 6) | ((r[2] - '0') << 3) | (r[3] - '0'));
			r += 4;
		} else {
			*w = *r++;
		}
	}
	*w = '\0';
}

/* "36 25 0:32 / /sys/fs/cgroup/memory rw,relatime shared:15 - cgroup cgroup rw,memory" */
static int parse_line(char *line, struct lb_mount_entry *e)
{
	char *f[5] = {0}, *save = NULL;
	char *t = strtok_r(line, " ", &save);
	unsigned maj, min;
	for (int i = 0; i < 5 && t; i++, t = strtok_r(NULL, " ", &save))
		f[i] = t;
	while (t && strcmp(t, "-")) /* optional fields end at "-" */
		t = strtok_r(NULL, " ", &save);
	char *fstype = strtok_r(NULL, " ", &save);
	strtok_r(NULL, " ", &save); /* source */
	char *super = strtok_r(NULL, " ", &save);
	if (!f[4] || !fstype || !super || sscanf(f[2], "%u:%u", &maj, &min) != 2)
		return 0;
	unescape(f[3]);
	unescape(f[4]);
	e->dev = makedev(maj, min);
	e->root = strdup(f[3]);
	e->mountpoint = strdup(f[4]);
	e->fstype = strdup(fstype);
	e->super = strdup(super);
	return e->root && e->mountpoint && e->fstype && e->super ? 1 : -1;
}

void lb_mountinfo_free(struct lb_mountinfo *mi)
{
	for (size_t i = 0; i < mi->n; i++) {
		free(mi->v[i].root);
		free(mi->v[i].mountpoint);
		free(mi->v[i].fstype);
		free(mi->v[i].super);
	}
	free(mi->v);
	*mi = (struct lb_mountinfo){0};
}

int lb_mountinfo_read(struct lb_mountinfo *out, struct lb_err **err)
{
	_cleanup_free_ char *buf = NULL;
	*out = (struct lb_mountinfo){0};
	if (lb_read_file("/proc/self/mountinfo", 1 << 24, &buf, NULL, err) < 0)
		return -1;
	char *save = NULL;
	for (char *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		if (out->n % 64 == 0) {
			struct lb_mount_entry *v = reallocarray(out->v, out->n + 64, sizeof(*v));
			if (!v)
				goto oom;
			out->v = v;
		}
		struct lb_mount_entry *e = &out->v[out->n];
		*e = (struct lb_mount_entry){0};
		int r = parse_line(l, e);
		if (r < 0) {
			out->n++; /* freed with the rest */
			goto oom;
		}
		out->n += (size_t)r;
	}
	return 0;
oom:
	lb_mountinfo_free(out);
	return lb_err_set(err, ENOMEM, "read /proc/self/mountinfo");
}

/* dir, or something below it: "/a" holds "/a" and "/a/b", not "/ab". */
static bool holds(const char *dir, const char *path)
{
	size_t n = strlen(dir);
	if (n == 1 && dir[0] == '/')
		return true;
	return !strncmp(dir, path, n) && (path[n] == '\0' || path[n] == '/');
}

/* The mount a canonical path is on: the one with the longest mount point holding it, the last
 * listed (the top of a stack) among equals. */
static const struct lb_mount_entry *mount_of(const struct lb_mountinfo *mi, const char *path)
{
	const struct lb_mount_entry *best = NULL;
	for (size_t i = 0; i < mi->n; i++)
		if (holds(mi->v[i].mountpoint, path) &&
		    (!best || strlen(mi->v[i].mountpoint) >= strlen(best->mountpoint)))
			best = &mi->v[i];
	return best;
}

/* path as (device, path inside the filesystem); *fs is malloc'ed. */
static bool locate(const struct lb_mountinfo *mi, const char *path, dev_t *dev, char **fs)
{
	const struct lb_mount_entry *m = mount_of(mi, path);
	if (!m)
		return false;
	const char *rest = path + (strcmp(m->mountpoint, "/") ? strlen(m->mountpoint) : 0);
	*dev = m->dev;
	if (asprintf(fs, "%s%s", strcmp(m->root, "/") || !*rest ? m->root : "", rest) < 0)
		return false;
	return true;
}

/* The same directory tree on one filesystem: one holds the other. */
static bool same_tree(dev_t da, const char *a, dev_t db, const char *b)
{
	return da == db && (holds(a, b) || holds(b, a));
}

bool lb_mountinfo_overlap(const struct lb_mountinfo *mi, const char *a, const char *b)
{
	_cleanup_free_ char *fa = NULL, *fb = NULL;
	dev_t da, db;
	if (!locate(mi, a, &da, &fa) || !locate(mi, b, &db, &fb))
		return true; /* not found in the table: refuse rather than guess */
	if (same_tree(da, fa, db, fb))
		return true;
	/* what is mounted below a (its binds take submounts along) or below b */
	for (size_t i = 0; i < mi->n; i++) {
		const struct lb_mount_entry *m = &mi->v[i];
		if (holds(a, m->mountpoint) && strcmp(a, m->mountpoint) &&
		    same_tree(m->dev, m->root, db, fb))
			return true;
		if (holds(b, m->mountpoint) && strcmp(b, m->mountpoint) &&
		    same_tree(m->dev, m->root, da, fa))
			return true;
	}
	return false;
}
