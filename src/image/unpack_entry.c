/*
 * One tar entry onto disk: created with *at() calls relative to its parent directory fd (opened
 * inside the root by unpack_parent), the final component never followed. Then ownership, mode,
 * xattrs and times, in that order: chown clears setuid bits and security.capability, so those are
 * set after it; a directory's mode and times wait until the whole layer is written.
 */
#include <archive.h>
#include <archive_entry.h>
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

/* Where an entry goes: its parent directory fd and its name in there. */
struct dest {
	int pfd;
	const char *name;
	const char *path; /* root-relative, for messages */
};

static mode_t entry_mode(const struct unpack_ctx *c, struct archive_entry *e)
{
	mode_t mode = archive_entry_perm(e) & 07777;
	if (c->flags & LB_UNPACK_ROOTLESS)
		mode &= ~(mode_t)(S_ISUID | S_ISGID);
	return mode;
}

static void entry_times(struct archive_entry *e, struct timespec ts[2])
{
	ts[1] = (struct timespec){.tv_nsec = UTIME_OMIT};
	if (archive_entry_mtime_is_set(e))
		ts[1] = (struct timespec){archive_entry_mtime(e), archive_entry_mtime_nsec(e)};
	ts[0] = ts[1];
	if (archive_entry_atime_is_set(e))
		ts[0] = (struct timespec){archive_entry_atime(e), archive_entry_atime_nsec(e)};
}

/* Unprivileged unpacks keep going without the ownership or xattrs they cannot set. */
static int meta_fail(const struct unpack_ctx *c, struct lb_err **err, const char *what,
		     const char *path)
{
	if (c->flags & LB_UNPACK_ROOTLESS)
		return 0;
	return lb_err_set(err, errno, "%s %s", what, path);
}

static int set_owner(const struct unpack_ctx *c, const struct dest *d, struct archive_entry *e,
		     struct lb_err **err)
{
	if (fchownat(d->pfd, d->name, (uid_t)archive_entry_uid(e), (gid_t)archive_entry_gid(e),
		     AT_SYMLINK_NOFOLLOW) < 0)
		return meta_fail(c, err, "chown", d->path);
	return 0;
}

/* user.* and security.capability always; trusted.* only with privilege. Overlay's own markers
 * (trusted.overlay.*, user.overlay.*) never come from a layer: they could forge whiteouts,
 * opaque directories or redirects. */
static bool xattr_allowed(const struct unpack_ctx *c, const char *name)
{
	if (strncmp(name, "trusted.overlay.", 16) == 0 || strncmp(name, "user.overlay.", 13) == 0)
		return false;
	if (strncmp(name, "user.", 5) == 0 || strcmp(name, "security.capability") == 0)
		return true;
	return c->may_trusted && strncmp(name, "trusted.", 8) == 0;
}

static int set_xattrs(const struct unpack_ctx *c, int fd, const char *path, struct archive_entry *e,
		      struct lb_err **err)
{
	const char *name;
	const void *value;
	size_t size;

	if (archive_entry_xattr_reset(e) == 0)
		return 0;
	while (archive_entry_xattr_next(e, &name, &value, &size) == ARCHIVE_OK) {
		if (!name || !xattr_allowed(c, name))
			continue;
		if (fsetxattr(fd, name, value, size, 0) < 0 && meta_fail(c, err, "set xattr", path))
			return lb_err_wrap(err, "%s", name);
	}
	return 0;
}

static int write_data(struct archive *a, int fd, const char *path, int64_t size,
		      struct lb_err **err)
{
	const void *buf;
	size_t len;
	int64_t off, end = 0;

	for (;;) {
		int r = archive_read_data_block(a, &buf, &len, &off);
		if (r == ARCHIVE_EOF)
			break;
		if (r < ARCHIVE_WARN)
			return lb_err_set(err, 0, "read %s from the layer: %s", path,
					  archive_error_string(a));
		for (size_t done = 0; done < len;) {
			ssize_t w =
			    pwrite(fd, (const char *)buf + done, len - done, off + (off_t)done);
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0)
				return lb_err_set(err, errno, "write %s", path);
			done += (size_t)w;
		}
		end = off + (int64_t)len;
	}
	/* sparse files end in a hole */
	if (end < size && ftruncate(fd, size) < 0)
		return lb_err_set(err, errno, "write %s", path);
	return 0;
}

static int make_file(struct unpack_ctx *c, const struct dest *d, struct archive *a,
		     struct archive_entry *e, struct lb_err **err)
{
	int64_t size = archive_entry_size_is_set(e) ? archive_entry_size(e) : 0;
	struct timespec ts[2];

