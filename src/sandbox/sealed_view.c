/*
 * The two sealed forms of lbbox's own executable that sealed.c re-executes from.
 *
 * A view (root, or any caller allowed to make an overlayfs): a detached overlayfs whose only
 * layers are read-only lower ones, lbbox's directory over one that adds nothing. Nothing is copied,
 * and the view is read-only at the superblock: an overlay without an upper layer has nowhere to
 * write, so no remount or mount_setattr of it, and no reopening of /proc/PID/exe, of
 * /proc/PID/map_files (the overlay's file, or the layer's file on overlayfs's own read-only
 * private mount) or of an inherited descriptor can write the host's inode. A read-only bind
 * mount of the binary (open_tree + MOUNT_ATTR_RDONLY) is cheaper (no superblock to set up and
 * tear down) but only its mount flag stands between a sandbox and the host's inode, and
 * /proc/PID/exe leads to that detached mount's root: a sandbox given CAP_SYS_ADMIN and the mount
 * syscalls (--cap-add SYS_ADMIN opens them) could clear the flag with mount_setattr and write
 * the host binary, which the overlay does not allow whatever the sandbox may do; runc 1.2 chose
 * the overlay for that. The view is never attached to a mount tree, so no mount table shows it,
 * and it is gone with the last process running from it.
 *
 * A copy (everyone else: fsopen("overlay") needs CAP_SYS_ADMIN): a memfd holding the binary,
 * sealed against writes, growth and shrinking. lbbox-init is copied the same way when there is
 * no view to open it through.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"
#include "sealed.h"

/* A read-only superblock over the layers of lower (a lowerdir string), with no upper layer: the
 * mount's descriptor, or -1 with errno set. */
static int overlay_of(const char *lower)
{
	_cleanup_close_ int fs = (int)syscall(SYS_fsopen, "overlay", FSOPEN_CLOEXEC);
	if (fs < 0)
		return -1;
	/* xino off: inode numbers stay those of the layers (checked by the caller), and no dmesg
	 * line; metacopy off: no file of the top can lead to the data-only layer's */
	if (syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "lowerdir", lower, 0) < 0 ||
	    syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "xino", "off", 0) < 0 ||
	    syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "metacopy", "off", 0) < 0 ||
	    syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return -1;
	return (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC,
			    MOUNT_ATTR_RDONLY | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOSUID);
}

/* A new empty directory of ours (kernels before 6.5), in memory when there is /dev/shm. */
static int empty_dir(char *path, size_t len, int *out, struct lb_err **err)
{
	static const char *const parents[] = {"/dev/shm", "/tmp"};
	for (size_t i = 0; i < 2; i++) {
		snprintf(path, len, "%s/lbbox-seal-XXXXXX", parents[i]);
		if (mkdtemp(path))
			break;
		if (i == 1)
			return lb_err_set(err, errno, "mkdtemp %s", path);
	}
	struct stat st;
	int fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || st.st_uid != geteuid() ||
	    (st.st_mode & 07777) != 0700) {
		int e = fd < 0 ? errno : EPERM;
		if (fd >= 0)
			close(fd);
		rmdir(path);
		return lb_err_set(err, e, "open %s", path);
	}
	*out = fd;
	return 0;
}

/*
 * The view over lbbox's directory top. An overlay with no upper layer needs a second lower one,
 * which must add no file: a data-only layer (kernel 6.5+, "top::other") is never visible, so any
 * directory that does not overlap the top will do, and nothing is created. Older kernels get a
 * new empty directory, removed as soon as the overlay holds it (an empty directory cannot add or
 * mask a file, and once removed nothing can be created in it); only a kill in that instant
 * leaves it behind.
 */
static int overlay_create(int top, struct lb_err **err)
{
	char empty_path[64], lower[64];
	snprintf(lower, sizeof(lower), "/proc/self/fd/%d::/dev/shm", top);
	int mnt = overlay_of(lower);
	if (mnt >= 0)
		return mnt;
	if (errno == EPERM || errno == ENODEV) /* no overlayfs for us at all */
		return lb_err_set(err, errno, "create the overlay");
	_cleanup_close_ int empty = -1;
	if (empty_dir(empty_path, sizeof(empty_path), &empty, err) < 0)
		return -1;
	snprintf(lower, sizeof(lower), "/proc/self/fd/%d:/proc/self/fd/%d", top, empty);
	mnt = overlay_of(lower);
	int e = errno;
	rmdir(empty_path);
	return mnt >= 0 ? mnt : lb_err_set(err, e, "create the overlay");
}

int lb_sealed_view(int *out, int *dir_out, struct lb_err **err)
{
	char exe[LB_PATH_BUF];
	struct stat self, st;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0 || (size_t)n >= sizeof(exe) - 1 || exe[0] != '/')
		return lb_err_set(err, n < 0 ? errno : ENAMETOOLONG, "readlink /proc/self/exe");
	exe[n] = '\0';
	if (stat("/proc/self/exe", &self) < 0)
		return lb_err_set(err, errno, "stat /proc/self/exe");
	char *base = strrchr(exe, '/');
	*base++ = '\0';
	_cleanup_close_ int dir = open(exe[0] ? exe : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return lb_err_set(err, errno, "open %s", exe[0] ? exe : "/");
	_cleanup_close_ int mnt = overlay_create(dir, err);
	if (mnt < 0)
		return -1;
	_cleanup_close_ int fd = openat(mnt, base, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0)
		return lb_err_set(err, errno, "open %s in the overlay", base);
	/* replaced or renamed since it started: the view would run another program */
	if (!S_ISREG(st.st_mode) || st.st_ino != self.st_ino || st.st_size != self.st_size ||
	    st.st_mtim.tv_sec != self.st_mtim.tv_sec || st.st_mtim.tv_nsec != self.st_mtim.tv_nsec)
		return lb_err_set(err, 0, "%s/%s is no longer the running lbbox", exe, base);
	*out = LB_TAKE_FD(fd);
	*dir_out = LB_TAKE_FD(mnt);
	return 0;
}

int lb_sealed_copy_of(int src, const char *name, int *out, struct lb_err **err)
{
	struct stat st;
	if (fstat(src, &st) < 0)
		return lb_err_set(err, errno, "stat %s", name);
	if (!S_ISREG(st.st_mode))
		return lb_err_set(err, 0, "%s is not a regular file", name);
	_cleanup_close_ int fd = memfd_create(LB_SEALED_MEMFD, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return lb_err_set(err, errno, "memfd_create");
	for (off_t done = 0; done < st.st_size;) {
		ssize_t n = sendfile(fd, src, NULL, (size_t)(st.st_size - done));
		if (n <= 0)
			return lb_err_set(err, n < 0 ? errno : EIO, "copy %s", name);
		done += n;
	}
	if (fcntl(fd, F_ADD_SEALS, LB_SEALS) < 0)
		return lb_err_set(err, errno, "seal the copy of %s", name);
	*out = LB_TAKE_FD(fd);
	return 0;
}

int lb_sealed_copy(int *out, struct lb_err **err)
{
	_cleanup_close_ int exe = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (exe < 0)
		return lb_err_set(err, errno, "open /proc/self/exe");
	return lb_sealed_copy_of(exe, "lbbox", out, err);
}
