/*
 * The paths a spec asks to mask or make read-only (an OCI bundle's linux.maskedPaths and
 * readonlyPaths), on top of lbbox's own /proc and /sys lists (procfs.c). Each path is resolved
 * with RESOLVE_IN_ROOT, so ".." and an image's symlinks (even absolute ones) stay inside the new
 * root: a hostile entry masks something of the container, never a host path. A path that does not
 * exist is skipped, as runc does.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "engine.h"

/* *fd = -1 (and 0) when the path does not exist in the root. */
static int open_entry(int rootfd, const char *path, int *fd, struct lb_err **err)
{
	struct lb_err *e = NULL;
	*fd = -1;
	if (lb_open_mount_target(rootfd, path, false, false, fd, &e) == 0)
		return 0;
	int errnum = e->errnum;
	if (errnum == ENOENT || errnum == ENOTDIR) {
		lb_err_free(&e);
		return 0;
	}
	lb_err_set(err, 0, "masked or read-only path %s: %s", path, e->msg);
	lb_err_free(&e);
	return -1;
}

/* A directory: an empty read-only tmpfs; anything else: the host's /dev/null (a char device the
 * sandbox already has). */
static int mask_one(int rootfd, const char *path, struct lb_err **err)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	if (open_entry(rootfd, path, &fd, err) < 0)
		return -1;
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) < 0)
		return lb_err_set(err, errno, "masked path %s", path);
	int r = S_ISDIR(st.st_mode) ? lb_mount_fd("lbbox-mask", fd, "tmpfs",
						  MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
						  "size=4k,mode=0755", err)
				    : lb_mount_fd("/dev/null", fd, NULL, MS_BIND, NULL, err);
	return r < 0 ? lb_err_wrap(err, "masked path %s", path) : 0;
}

/* The path's mounts copied, made read-only while detached, then moved onto the path: each step
 * on the one descriptor opened, never on the name again, which a process sharing the rootfs (a
 * volume of another container) could swap for a symlink meanwhile. */
static int readonly_one(int rootfd, const char *path, struct lb_err **err)
{
	_cleanup_close_ int fd = -1;
	if (open_entry(rootfd, path, &fd, err) < 0)
		return -1;
	if (fd < 0)
		return 0;
	if (lb_bind_tree(fd, "", fd, MOUNT_ATTR_RDONLY, 0, NULL, err) < 0)
		return lb_err_wrap(err, "read-only path %s", path);
	return 0;
}

int lb_apply_masks(const struct lb_spec *spec, const char *newroot, struct lb_err **err)
{
	if (!spec->masked_paths && !spec->readonly_paths)
		return 0;
	_cleanup_close_ int rootfd = open(newroot, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return lb_err_set(err, errno, "open %s", newroot);
	/* read-only first, as runc: a masked path inside a read-only one is still masked */
	for (char **p = spec->readonly_paths; p && *p; p++)
		if (readonly_one(rootfd, *p, err) < 0)
			return -1;
	for (char **p = spec->masked_paths; p && *p; p++)
		if (mask_one(rootfd, *p, err) < 0)
			return -1;
	return 0;
}
