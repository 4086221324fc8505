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
#include <sys/syscall.h>
#include <unistd.h>

#include "lbbox/cleanup.h"
#include "sandbox/engine.h"

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

int lb_mount_fd(const char *source, int target_fd, const char *fstype, unsigned long flags,
		const char *data, struct lb_err **err)
{
	char target[64];
	snprintf(target, sizeof(target), "/proc/self/fd/%d", target_fd);
	if (mount(source, target, fstype, flags, data) < 0)
		return lb_err_set(err, errno, "mount %s", source ? source : fstype);
	return 0;
}

int lb_remount_ro(const char *path, bool rec, struct lb_err **err)
{
	/* mount_setattr changes a whole subtree at once and keeps every other flag. */
	struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY};
	unsigned int at = AT_NO_AUTOMOUNT | (rec ? AT_RECURSIVE : 0);
	if (syscall(SYS_mount_setattr, AT_FDCWD, path, at, &attr, sizeof(attr)) == 0)
		return 0;
	if (errno != ENOSYS)
		return lb_err_set(err, errno, "make %s read-only", path);

	/* Older kernels: a bind remount must repeat the flags the mount already has. */
	struct statvfs sv;
	if (statvfs(path, &sv) < 0)
		return lb_err_set(err, errno, "statvfs %s", path);
	unsigned long keep = sv.f_flag & (ST_NOSUID | ST_NODEV | ST_NOEXEC | ST_NOATIME |
					  ST_NODIRATIME | ST_RELATIME);
	if (mount(NULL, path, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | keep, NULL) < 0)
		return lb_err_set(err, errno, "make %s read-only", path);
	return 0;
}

int lb_bind_in_root(int rootfd, const char *source, const char *target, bool readonly,
		    struct lb_err **err)
{
	struct stat st;
	if (stat(source, &st) < 0)
		return lb_err_set(err, errno, "bind %s", source);
	_cleanup_close_ int fd = -1;
	if (lb_open_in_root(rootfd, target, true, S_ISDIR(st.st_mode), &fd, err) < 0)
		return lb_err_wrap(err, "bind %s on %s", source, target);
	if (lb_mount_fd(source, fd, NULL, MS_BIND | MS_REC, NULL, err) < 0)
		return lb_err_wrap(err, "bind on %s", target);
	if (!readonly)
		return 0;
	/* The bind now covers the opened dentry; reopen to reach the new mount's root. */
	_cleanup_close_ int mfd = -1;
	if (lb_open_in_root(rootfd, target, false, false, &mfd, err) < 0)
		return -1;
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", mfd);
	return lb_remount_ro(path, true, err);
}
