/*
 * A skill's files (§6.6): listing a directory of its package, reading and writing a text file.
 * Paths are relative to the package, normalised as posixpath.normpath does, must not climb out
 * of it, and are opened beneath it without following any symbolic link.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/box/text.h"
#include "skill_internal.h"

/* The skill's package directory (an O_PATH descriptor) and its name. */
struct pkg {
	int fd;
	char *name;
};

static void pkg_close(struct pkg *p)
{
	if (p->fd >= 0)
		close(p->fd);
	free(p->name);
}

static int pkg_open(struct lb_skill_store *st, const char *name, struct pkg *p, struct lb_err **err)
{
	json_t *skill = NULL;
	*p = (struct pkg){.fd = -1};
	if (skill_find(st, name, &skill, err) < 0)
		return -1;
	if (!skill)
		return lb_err_set(err, 0, "Skill \"%s\" not found", name);
	const char *rel =
	    skill_rel_of(st, json_string_value(json_object_get(skill, "package_root")));
	p->name = strdup(json_string_value(json_object_get(skill, "name")));
	p->fd = rel ? skill_openat(st->fd, rel, O_PATH | O_DIRECTORY, 0) : -1;
	json_decref(skill);
	if (p->fd < 0 || !p->name) {
		pkg_close(p);
		return lb_err_set(err, 0, "Skill \"%s\" package directory is unavailable", name);
	}
	return 0;
}

/* _resolve_skill_path's rules on the request's path: the normalised relative path, and the
 * path as given (stripped, "." when empty) for messages. */
static int rel_path(const char *path, char **norm, char **given, struct lb_err **err)
{
	*given = lb_box_py_strip_dup(path ? path : "");
	if (*given && !**given) {
		free(*given);
		*given = strdup(".");
	}
	if (!*given)
		return lb_err_set(err, ENOMEM, "path");
	if ((*given)[0] == '/')
		return lb_err_set(err, 0, "path must be relative to the skill package root");
	if (!(*norm = skill_normpath(*given)))
		return lb_err_set(err, ENOMEM, "path");
	if (!strncmp(*norm, "..", 2))
		return lb_err_set(err, 0, "path must stay within the skill package root");
	return 0;
}

static int open_error(int e, const char *what, const char *given, struct lb_err **err)
{
	if (e == ELOOP || e == EXDEV)
		return lb_err_set(err, 0, "path must not go through a symbolic link: %s", given);
	return lb_err_set(err, 0, "%s: %s", what, given);
}

static json_t *entry_json(int dirfd, const char *base, const char *name)
{
	struct stat st = {0};
	_cleanup_free_ char *path = NULL;
	bool dir = fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
	if (strcmp(base, ".") ? asprintf(&path, "%s/%s", base, name) < 0 : !(path = strdup(name)))
		return NULL;
	return json_pack("{s:s, s:s, s:b, s:o}", "path", path, "name", name, "is_dir", dir, "size",
			 dir ? json_null() : json_integer((json_int_t)st.st_size));
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in a directory (at most SKILL_MAX_DIR_LIST), sorted; hidden ones only if asked. */
static int dir_names(int fd, bool hidden, char ***out, size_t *n, struct lb_err **err)
{
	int dup_fd = dup(fd);
	_cleanup_closedir_ DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	size_t all = 0;
	struct dirent *e;
	if (!d) {
		if (dup_fd >= 0)
			close(dup_fd);
		return lb_err_set(err, errno, "list");
	}
	char **v = calloc(SKILL_MAX_DIR_LIST + 1, sizeof(*v));
	if (!v)
		return lb_err_set(err, ENOMEM, "list");
	*n = 0;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (++all > SKILL_MAX_DIR_LIST) {
			lb_strvfreep(&v);
			return lb_err_set(err, 0,
					  "Skill directory exceeds the configured entry "
					  "limit");
		}
		if ((hidden || e->d_name[0] != '.') && !(v[(*n)++] = strdup(e->d_name))) {
			lb_strvfreep(&v);
			return lb_err_set(err, ENOMEM, "list");
		}
	}
	qsort(v, *n, sizeof(*v), cmp_str);
	*out = v;
	return 0;
}

