/*
 * Path handling for the layer unpack. Tar paths are cleaned lexically first ("../" at the top
 * stays at the root, as docker and containerd do), then every parent directory is opened with
 * openat2(RESOLVE_IN_ROOT): a symlink in a parent ("etc -> /etc", "up -> ../..") resolves as it
 * would inside the container, never to the host. The entry itself is then created with *at()
 * calls relative to that parent fd and never followed, so the kernel, not string checks, keeps
 * every write inside the root.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "unpack_internal.h"
#include "lbbox/base/cleanup.h"

int unpack_clean_path(const char *in, uint64_t max, char **out, struct lb_err **err)
{
	size_t n = strlen(in);

	if (n > max)
		return lb_err_set(err, 0, "tar entry path longer than %llu bytes",
				  (unsigned long long)max);
	char *buf = malloc(n + 1);
	if (!buf)
		return lb_err_set(err, ENOMEM, "clean tar path");
	size_t len = 0;
	for (const char *p = in; *p;) {
		size_t c = strcspn(p, "/");
		if (c == 2 && p[0] == '.' && p[1] == '.') {
			while (len > 0 && buf[len - 1] != '/')
				len--;
			if (len > 0)
				len--;
		} else if (c > 0 && !(c == 1 && p[0] == '.')) {
			if (len > 0)
				buf[len++] = '/';
			memcpy(buf + len, p, c);
			len += c;
		}
		p += c;
		while (*p == '/')
			p++;
	}
	buf[len] = '\0';
	*out = buf;
	return 0;
}

int unpack_openat2(int root_fd, const char *path, int flags)
{
	struct open_how how = {
	    .flags = (uint64_t)(flags | O_CLOEXEC),
	    .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	return (int)syscall(SYS_openat2, root_fd, *path ? path : ".", &how, sizeof(how));
}

const char *unpack_basename(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/* Creates the missing directories of dir one at a time, each resolved from the root again. */
static int create_dirs(int root_fd, const char *dir, struct lb_err **err)
{
	_cleanup_free_ char *prefix = strdup(dir);
	if (!prefix)
		return lb_err_set(err, ENOMEM, "create %s", dir);
	_cleanup_close_ int prev = unpack_openat2(root_fd, "", O_PATH | O_DIRECTORY);
	for (char *p = prefix;;) {
		char *slash = strchr(p, '/');
		if (slash)
			*slash = '\0';
		int fd = unpack_openat2(root_fd, prefix, O_PATH | O_DIRECTORY);
		if (fd < 0 && errno == ENOENT) {
			if (prev < 0 || mkdirat(prev, unpack_basename(prefix), 0755) < 0)
				return lb_err_set(err, errno == EEXIST ? ENOTDIR : errno,
						  "create directory %s in the layer (a symlink "
						  "there may point to a missing target)",
						  prefix);
			fd = unpack_openat2(root_fd, prefix, O_PATH | O_DIRECTORY);
		}
		if (fd < 0)
			return lb_err_set(err, errno, "open directory %s in the layer", prefix);
		close(prev);
		prev = fd;
		if (!slash)
			return 0;
		*slash = '/';
		p = slash + 1;
	}
}

void unpack_parent_drop(struct unpack_ctx *c)
{
	if (c->cache_fd >= 0)
		close(c->cache_fd);
	c->cache_fd = -1;
	free(c->cache_path);
	c->cache_path = NULL;
}

int unpack_parent(struct unpack_ctx *c, const char *path, bool create, int *fd, struct lb_err **err)
{
	const char *base = unpack_basename(path);
	size_t plen = base > path ? (size_t)(base - path - 1) : 0;

	if (c->cache_path && strlen(c->cache_path) == plen &&
	    strncmp(c->cache_path, path, plen) == 0) {
		*fd = c->cache_fd;
		return 0;
	}
	_cleanup_free_ char *parent = strndup(path, plen);
	if (!parent)
		return lb_err_set(err, ENOMEM, "open parent of %s", path);
	int pfd = unpack_openat2(c->root_fd, parent, O_PATH | O_DIRECTORY);
	if (pfd < 0 && errno == ENOENT && !create) {
		*fd = -1;
		return 0;
	}
	if (pfd < 0 && errno == ENOENT) {
		if (create_dirs(c->root_fd, parent, err) < 0)
			return -1;
		pfd = unpack_openat2(c->root_fd, parent, O_PATH | O_DIRECTORY);
	}
	if (pfd < 0)
		return lb_err_set(err, errno, "open parent directory '%s' inside the layer",
				  parent);
	unpack_parent_drop(c);
	c->cache_fd = pfd;
	c->cache_path = LB_TAKE_PTR(parent);
	*fd = pfd;
	return 0;
}

/* One pass over a directory's entries; *removed says whether anything went (readdir while
 * unlinking may skip names, so the caller repeats until a pass removes nothing). */
static int remove_pass(int dfd, bool *removed, const char *what, struct lb_err **err)
{
	int dup_fd = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
	if (dup_fd < 0)
		return lb_err_set(err, errno, "remove %s", what);
	_cleanup_closedir_ DIR *d = fdopendir(dup_fd);
	if (!d) {
		close(dup_fd);
		return lb_err_set(err, errno, "remove %s", what);
	}
	rewinddir(d);
	*removed = false;
	for (struct dirent *de; (de = readdir(d));) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (unpack_remove_at(dfd, de->d_name, what, err) < 0)
			return -1;
		*removed = true;
	}
	return 0;
}

int unpack_remove_at(int dirfd, const char *name, const char *what, struct lb_err **err)
{
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : lb_err_set(err, errno, "remove %s", what);
	if (!S_ISDIR(st.st_mode)) {
		if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
			return lb_err_set(err, errno, "remove %s", what);
		return 0;
	}
	_cleanup_close_ int fd =
	    openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return lb_err_set(err, errno, "remove %s", what);
	for (bool removed = true; removed;)
		if (remove_pass(fd, &removed, what, err) < 0)
			return -1;
	if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0)
		return lb_err_set(err, errno, "remove %s", what);
	return 0;
}