	uint64_t used = c->used_bytes + c->res.file_bytes;
	if (size < 0 || used > c->max_total_size || (uint64_t)size > c->max_total_size - used)
		return lb_err_set(
		    err, 0,
		    "image too large: its files exceed the unpack limit of %llu bytes "
		    "(LBBOX_UNPACK_MAX_SIZE; %s declares %lld)",
		    (unsigned long long)c->max_total_size, d->path, (long long)size);
	c->res.file_bytes += (uint64_t)size;
	_cleanup_close_ int fd =
	    openat(d->pfd, d->name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return lb_err_set(err, errno, "create %s", d->path);
	if (write_data(a, fd, d->path, size, err) < 0 || set_owner(c, d, e, err) < 0)
		return -1;
	if (fchmod(fd, entry_mode(c, e)) < 0)
		return lb_err_set(err, errno, "chmod %s", d->path);
	if (set_xattrs(c, fd, d->path, e, err) < 0)
		return -1;
	entry_times(e, ts);
	if (futimens(fd, ts) < 0)
		return lb_err_set(err, errno, "set times of %s", d->path);
	return 0;
}

static int defer_dir(struct unpack_ctx *c, const char *path, struct archive_entry *e,
		     struct lb_err **err)
{
	if (c->ndirs == c->capdirs) {
		size_t cap = c->capdirs ? c->capdirs * 2 : 64;
		struct unpack_dirmeta *n = reallocarray(c->dirs, cap, sizeof(*n));
		if (!n)
			return lb_err_set(err, ENOMEM, "unpack %s", path);
		c->dirs = n;
		c->capdirs = cap;
	}
	struct unpack_dirmeta *m = &c->dirs[c->ndirs];
	if (!(m->path = strdup(path)))
		return lb_err_set(err, ENOMEM, "unpack %s", path);
	m->mode = entry_mode(c, e);
	entry_times(e, m->times);
	c->ndirs++;
	return 0;
}

/* A directory (or the root itself, d->name "."): an existing one is kept and merged. */
static int make_dir(struct unpack_ctx *c, const struct dest *d, struct archive_entry *e,
		    struct lb_err **err)
{
	if (mkdirat(d->pfd, d->name, 0700) < 0 && errno != EEXIST)
		return lb_err_set(err, errno, "mkdir %s", d->path);
	_cleanup_close_ int fd =
	    openat(d->pfd, d->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return lb_err_set(err, errno, "open directory %s", d->path);
	if (fchown(fd, (uid_t)archive_entry_uid(e), (gid_t)archive_entry_gid(e)) < 0 &&
	    meta_fail(c, err, "chown", d->path) < 0)
		return -1;
	if (set_xattrs(c, fd, d->path, e, err) < 0)
		return -1;
	return defer_dir(c, d->path, e, err);
}

static int make_symlink(struct unpack_ctx *c, const struct dest *d, struct archive_entry *e,
			struct lb_err **err)
{
	const char *target = archive_entry_symlink(e);
	struct timespec ts[2];