int lb_skill_list_files(struct lb_skill_store *st, const char *name, const char *path,
			bool include_hidden, int64_t max_entries, json_t **out, struct lb_err **err)
{
	_cleanup_free_ char *norm = NULL, *given = NULL;
	struct pkg p;
	char **names = NULL;
	size_t n = 0;
	if (max_entries <= 0)
		return lb_err_set(err, 0, "max_entries must be a positive integer");
	if (max_entries > SKILL_MAX_LIST_FILES)
		max_entries = SKILL_MAX_LIST_FILES;
	if (pkg_open(st, name, &p, err) < 0)
		return -1;
	int r = rel_path(path, &norm, &given, err);
	_cleanup_close_ int fd = r < 0 ? -1 : skill_openat(p.fd, norm, O_RDONLY | O_DIRECTORY, 0);
	if (r == 0 && fd < 0)
		r = open_error(errno, "Skill directory not found", given, err);
	if (r == 0)
		r = dir_names(fd, include_hidden, &names, &n, err);
	if (r == 0) {
		json_t *entries = json_array();
		for (size_t i = 0; i < n && i < (size_t)max_entries; i++)
			json_array_append_new(entries, entry_json(fd, norm, names[i]));
		*out = json_pack("{s:{s:s}, s:s, s:o, s:b}", "skill", "name", p.name, "base_path",
				 norm, "entries", entries, "truncated", n > (size_t)max_entries);
		lb_strvfreep(&names);
	}
	pkg_close(&p);
	return r;
}

int lb_skill_read_file(struct lb_skill_store *st, const char *name, const char *path, json_t **out,
		       struct lb_err **err)
{
	_cleanup_free_ char *norm = NULL, *given = NULL, *subject = NULL, *text = NULL;
	struct pkg p;
	struct stat s;
	size_t len;
	if (pkg_open(st, name, &p, err) < 0)
		return -1;
	int r = rel_path(path, &norm, &given, err);
	_cleanup_close_ int fd = r < 0 ? -1 : skill_openat(p.fd, norm, O_PATH, 0);
	if (r == 0 && (fd < 0 || fstat(fd, &s) < 0 || !S_ISREG(s.st_mode)))
		r = open_error(fd < 0 ? errno : 0, "Skill file not found", norm, err);
	if (r == 0 && asprintf(&subject, "Skill file %s", norm) < 0)
		r = lb_err_set(err, ENOMEM, "read");
	if (r == 0 && skill_read_text(p.fd, norm, subject, &text, &len, err) == 0)
		*out = json_pack("{s:{s:s}, s:s, s:s%}", "skill", "name", p.name, "path", norm,
				 "content", text, len);
	else
		r = -1;
	pkg_close(&p);
	return r;
}

/* The file's parent directories, made beneath the package (links refused). */
static int parents(int fd, const char *norm, struct lb_err **err)
{
	_cleanup_free_ char *dir = strdup(norm);
	char *slash = dir ? strrchr(dir, '/') : NULL;
	if (!dir)
		return lb_err_set(err, ENOMEM, "write");
	if (!slash)
		return 0;
	*slash = '\0';
	if (skill_mkdirs(fd, dir, NULL, err) < 0) {
		lb_err_free(err);
		return lb_err_set(err, 0, "path must not go through a symbolic link or a file: %s",
				  norm);
	}
	return 0;
}

int lb_skill_write_file(struct lb_skill_store *st, const char *name, const char *path,
			const char *content, size_t len, json_t **out, struct lb_err **err)
{
	_cleanup_free_ char *norm = NULL, *given = NULL;
	struct pkg p;
	if (pkg_open(st, name, &p, err) < 0)
		return -1;
	int r = rel_path(path, &norm, &given, err);
	if (r == 0 && len > LB_SKILL_TEXT_MAX)
		r = lb_err_set(err, 0, "Skill file %s exceeds the %d-byte limit", norm,
			       LB_SKILL_TEXT_MAX);
	if (r == 0 && !strcmp(norm, "."))
		r = lb_err_set(err, 0, "path must name a file in the skill package");
	if (r == 0)
		r = parents(p.fd, norm, err);
	if (r == 0) {
		_cleanup_close_ int fd =
		    skill_openat(p.fd, norm, O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK, 0644);
		struct stat s;
		if (fd < 0)
			r = open_error(errno, "cannot write the skill file", norm, err);
		else if (fstat(fd, &s) < 0 || !S_ISREG(s.st_mode)) /* a FIFO opened, say */
			r = lb_err_set(
			    err, 0, "cannot write the skill file: %s is not a regular file", norm);
		else if (lb_write_all(fd, content, len) < 0)
			r = lb_err_set(err, errno, "write %s", norm);
	}
	if (r == 0)
		*out = json_pack("{s:{s:s}, s:s, s:I}", "skill", "name", p.name, "path", norm,
				 "bytes_written", (json_int_t)len);
	pkg_close(&p);
	return r;
}
