/*
 * Whiteouts, per the OCI image layer spec. A layer unpacked into its own directory (an overlayfs
 * lower layer) gets overlayfs's representation: ".wh.NAME" becomes a 0/0 character device NAME,
 * ".wh..wh..opq" an "overlay.opaque" xattr on its directory; the kernel then hides the lower
 * layers' entries, and only theirs, just as the spec asks. In apply mode (the copy fallback, one
 * merged tree) the same meaning is applied by deleting, and the paths this layer itself wrote are
 * spared: an opaque marker hides the lower children of its directory wherever it sits in the tar.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "unpack_internal.h"
#include "lbbox/base/cleanup.h"

#define WH_PREFIX ".wh."
#define WH_META	  ".wh..wh." /* aufs bookkeeping (".wh..wh.plnk", ...) */
#define WH_OPAQUE ".wh..wh..opq"

bool unpack_is_whiteout(const char *path)
{
	return strncmp(unpack_basename(path), WH_PREFIX, strlen(WH_PREFIX)) == 0;
}

static int record_opaque(struct unpack_ctx *c, const char *dir, struct lb_err **err)
{
	if (c->nopaque == c->capopaque) {
		size_t cap = c->capopaque ? c->capopaque * 2 : 16;
		char **n = reallocarray(c->opaque, cap, sizeof(*n));
		if (!n)
			return lb_err_set(err, ENOMEM, "record opaque directory");
		c->opaque = n;
		c->capopaque = cap;
	}
	if (!(c->opaque[c->nopaque] = strdup(dir)))
		return lb_err_set(err, ENOMEM, "record opaque directory");
	c->nopaque++;
	return 0;
}

/* Overlay mode: the whiteout device for NAME in the layer directory. */
static int overlay_whiteout(struct unpack_ctx *c, const char *target, struct lb_err **err)
{
	int pfd;

	if (unpack_parent(c, target, true, &pfd, err) < 0)
		return -1;
	const char *name = unpack_basename(target);
	/* only an earlier whiteout of the same name can be there: this layer's own NAME is spared
	 */
	if (unpack_remove_at(pfd, name, target, err) < 0)
		return -1;
	if (mknodat(pfd, name, S_IFCHR | 0, makedev(0, 0)) < 0)
		return lb_err_set(err, errno,
				  "create the overlayfs whiteout (0/0 character device) for %s",
				  target);
	return 0;
}

static int apply_whiteout(struct unpack_ctx *c, const char *target, struct lb_err **err)
{
	int pfd;

	if (unpack_parent(c, target, false, &pfd, err) < 0)
		return -1;
	if (pfd < 0)
		return 0; /* the directory is not there: nothing to hide */
	return unpack_remove_at(pfd, unpack_basename(target), target, err);
}

int unpack_whiteout(struct unpack_ctx *c, const char *path, struct lb_err **err)
{
	const char *base = unpack_basename(path);
	const char *name = base + strlen(WH_PREFIX);
	size_t dirlen = base > path ? (size_t)(base - path - 1) : 0;

	if (!*name)
		return lb_err_set(err, 0, "invalid bare whiteout '%s' (no name after .wh.)", path);
	if (strcmp(base, WH_OPAQUE) == 0) {
		_cleanup_free_ char *dir = strndup(path, dirlen);
		if (!dir || record_opaque(c, dir, err) < 0)
			return lb_err_set(err, ENOMEM, "whiteout %s", path);
		int pfd;
		/* the directory itself belongs in the layer, marked at the end */
		if (c->flags & LB_UNPACK_APPLY)
			return 0;
		if (unpack_parent(c, path, true, &pfd, err) < 0)
			return -1;
		return unpack_pathset_add(&c->written, dir) < 0
			   ? lb_err_set(err, ENOMEM, "whiteout %s", path)
			   : 0;
	}
	if (strncmp(base, WH_META, strlen(WH_META)) == 0) {
		c->res.skipped++;
		return 0;
	}
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return lb_err_set(
		    err, 0, "invalid whiteout '%s': it names the layer root or a parent", path);
	_cleanup_free_ char *target = NULL;
	if (asprintf(&target, "%.*s%s%s", (int)dirlen, path, dirlen ? "/" : "", name) < 0)
		return lb_err_set(err, ENOMEM, "whiteout %s", path);
	if (unpack_pathset_has(&c->written, target))
		return 0; /* hides lower layers only, never this layer's own entry */
	if (c->flags & LB_UNPACK_APPLY)
		return apply_whiteout(c, target, err);
	return overlay_whiteout(c, target, err);
}

/* Apply mode: deletes everything under dfd that this layer did not write. */
static int prune(struct unpack_ctx *c, int dfd, const char *dir, struct lb_err **err)
{
	_cleanup_strv_ char **names = NULL;
	size_t n = 0;

	int dup_fd = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
	_cleanup_closedir_ DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	if (!d) {
		if (dup_fd >= 0)
			close(dup_fd);
		return lb_err_set(err, errno, "read directory %s", dir);
	}
	for (struct dirent *de; (de = readdir(d));) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		char **nn = reallocarray(names, n + 2, sizeof(*nn));
		if (!nn)
			return lb_err_set(err, ENOMEM, "read directory %s", dir);
		names = nn;
		names[n + 1] = NULL;
		if (!(names[n] = strdup(de->d_name)))
			return lb_err_set(err, ENOMEM, "read directory %s", dir);
		n++;
	}
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *child = NULL;
		if (asprintf(&child, "%s%s%s", dir, *dir ? "/" : "", names[i]) < 0)
			return lb_err_set(err, ENOMEM, "prune %s", dir);
		if (!unpack_pathset_has(&c->written, child)) {
			if (unpack_remove_at(dfd, names[i], child, err) < 0)
				return -1;
			continue;
		}
		_cleanup_close_ int cfd =
		    openat(dfd, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cfd >= 0 && prune(c, cfd, child, err) < 0)
			return -1;
	}
	return 0;
}

static int finish_one(struct unpack_ctx *c, const char *dir, struct lb_err **err)
{
	_cleanup_close_ int fd =
	    unpack_openat2(c->root_fd, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);

	if (c->flags & LB_UNPACK_APPLY) {
		if (fd < 0 && (errno == ENOENT || errno == ENOTDIR || errno == ELOOP))
			return 0;
		if (fd < 0)
			return lb_err_set(err, errno, "open opaque directory /%s", dir);
		return prune(c, fd, dir, err);
	}
	if (fd < 0)
		return lb_err_set(err, errno, "open opaque directory /%s", dir);
	const char *xattr =
	    (c->flags & LB_UNPACK_USERXATTR) ? "user.overlay.opaque" : "trusted.overlay.opaque";
	if (fsetxattr(fd, xattr, "y", 1, 0) < 0)
		return lb_err_set(err, errno, "mark /%s opaque (%s)", dir, xattr);
	return 0;
}

int unpack_opaque_finish(struct unpack_ctx *c, struct lb_err **err)
{
	for (size_t i = 0; i < c->nopaque; i++)
		if (finish_one(c, c->opaque[i], err) < 0)
			return -1;
	return 0;
}
