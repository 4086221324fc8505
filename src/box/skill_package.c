/*
 * Skill packages: finding them (breadth-first, bounded in depth, packages and entries read) and
 * loading one into LangBot's skill object (§6.6).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/box/text.h"
#include "skill_internal.h"
#include "text_internal.h"

#define SKILL_NAME_MAX 64

int lb_skill_name_check(const char *raw, char **out, struct lb_err **err)
{
	_cleanup_free_ char *name = lb_box_py_strip_dup(raw ? raw : "");
	size_t pos = 0, len, dashes = 0;
	if (!name)
		return lb_err_set(err, ENOMEM, "skill name");
	len = strlen(name);
	if (!len)
		return lb_err_set(err, 0, "Skill name is required");
	while (pos < len) {
		uint32_t cp = lb_box_utf8_next(name, len, &pos);
		dashes += cp == '-' || cp == '_';
		if (!lb_box_py_isalnum(cp) && cp != '-' && cp != '_')
			return lb_err_set(err, 0,
					  "Skill name can only contain letters, numbers, "
					  "hyphens and underscores");
	}
	/* "".isalnum() is False: a name of only '-' and '_' has nothing alphanumeric */
	if (dashes == lb_box_utf8_count(name, len))
		return lb_err_set(err, 0,
				  "Skill name can only contain letters, numbers, hyphens "
				  "and underscores");
	if (lb_box_utf8_count(name, len) > SKILL_NAME_MAX)
		return lb_err_set(err, 0, "Skill name cannot exceed 64 characters");
	*out = name;
	name = NULL;
	return 0;
}

void skill_found_free(struct skill_found *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].rel);
	free(v);
}