	if (!target || !*target)
		return lb_err_set(err, 0, "symlink %s has no target", d->path);
	if (strlen(target) > c->max_path)
		return lb_err_set(err, 0, "symlink %s: target longer than %llu bytes", d->path,
				  (unsigned long long)c->max_path);
	/* Stored verbatim: it is only ever resolved inside the container's root. */
	if (symlinkat(target, d->pfd, d->name) < 0)
		return lb_err_set(err, errno, "symlink %s", d->path);
	if (set_owner(c, d, e, err) < 0)
		return -1;
	entry_times(e, ts);
	if (utimensat(d->pfd, d->name, ts, AT_SYMLINK_NOFOLLOW) < 0)
		return lb_err_set(err, errno, "set times of %s", d->path);
	return 0;
}

/* The target is resolved inside the root like any other path, and linked without following a
 * symlink at its end: a hardlink can only ever share an inode already in the tree. */
static int make_hardlink(struct unpack_ctx *c, const struct dest *d, const char *raw_target,
			 struct lb_err **err)
{
	_cleanup_free_ char *target = NULL;
	if (unpack_clean_path(raw_target, c->max_path, &target, err) < 0)
		return lb_err_wrap(err, "hardlink %s", d->path);
	if (!*target)
		return lb_err_set(err, 0, "hardlink %s points at the layer root", d->path);
	const char *tbase = unpack_basename(target);
	_cleanup_free_ char *tdir =
	    strndup(target, tbase > target ? (size_t)(tbase - target - 1) : 0);
	if (!tdir)
		return lb_err_set(err, ENOMEM, "hardlink %s", d->path);
	_cleanup_close_ int tfd = unpack_openat2(c->root_fd, tdir, O_PATH | O_DIRECTORY);
	if (tfd < 0 || linkat(tfd, tbase, d->pfd, d->name, 0) < 0)
		return lb_err_set(err, errno, "hardlink %s to '%s' (not a file inside the layer)",
				  d->path, raw_target);
	return 0;
}

/*
 * Character and block devices are skipped, as rootless podman does, with or without privilege: a
 * node for a host disk in a layer would be the host's disk. A sandbox gets its devices from
 * lbbox's own /dev only (and image roots are mounted nodev besides). FIFOs are kept.
 */
static int make_node(struct unpack_ctx *c, const struct dest *d, struct archive_entry *e,
		     mode_t type, struct lb_err **err)
{
	struct timespec ts[2];

	if (type != S_IFIFO) {
		c->res.skipped++;
		return 1;
	}
	if (mknodat(d->pfd, d->name, S_IFIFO | 0600, 0) < 0)
		return lb_err_set(err, errno, "mknod %s", d->path);
	if (set_owner(c, d, e, err) < 0)
		return -1;
	if (fchmodat(d->pfd, d->name, entry_mode(c, e), 0) < 0)
		return lb_err_set(err, errno, "chmod %s", d->path);
	entry_times(e, ts);
	if (utimensat(d->pfd, d->name, ts, AT_SYMLINK_NOFOLLOW) < 0)
		return lb_err_set(err, errno, "set times of %s", d->path);
	return 0;
}

/* Tar semantics: a new entry replaces what is there, except that two directories merge. */
static int clear_dest(const struct dest *d, bool is_dir, struct lb_err **err)
{
	struct stat st;

	if (fstatat(d->pfd, d->name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : lb_err_set(err, errno, "stat %s", d->path);
	if (is_dir && S_ISDIR(st.st_mode))
		return 0;
	return unpack_remove_at(d->pfd, d->name, d->path, err);
}

/* Returns 1 when the entry was skipped. */
static int create(struct unpack_ctx *c, const struct dest *d, struct archive *a,
		  struct archive_entry *e, struct lb_err **err)
{
	const char *link = archive_entry_hardlink(e);
	mode_t type = archive_entry_filetype(e);

	if (link)
		return make_hardlink(c, d, link, err);
	switch (type) {
	case AE_IFREG:
		return make_file(c, d, a, e, err);
	case AE_IFDIR:
		return make_dir(c, d, e, err);
	case AE_IFLNK:
		return make_symlink(c, d, e, err);
	case AE_IFCHR:
	case AE_IFBLK:
	case AE_IFIFO:
		return make_node(c, d, e, type, err);
	default: /* sockets cannot be restored from a tar; anything else is unknown */
		c->res.skipped++;
		return 1;
	}
}

int unpack_entry(struct unpack_ctx *c, struct archive *a, struct archive_entry *e, const char *path,
		 struct lb_err **err)
{
	bool is_dir = !archive_entry_hardlink(e) && archive_entry_filetype(e) == AE_IFDIR;
	struct dest d = {.name = unpack_basename(path), .path = path};

	if (!*path) {
		/* "./": metadata for the root itself, which is never replaced */
		if (!is_dir)
			return lb_err_set(
			    err, 0, "refusing to replace the layer root with a non-directory");
		d.pfd = c->root_fd;
		d.name = ".";
		d.path = "";
		return make_dir(c, &d, e, err);
	}
	if (unpack_parent(c, path, true, &d.pfd, err) < 0 || clear_dest(&d, is_dir, err) < 0)
		return -1;
	int r = create(c, &d, a, e, err);
	if (r != 0)
		return r < 0 ? -1 : 0;
	if (unpack_pathset_add(&c->written, path) < 0)
		return lb_err_set(err, ENOMEM, "unpack %s", path);
	return 0;
}

int unpack_dirs_finish(struct unpack_ctx *c, struct lb_err **err)
{
	for (size_t i = 0; i < c->ndirs; i++) {
		const struct unpack_dirmeta *m = &c->dirs[i];
		_cleanup_close_ int fd =
		    unpack_openat2(c->root_fd, m->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
		/* removed or replaced by a later entry (or a whiteout): nothing to fix up */
		if (fd < 0 && (errno == ENOENT || errno == ENOTDIR || errno == ELOOP))
			continue;
		if (fd < 0)
			return lb_err_set(err, errno, "open directory %s", m->path);
		if (fchmod(fd, m->mode) < 0)
			return lb_err_set(err, errno, "chmod %s", m->path);
		if (futimens(fd, m->times) < 0)
			return lb_err_set(err, errno, "set times of %s", m->path);
	}
	return 0;
}
