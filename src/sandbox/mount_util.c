/*
 * Mount helpers that never follow a path out of the new root: every target inside the rootfs is
 * created and opened with openat2(RESOLVE_IN_ROOT), and mounted through /proc/self/fd/N, so a
 * symlink planted in an image ("/workspace -> /etc") cannot redirect a mount onto the host.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "engine.h"

static int openat2_in_root(int rootfd, const char *path, int flags)
{
	struct open_how how = {
	    .flags = (uint64_t)(flags | O_CLOEXEC),
	    .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	return (int)syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
}

/* Creates the last component of path (whose parent exists) as a directory or empty file. */
static int create_last(int rootfd, const char *path, bool want_dir, struct lb_err **err)
{
	_cleanup_free_ char *parent = strdup(path);
	if (!parent)
		return lb_err_set(err, ENOMEM, "create %s", path);
	char *slash = strrchr(parent, '/');
	const char *name = slash ? slash + 1 : parent;
	if (slash)
		*slash = '\0';
	_cleanup_close_ int pfd =
	    openat2_in_root(rootfd, slash && *parent ? parent : ".", O_PATH | O_DIRECTORY);
	if (pfd < 0)
		return lb_err_set(err, errno, "open %s", *parent ? parent : "/");
	int r = want_dir ? mkdirat(pfd, name, 0755)
			 : openat(pfd, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
	if (r < 0 && errno != EEXIST)
		return lb_err_set(err, errno, "create %s", path);
	if (!want_dir && r >= 0)
		close(r);
	return 0;
}

int lb_open_in_root(int rootfd, const char *path, bool create, bool want_dir, int *out,
		    struct lb_err **err)
{
	while (*path == '/')
		path++;
	if (!*path) {
		*out = openat2_in_root(rootfd, ".", O_PATH | O_DIRECTORY);
		return *out < 0 ? lb_err_set(err, errno, "open /") : 0;
	}
	int fd = openat2_in_root(rootfd, path, O_PATH);
	if (fd < 0 && errno == ENOENT && create) {
		/* create each missing ancestor, always resolving from the root again */
		_cleanup_free_ char *prefix = strdup(path);
		if (!prefix)
			return lb_err_set(err, ENOMEM, "create %s", path);
		for (char *s = strchr(prefix, '/'); s; s = strchr(s + 1, '/')) {
			*s = '\0';
			if (create_last(rootfd, prefix, true, err) < 0)
				return -1;
			*s = '/';
		}
		if (create_last(rootfd, path, want_dir, err) < 0)
			return -1;
		fd = openat2_in_root(rootfd, path, O_PATH);
	}
	if (fd < 0)
		return lb_err_set(err, errno, "open /%s in the sandbox root", path);
	*out = fd;
	return 0;
}

bool lb_statx_mount_root(const struct statx *t)
{
	return !(t->stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) ||
	       (t->stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

/* Whether fd is the root itself: its directory, as the root of a mount (a directory elsewhere on
 * an overlay may share its inode number, never that). Unknown counts as the root. */
static bool is_root(int rootfd, int fd)
{
	struct stat r;
	struct statx t;
	if (fstat(rootfd, &r) < 0 || statx(fd, "", AT_EMPTY_PATH, 0, &t) < 0)
		return true;
	return makedev(t.stx_dev_major, t.stx_dev_minor) == r.st_dev && t.stx_ino == r.st_ino &&
	       lb_statx_mount_root(&t);
}

/* A mount on the root itself would be what pivot_root makes the sandbox's root (an image's
 * "w -> /", "w -> ..", a volume on "/"): such a target is refused. */
int lb_open_mount_target(int rootfd, const char *path, bool create, bool want_dir, int *out,
			 struct lb_err **err)
{
	_cleanup_close_ int fd = -1;
	if (lb_open_in_root(rootfd, path, create, want_dir, &fd, err) < 0)
		return -1;
	if (is_root(rootfd, fd))
		return lb_err_set(err, 0, "%s leads to the sandbox's root itself", path);
	*out = LB_TAKE_FD(fd);
	return 0;
}

/* A directory at the top of the root lbbox mounts over (dev, proc, sys): opened without following
 * links, made when missing. A symlink there would send the mount, and any later lookup of the
 * name, wherever it points at that moment (an image's "proc -> /" made the whole root a procfs),
 * so it is refused, as runc refuses a /proc or /sys that is not a directory (CVE-2019-19921). */
int lb_open_root_dir(int rootfd, const char *name, int *out, struct lb_err **err)
{
	_cleanup_close_ int fd = openat(rootfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		if (mkdirat(rootfd, name, 0755) < 0 && errno != EEXIST)
			return lb_err_set(err, errno, "mkdir /%s", name);
		fd = openat(rootfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	}
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return lb_err_set(err, errno, "open /%s", name);
	if (S_ISLNK(st.st_mode))
		return lb_err_set(err, 0, "the root's /%s is a symlink (lbbox mounts /%s there)",
				  name, name);
	if (!S_ISDIR(st.st_mode))
		return lb_err_set(err, ENOTDIR, "the root's /%s", name);
	*out = LB_TAKE_FD(fd);
	return 0;
}

int lb_mount_fd(const char *source, int target_fd, const char *fstype, unsigned long flags,
		const char *data, struct lb_err **err)
{
	char target[64];
	snprintf(target, sizeof(target), "/proc/self/fd/%d", target_fd);
	if (mount(source, target, fstype, flags, data) < 0)
		return lb_err_set(err, errno, "mount %s", source ? source : fstype);
	return 0;
}

/* Older kernels (no mount_setattr): a bind remount must repeat the flags the mount has. */
static int setattr_fallback(int fd, uint64_t attrs, uint64_t propagation, struct lb_err **err)
{
	char path[64];
	struct statvfs sv;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (statvfs(path, &sv) < 0)
		return lb_err_set(err, errno, "statvfs %s", path);
	unsigned long flags = sv.f_flag & (ST_RDONLY | ST_NOSUID | ST_NODEV | ST_NOEXEC |
					   ST_NOATIME | ST_NODIRATIME | ST_RELATIME);
	flags |= (attrs & MOUNT_ATTR_RDONLY ? MS_RDONLY : 0) |
		 (attrs & MOUNT_ATTR_NOSUID ? MS_NOSUID : 0) |
		 (attrs & MOUNT_ATTR_NODEV ? MS_NODEV : 0);
	if (mount(NULL, path, NULL, MS_REMOUNT | MS_BIND | flags, NULL) < 0)
		return lb_err_set(err, errno, "remount %s", path);
	if (propagation && mount(NULL, path, NULL, propagation | MS_REC, NULL) < 0)
		return lb_err_set(err, errno, "change propagation of %s", path);
	return 0;
}

int lb_mount_setattr(int fd, bool rec, uint64_t attrs, uint64_t propagation, struct lb_err **err)
{
	/* mount_setattr changes a whole subtree at once and keeps every other flag. */
	struct mount_attr attr = {.attr_set = attrs, .propagation = propagation};
	unsigned int at = AT_EMPTY_PATH | AT_NO_AUTOMOUNT | (rec ? AT_RECURSIVE : 0);
	if (syscall(SYS_mount_setattr, fd, "", at, &attr, sizeof(attr)) == 0)
		return 0;
	if (errno != ENOSYS)
		return lb_err_set(err, errno, "set mount attributes");
	/* a remount changes one mount: submounts of a volume would keep their flags */
	if (rec)
		return lb_err_set(err, ENOSYS, "mount_setattr (Linux 5.12) is needed");
	return setattr_fallback(fd, attrs, propagation, err);
}

int lb_remount_ro(const char *path, bool rec, struct lb_err **err)
{
	_cleanup_close_ int fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return lb_err_set(err, errno, "open %s", path);
	if (lb_mount_setattr(fd, rec, MOUNT_ATTR_RDONLY, 0, err) < 0)
		return lb_err_wrap(err, "make %s read-only", path);
	return 0;
}

/* A copy of the mounts at src (below src_dirfd; "" for src_dirfd itself), recursive, given attrs
 * and propagation while detached, then moved onto target_fd: no step looks a name up again,
 * which could lead through what was just mounted, or through a name swapped meanwhile. *out
 * (unless NULL): the handle of the attached copy. */
int lb_bind_tree(int src_dirfd, const char *src, int target_fd, uint64_t attrs,
		 uint64_t propagation, int *out, struct lb_err **err)
{
	unsigned int at =
	    OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | (*src ? 0 : AT_EMPTY_PATH);
	_cleanup_close_ int tree = (int)syscall(SYS_open_tree, src_dirfd, src, at);
	if (tree < 0)
		return lb_err_set(err, errno, "bind %s", *src ? src : "a mount");
	if (lb_mount_setattr(tree, true, attrs, propagation, err) < 0)
		return -1;
	if (syscall(SYS_move_mount, tree, "", target_fd, "",
		    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		return lb_err_set(err, errno, "attach the bind of %s", *src ? src : "a mount");
	if (out)
		*out = LB_TAKE_FD(tree);
	return 0;
}

/* A new fstype filesystem ("source" fstype) with attrs onto target_fd; *out the handle of its
 * root, by which the next steps reach it rather than by the target's name again. */
int lb_mount_new(const char *fstype, uint64_t attrs, int target_fd, int *out, struct lb_err **err)
{
	_cleanup_close_ int fs = (int)syscall(SYS_fsopen, fstype, FSOPEN_CLOEXEC);
	if (fs < 0 || syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "source", fstype, 0) < 0 ||
	    syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return lb_err_set(err, errno, "mount %s", fstype);
	_cleanup_close_ int mfd = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, attrs);
	if (mfd < 0)
		return lb_err_set(err, errno, "mount %s", fstype);
	if (syscall(SYS_move_mount, mfd, "", target_fd, "",
		    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		return lb_err_set(err, errno, "attach %s", fstype);
	*out = LB_TAKE_FD(mfd);
	return 0;
}

/*
 * Whatever comes from the host (volumes, the host image's directories, generated /etc files) is
 * bound nodev and nosuid, so no device node or setuid file on the host side becomes usable
 * through it, and private, so nothing mounted on the host later (under a shared mount) appears
 * inside, writable, and nothing mounted inside leaks out. The attributes are set before the
 * bind is attached to the target checked here: a second lookup of the target would go through
 * the volume's own contents (its "s -> /tmp" under an image's "vol -> /w/s", "w/s -> .") and
 * set ":ro" somewhere else.
 */
int lb_bind_in_root(int rootfd, const char *source, const char *target, bool readonly,
		    struct lb_err **err)
{
	struct stat st;
	if (stat(source, &st) < 0)
		return lb_err_set(err, errno, "bind %s", source);
	_cleanup_close_ int fd = -1;
	if (lb_open_mount_target(rootfd, target, true, S_ISDIR(st.st_mode), &fd, err) < 0)
		return lb_err_wrap(err, "bind %s on %s", source, target);
	uint64_t attrs = MOUNT_ATTR_NODEV | MOUNT_ATTR_NOSUID | (readonly ? MOUNT_ATTR_RDONLY : 0);
	if (lb_bind_tree(AT_FDCWD, source, fd, attrs, MS_PRIVATE, NULL, err) < 0)
		return lb_err_wrap(err, "bind on %s", target);
	return 0;
}
