/*
 * File operations of the skill store, all relative to a directory descriptor and never through
 * a symbolic link: the store is written by the skills' authors, who could plant one anywhere.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"
#include "lbbox/box/text.h"
#include "skill_internal.h"

bool lb_skill_is_blank(const char *s)
{
	return lb_box_py_is_blank(s);
}

int skill_openat(int dirfd, const char *rel, int flags, mode_t mode)
{
	struct open_how how = {
	    .flags = (uint64_t)(flags | O_CLOEXEC),
	    .mode = (flags & O_CREAT) ? mode : 0,
	    .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	return (int)syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));
}

int skill_mkdirs(int dirfd, const char *rel, size_t *made, struct lb_err **err)
{
	_cleanup_free_ char *copy = strdup(rel);
	_cleanup_close_ int cur = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	if (!copy || cur < 0)
		return lb_err_set(err, copy ? errno : ENOMEM, "mkdir");
	/* one component at a time below the last one's descriptor: linear in the depth */
	for (char *c = copy; *c;) {
		char *slash = strchr(c, '/');
		if (slash)
			*slash = '\0';
		if (strcmp(c, ".")) {
			if (mkdirat(cur, c, 0755) == 0) {
				if (made)
					++*made;
			} else if (errno != EEXIST) {
				return lb_err_set(err, errno, "create %s", copy);
			}
			/* whatever is there must be a directory reached without a link */
			int next = skill_openat(cur, c, O_PATH | O_DIRECTORY, 0);
			if (next < 0)
				return lb_err_set(err, errno == ELOOP ? ENOTDIR : errno,
						  "create %s", copy);
			close(cur);
			cur = next;
		}
		if (!slash)
			break;
		*slash = '/';
		c = slash + 1;
	}
	return 0;
}

int skill_rmtree(int dirfd, const char *rel, struct lb_err **err)
{
	if (unlinkat(dirfd, rel, 0) == 0 || errno == ENOENT)
		return 0;
	_cleanup_close_ int fd = skill_openat(dirfd, rel, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0 || lb_rm_children_fd(fd) < 0 || unlinkat(dirfd, rel, AT_REMOVEDIR) < 0)
		return errno == ENOENT ? 0 : lb_err_set(err, errno, "remove %s", rel);
	return 0;
}

static int copy_file(int sfd, const char *name, int dfd, mode_t mode)
{
	struct stat st;
	_cleanup_close_ int in = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	_cleanup_close_ int out =
	    in < 0 || fstat(in, &st) < 0 || !S_ISREG(st.st_mode)
		? -1
		: openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			 mode & 0755);
	char buf[65536];
	ssize_t n;
	if (out < 0)
		return -1;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (lb_write_all(out, buf, (size_t)n) < 0)
			return -1;
	return n < 0 ? -1 : 0;
}

static int copy_dir(int sfd, int dfd, int depth)
{
	_cleanup_closedir_ DIR *d = NULL;
	int dup_fd = dup(sfd);
	if (dup_fd < 0 || !(d = fdopendir(dup_fd))) {
		if (dup_fd >= 0)
			close(dup_fd);
		return -1;
	}
	struct dirent *e;
	struct stat st;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fstatat(sfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return -1;
		if (S_ISREG(st.st_mode)) {
			if (copy_file(sfd, e->d_name, dfd, st.st_mode) < 0)
				return -1;
			continue;
		}
		if (!S_ISDIR(st.st_mode))
			continue; /* only files and directories are a package's */
		if (depth > 256 || mkdirat(dfd, e->d_name, 0755) < 0)
			return depth > 256 ? (errno = ELOOP, -1) : -1;
		_cleanup_close_ int s =
		    openat(sfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		_cleanup_close_ int t =
		    openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (s < 0 || t < 0 || copy_dir(s, t, depth + 1) < 0)
			return -1;
	}
	return 0;
}

int skill_copytree(int sfd, const char *src, int dfd, const char *dst, bool *created,
		   struct lb_err **err)
{
	_cleanup_close_ int s = skill_openat(sfd, src, O_RDONLY | O_DIRECTORY, 0);
	*created = false;
	if (s < 0)
		return lb_err_set(err, errno, "copy %s", src);
	if (mkdirat(dfd, dst, 0755) < 0)
		return lb_err_set(err, errno, "create %s", dst);
	*created = true;
	_cleanup_close_ int t = skill_openat(dfd, dst, O_RDONLY | O_DIRECTORY, 0);
	if (t < 0 || copy_dir(s, t, 0) < 0)
		return lb_err_set(err, errno, "copy into %s", dst);
	return 0;
}

/* The last component of out[0..*w) is "..": nothing left to go back over. */
static bool ends_up(const char *out, const char *w)
{
	return w - out >= 2 && !memcmp(w - 2, "..", 2) && (w - out == 2 || w[-3] == '/');
}

char *skill_normpath(const char *path)
{
	char *out = malloc(strlen(path) + 2), *w = out;
	if (!out)
		return NULL;
	*w = '\0';
	for (const char *c = path; *c;) {
		size_t n = strcspn(c, "/");
		if (n == 2 && !memcmp(c, "..", 2) && w > out && !ends_up(out, w)) {
			char *slash = strrchr(out, '/');
			w = slash ? slash : out; /* one component back */
			*w = '\0';
		} else if (n && !(n == 1 && *c == '.')) {
			if (w > out)
				*w++ = '/';
			memcpy(w, c, n);
			w += n;
			*w = '\0';
		}
		c += n;
		c += strspn(c, "/");
	}
	if (w == out)
		strcpy(out, ".");
	return out;
}

char *skill_norm_source(const char *path)
{
	_cleanup_free_ char *s = lb_box_py_strip_dup(path ? path : "");
	if (!s)
		return NULL;
	for (char *c = s; *c; c++)
		if (*c == '\\')
			*c = '/';
	char *start = s + strspn(s, "/");
	size_t n = strlen(start);
	while (n && start[n - 1] == '/')
		n--;
	return strndup(start, n);
}

int lb_skill_text(const json_t *v, const char *what, char **out, struct lb_err **err)
{
	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (json_is_string(v))
		*out = strndup(json_string_value(v), json_string_length(v));
	else if (json_is_boolean(v))
		*out = strdup(json_is_true(v) ? "True" : "False");
	else if (json_is_integer(v))
		asprintf(out, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		asprintf(out, "%.17g", json_real_value(v));
	else
		return lb_err_set(err, 0, "%s must be a string", what);
	return *out ? 0 : lb_err_set(err, ENOMEM, "%s", what);
}