/* SKILL.md, else skill.md: a regular file (a link is not an entry). */
static const char *entry_of(int dirfd)
{
	static const char *const names[] = {"SKILL.md", "skill.md"};
	struct stat st;
	for (size_t i = 0; i < 2; i++)
		if (fstatat(dirfd, names[i], &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
			return names[i];
	return NULL;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct walk {
	struct skill_found *found;
	size_t n_found;
	char **queue; /* rel paths, breadth-first */
	int *depth;
	size_t head, tail, cap;
	size_t scanned;
	bool skip_tenants; /* the legacy store: its top-level tenants/ is not searched */
};

static int enqueue(struct walk *w, char *rel, int depth)
{
	if (w->tail == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 64;
		char **q = realloc(w->queue, cap * sizeof(*q));
		if (q)
			w->queue = q;
		int *d = q ? realloc(w->depth, cap * sizeof(*d)) : NULL;
		if (!d) {
			free(rel);
			return -1;
		}
		w->depth = d;
		w->cap = cap;
	}
	w->queue[w->tail] = rel;
	w->depth[w->tail++] = depth;
	return 0;
}

/* The subdirectories of rel (open as fd), sorted, into the queue. */
static int children(struct walk *w, int fd, const char *rel, int depth, struct lb_err **err)
{
	int dup_fd = dup(fd);
	_cleanup_closedir_ DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	struct stat st;
	int r = 0;
	if (!d) {
		if (dup_fd >= 0)
			close(dup_fd);
		return 0; /* an unreadable directory is skipped, as os.scandir's OSError */
	}
	while (r == 0 && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (w->skip_tenants && !strcmp(rel, ".") && !strcmp(e->d_name, "tenants"))
			continue;
		if (++w->scanned > SKILL_MAX_SCANNED)
			r = lb_err_set(err, 0,
				       "Skill discovery exceeded the configured entry limit");
		else if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			 S_ISDIR(st.st_mode)) {
			if (n == cap) {
				cap = cap ? cap * 2 : 16;
				char **v = realloc(names, cap * sizeof(*v));
				if (!v) {
					r = lb_err_set(err, ENOMEM, "discovery");
					break;
				}
				names = v;
			}
			if (!(names[n] = strdup(e->d_name)))
				r = lb_err_set(err, ENOMEM, "discovery");
			else
				n++;
		}
	}
	if (names)
		qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n; i++) {
		char *sub = NULL;
		if (r == 0 &&
		    (asprintf(&sub, "%s/%s", rel, names[i]) < 0 ||
		     enqueue(w, !strcmp(rel, ".") ? strcpy(sub, names[i]) : sub, depth + 1) < 0))
			r = lb_err_set(err, ENOMEM, "discovery");
		free(names[i]);
	}
	free(names);
	return r;
}

static int visit(struct walk *w, int dirfd, int max_depth, struct lb_err **err)
{
	char *rel = w->queue[w->head];
	int depth = w->depth[w->head++];
	_cleanup_close_ int fd = skill_openat(dirfd, rel, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		return 0;
	const char *entry = entry_of(fd);
	if (entry) {
		struct skill_found *v = realloc(w->found, (w->n_found + 1) * sizeof(*v));
		if (!v)
			return lb_err_set(err, ENOMEM, "discovery");
		w->found = v;
		v[w->n_found++] = (struct skill_found){.rel = strdup(rel), .entry = entry};
		if (!v[w->n_found - 1].rel)
			return lb_err_set(err, ENOMEM, "discovery");
		if (w->n_found > SKILL_MAX_FOUND)
			return lb_err_set(err, 0,
					  "Skill discovery exceeded the configured package limit");
		return 0;
	}
	return depth < max_depth ? children(w, fd, rel, depth, err) : 0;
}

int skill_discover(int dirfd, const char *rel, int max_depth, bool skip_tenants,
		   struct skill_found **out, size_t *n, struct lb_err **err)
{
	struct walk w = {.skip_tenants = skip_tenants};
	char *start = strdup(rel);
	int r = start && enqueue(&w, start, 0) == 0 ? 0 : lb_err_set(err, ENOMEM, "discovery");
	while (r == 0 && w.head < w.tail)
		r = visit(&w, dirfd, max_depth, err);
	for (size_t i = 0; i < w.tail; i++)
		free(w.queue[i]);
	free(w.queue);
	free(w.depth);
	if (r < 0) {
		skill_found_free(w.found, w.n_found);
		return -1;
	}
	*out = w.found;
	*n = w.n_found;
	return 0;
}

bool skill_utf8_valid(const char *s, size_t n)
{
	size_t out_len;
	_cleanup_free_ char *fixed = lb_box_utf8_replace(s, n, &out_len);
	return fixed && out_len == n && !memcmp(fixed, s, n);
}

int skill_read_text(int dirfd, const char *rel, const char *subject, char **out, size_t *len,
		    struct lb_err **err)
{
	_cleanup_close_ int fd = skill_openat(dirfd, rel, O_RDONLY | O_NONBLOCK, 0);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return lb_err_set(err, errno, "%s", subject);
	if (!S_ISREG(st.st_mode))
		return lb_err_set(err, 0, "%s is not a regular file", subject);
	if (st.st_size > LB_SKILL_TEXT_MAX)
		return lb_err_set(err, 0, "%s exceeds the %d-byte limit", subject,
				  LB_SKILL_TEXT_MAX);
	_cleanup_free_ char *buf = malloc(LB_SKILL_TEXT_MAX + 2);
	if (!buf)
		return lb_err_set(err, ENOMEM, "%s", subject);
	ssize_t n = lb_read_all(fd, buf, LB_SKILL_TEXT_MAX + 1);
	if (n < 0)
		return lb_err_set(err, errno, "%s", subject);
	if (n > LB_SKILL_TEXT_MAX)
		return lb_err_set(err, 0, "%s exceeds the %d-byte limit", subject,
				  LB_SKILL_TEXT_MAX);
	if (!skill_utf8_valid(buf, (size_t)n))
		return lb_err_set(err, 0, "%s is not valid UTF-8 text", subject);
	buf[n] = '\0';
	*out = buf;
	*len = (size_t)n;
	buf = NULL;
	return 0;
}

/* datetime.fromtimestamp(t, tz=timezone.utc).isoformat() */
static json_t *iso_time(const struct timespec *ts)
{
	struct tm tm;
	char buf[64];
	time_t t = ts->tv_sec;
	gmtime_r(&t, &tm);
	size_t n = strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	long us = ts->tv_nsec / 1000;
	if (us)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, ".%06ld", us);
	snprintf(buf + n, sizeof(buf) - n, "+00:00");
	return json_string(buf);
}

static bool python_project(int fd)
{
	static const char *const files[] = {"requirements.txt", "pyproject.toml", "setup.py",
					    "setup.cfg"};
	struct stat st;
	for (size_t i = 0; i < 4; i++)
		if (fstatat(fd, files[i], &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
			return true;
	return fstatat(fd, ".venv", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

static json_t *stripped(const char *s)
{
	_cleanup_free_ char *t = lb_box_py_strip_dup(s ? s : "");
	return t ? json_string(t) : NULL;
}

/* The package's own directory name (its path's last component). */
static const char *dir_name(const char *base, const char *rel)
{
	const char *p = strcmp(rel, ".") ? rel : base;
	const char *slash = strrchr(p, '/');
	return slash ? slash + 1 : p;
}

int skill_load(int dirfd, const char *base, const char *rel, const char *entry, json_t **out,
	       struct lb_err **err)
{
	_cleanup_close_ int fd = skill_openat(dirfd, rel, O_RDONLY | O_DIRECTORY, 0);
	_cleanup_free_ char *text = NULL, *name = NULL, *subject = NULL, *root = NULL;
	struct lb_skill_meta m = {0};
	struct stat st;
	size_t len;
	if (fd < 0)
		return lb_err_set(err, errno, "skill package %s", rel);
	if (asprintf(&subject, "Skill entry file %s", entry) < 0 ||
	    asprintf(&root, "%s%s%s", base, strcmp(rel, ".") ? "/" : "",
		     strcmp(rel, ".") ? rel : "") < 0)
		return lb_err_set(err, ENOMEM, "skill");
	if (skill_read_text(fd, entry, subject, &text, &len, err) < 0 ||
	    lb_skill_meta_parse(text, len, &m, err) < 0)
		return -1;
	int r = lb_skill_name_check(m.name ? m.name : dir_name(base, rel), &name, err);
	if (r == 0 && fstatat(fd, entry, &st, AT_SYMLINK_NOFOLLOW) < 0)
		r = lb_err_set(err, errno, "%s", subject);
	if (r == 0) {
		*out = json_object();
		json_object_set_new(*out, "name", json_string(name));
		json_object_set_new(
		    *out, "display_name",
		    stripped(m.display_name && *m.display_name ? m.display_name : name));
		json_object_set_new(*out, "description", stripped(m.description));
		json_object_set_new(*out, "instructions", json_string(m.instructions));
		json_object_set_new(*out, "package_root", json_string(root));
		json_object_set_new(*out, "entry_file", json_string(entry));
		json_object_set_new(*out, "python_project", json_boolean(python_project(fd)));
		json_object_set_new(*out, "created_at", iso_time(&st.st_ctim));
		json_object_set_new(*out, "updated_at", iso_time(&st.st_mtim));
	}
	lb_skill_meta_free(&m);
	return r;
}
