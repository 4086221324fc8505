/*
 * A minimal /dev: a tiny tmpfs with the host's harmless character devices bind-mounted in (bind
 * rather than mknod, so the same code works in a user namespace), a private devpts instance,
 * /dev/shm, and the usual symlinks; then the spec's extra devices (dev_nodes.c). Nothing else of
 * the host's /dev is reachable.
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

static const char *const devices[] = {"null", "zero", "full", "random", "urandom", "tty"};

static const struct {
	const char *target, *name;
} links[] = {
    {"/proc/self/fd", "fd"},	   {"/proc/self/fd/0", "stdin"}, {"/proc/self/fd/1", "stdout"},
    {"/proc/self/fd/2", "stderr"}, {"pts/ptmx", "ptmx"},
};

static int bind_device(int devfd, const char *name, struct lb_err **err)
{
	char src[64];
	snprintf(src, sizeof(src), "/dev/%s", name);
	_cleanup_close_ int fd = openat(devfd, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0666);
	if (fd < 0)
		return lb_err_set(err, errno, "create /dev/%s", name);
	_cleanup_close_ int pfd = openat(devfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0)
		return lb_err_set(err, errno, "open /dev/%s", name);
	return lb_mount_fd(src, pfd, NULL, MS_BIND, NULL, err);
}

static int mount_sub(int devfd, const char *name, const char *fstype, unsigned long flags,
		     const char *opts, struct lb_err **err)
{
	if (mkdirat(devfd, name, 0755) < 0)
		return lb_err_set(err, errno, "mkdir /dev/%s", name);
	_cleanup_close_ int fd = openat(devfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return lb_err_set(err, errno, "open /dev/%s", name);
	return lb_mount_fd(fstype, fd, fstype, flags, opts, err);
}

/* Made with the new mount API, so *out is the handle of this tmpfs's own mount: whatever is
 * mounted over /dev later (a volume), the seal reaches this tmpfs and nothing else. */
static int mount_dev_tmpfs(int dirfd, int *out, struct lb_err **err)
{
	_cleanup_close_ int fs = (int)syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC);
	if (fs < 0 || syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "source", "tmpfs", 0) < 0 ||
	    syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "mode", "0755", 0) < 0 ||
	    syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "size", "64k", 0) < 0 ||
	    syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return lb_err_set(err, errno, "/dev tmpfs");
	_cleanup_close_ int mfd =
	    (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC);
	if (mfd < 0)
		return lb_err_set(err, errno, "/dev tmpfs");
	if (syscall(SYS_move_mount, mfd, "", dirfd, "",
		    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		return lb_err_set(err, errno, "mount the /dev tmpfs");
	*out = LB_TAKE_FD(mfd);
	return 0;
}

int lb_mount_dev(int rootfd, const struct lb_child_ctx *ctx, int *out, struct lb_err **err)
{
	_cleanup_close_ int dirfd = -1, devfd = -1;
	if (lb_open_root_dir(rootfd, "dev", &dirfd, err) < 0 ||
	    mount_dev_tmpfs(dirfd, &devfd, err) < 0)
		return -1;
	for (size_t i = 0; i < sizeof(devices) / sizeof(devices[0]); i++)
		if (bind_device(devfd, devices[i], err) < 0)
			return -1;
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++)
		if (symlinkat(links[i].target, devfd, links[i].name) < 0)
			return lb_err_set(err, errno, "symlink /dev/%s", links[i].name);
	if (mount_sub(devfd, "pts", "devpts", MS_NOSUID | MS_NOEXEC,
		      "newinstance,ptmxmode=0666,mode=0620", err) < 0 ||
	    mount_sub(devfd, "shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		      "mode=1777,size=65536k", err) < 0)
		return -1;
	if (lb_make_devices(devfd, ctx->spec, ctx->fds->devices, err) < 0)
		return -1;
	*out = LB_TAKE_FD(devfd);
	return 0;
}

/* /dev is the one place without nodev: read-only, so even a command given CAP_MKNOD cannot add
 * a node to it (pts, shm and the volumes below stay as they are). Only once the volumes are
 * mounted: one may need its mount point made there (kubelet's /dev/termination-log). Through
 * lb_mount_dev's handle, never by path: by then "/dev" may name a volume over it. */
int lb_seal_dev(int devfd, struct lb_err **err)
{
	return lb_mount_setattr(devfd, false, MOUNT_ATTR_RDONLY, 0, err) < 0
		   ? lb_err_wrap(err, "make /dev read-only")
		   : 0;
}
