/* The sandbox's root: a bind of the rootfs (or the host image), the system mounts, pivot_root. */
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "engine.h"

/*
 * The state directory is covered, in the sandbox's mount namespace only, by a small tmpfs that
 * holds the generated /etc files and the new root's mount point: per-run files then cost no
 * disk I/O, and nothing of them exists on the host. Made with the new mount API, so *out is a
 * handle on the tmpfs itself: everything below is reached through it, never by the host path.
 */
static int mount_scratch(const struct lb_child_ctx *ctx, int *out, struct lb_err **err)
{
	/* A writable image root keeps its changes here too (charged to the sandbox's memory). */
	const char *size = ctx->spec->layers && !ctx->spec->readonly_root ? "1g" : "1m";
	_cleanup_close_ int fs = (int)syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC);
	if (fs < 0 ||
	    syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "source", "lbbox-scratch", 0) < 0 ||
	    syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "mode", "0755", 0) < 0 ||
	    syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "size", size, 0) < 0 ||
	    syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return lb_err_set(err, errno, "scratch tmpfs");
	*out = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
	if (*out < 0)
		return lb_err_set(err, errno, "scratch tmpfs");
	if (syscall(SYS_move_mount, *out, "", ctx->fds->statedir, "",
		    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		return lb_err_set(err, errno, "mount scratch tmpfs on %s", ctx->statedir);
	return 0;
}

static int fill_scratch(const struct lb_child_ctx *ctx, char *newroot, size_t len,
			struct lb_err **err)
{
	snprintf(newroot, len, "%s/root", ctx->statedir);
	if (mkdir(newroot, 0755) < 0)
		return lb_err_set(err, errno, "mkdir %s", newroot);
	return lb_etc_generate(ctx->spec, ctx->spec->net == LB_NET_ON ? ctx->lease : NULL,
			       ctx->statedir, err);
}

static bool exists_in_root(int rootfd, const char *path)
{
	int fd = -1;
	if (lb_open_in_root(rootfd, path, false, false, &fd, NULL) < 0)
		return false;
	close(fd);
	return true;
}

/* Whether building the sandbox would have to create a mount point inside the rootfs. */
static bool needs_mountpoints(const struct lb_spec *spec, int rootfd)
{
	static const char *const fixed[] = {
	    "/proc", "/sys", "/dev", "/tmp", "/etc/hosts", "/etc/resolv.conf", "/etc/hostname"};
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if (!exists_in_root(rootfd, fixed[i]))
			return true;
	for (size_t i = 0; i < spec->n_mounts; i++)
		if (!exists_in_root(rootfd, spec->mounts[i].target))
			return true;
	return spec->cwd && !exists_in_root(rootfd, spec->cwd);
}

/*
 * A read-only rootfs directory is never written to: when mount points are missing, the root
 * becomes an overlay whose upper layer lives in the scratch tmpfs, so they are created there.
 */
static int mount_overlay_root(const struct lb_child_ctx *ctx, const char *lower,
			      const char *newroot, struct lb_err **err)
{
	char upper[LB_PATH_BUF], work[LB_PATH_BUF], opts[8192];
	snprintf(upper, sizeof(upper), "%s/upper", ctx->statedir);
	snprintf(work, sizeof(work), "%s/work", ctx->statedir);
	if (mkdir(upper, 0755) < 0 || mkdir(work, 0755) < 0)
		return lb_err_set(err, errno, "mkdir overlay directories in %s", ctx->statedir);
	/* rootless: the user.overlay.* markers lbbox-image writes for such a store */
	if ((size_t)snprintf(opts, sizeof(opts), "lowerdir=%s,upperdir=%s,workdir=%s%s", lower,
			     upper, work, ctx->userns ? ",userxattr" : "") >= sizeof(opts))
		return lb_err_set(err, E2BIG, "overlay options for %s", lower);
	if (mount("lbbox-root", newroot, "overlay", 0, opts) < 0)
		return lb_err_set(err, errno, "mount overlay root on %s", lower);
	return 0;
}

/* pivot_root needs the new root to be a mount point: the rootfs, or the host image's tmpfs dir. */
static int mount_root(const struct lb_child_ctx *ctx, const char *newroot, struct lb_err **err)
{
	const struct lb_spec *spec = ctx->spec;
	char fdpath[LB_FD_PATH_BUF];
	int rootfd = ctx->fds->rootfs; /* the rootfs, or the per-sandbox copy of it */
	if (spec->copy_rootfs) {
		if (mount(lb_fd_path(rootfd, fdpath), newroot, NULL, MS_BIND | MS_REC, NULL) < 0)
			return lb_err_set(err, errno, "bind the copy of %s", spec->rootfs);
		return 0;
	}
	/* an image: its layers under a private upper layer, so the snapshots are never written */
	if (spec->layers)
		return mount_overlay_root(ctx, spec->layers, newroot, err);
	if (rootfd >= 0 && spec->readonly_root && needs_mountpoints(spec, rootfd))
		return mount_overlay_root(ctx, lb_fd_path(rootfd, fdpath), newroot, err);
	const char *src = rootfd >= 0 ? lb_fd_path(rootfd, fdpath) : newroot;
	if (mount(src, newroot, NULL, MS_BIND | MS_REC, NULL) < 0)
		return lb_err_set(err, errno, "bind rootfs %s", spec->rootfs ? spec->rootfs : src);
	return 0;
}

static int mount_tmp(int rootfd, uint64_t size, struct lb_err **err)
{
	char opts[64];
	_cleanup_close_ int fd = -1;
	if (!size)
		return 0;
	snprintf(opts, sizeof(opts), "mode=1777,size=%llu", (unsigned long long)size);
	if (lb_open_mount_target(rootfd, "/tmp", true, true, &fd, err) < 0)
		return -1;
	return lb_mount_fd("tmpfs", fd, "tmpfs", MS_NOSUID | MS_NODEV, opts, err);
}

/* /etc/hosts, /etc/resolv.conf, /etc/hostname (and passwd/group for the host image). */
static int bind_etc(int rootfd, const struct lb_child_ctx *ctx, struct lb_err **err)
{
	static const char *const files[] = {"hosts", "resolv.conf", "hostname", "passwd", "group"};
	size_t n = lb_spec_is_host_image(ctx->spec) ? 5 : 3;
	for (size_t i = 0; i < n; i++) {
		char src[LB_PATH_BUF], dst[64];
		snprintf(src, sizeof(src), "%s/etc/%s", ctx->statedir, files[i]);
		snprintf(dst, sizeof(dst), "/etc/%s", files[i]);
		if (lb_bind_in_root(rootfd, src, dst, true, err) < 0)
			return -1;
	}
	return 0;
}

/* The source, opened by lbbox without following links (host_fds.c): the inode it checked. */
static int bind_volume(int rootfd, const struct lb_mount *m, int fd, struct lb_err **err)
{
	char src[LB_FD_PATH_BUF];
	if (lb_bind_in_root(rootfd, lb_fd_path(fd, src), m->target, m->readonly, err) < 0)
		return lb_err_wrap(err, "volume %s", m->source);
	return 0;
}

/* --mount type=tmpfs: nothing from the host, so nosuid and nodev like every volume. */
static int mount_user_tmpfs(int rootfd, const struct lb_mount *m, struct lb_err **err)
{
	char opts[64];
	_cleanup_close_ int fd = -1;
	snprintf(opts, sizeof(opts), "mode=%o,size=%llu", (unsigned)m->tmpfs_mode,
		 (unsigned long long)m->tmpfs_size);
	if (lb_open_mount_target(rootfd, m->target, true, true, &fd, err) < 0)
		return lb_err_wrap(err, "tmpfs on %s", m->target);
	unsigned long flags = MS_NOSUID | MS_NODEV | (m->readonly ? MS_RDONLY : 0);
	return lb_mount_fd("tmpfs", fd, "tmpfs", flags, opts, err) < 0
		   ? lb_err_wrap(err, "tmpfs on %s", m->target)
		   : 0;
}

static int user_mounts(int rootfd, const struct lb_child_ctx *ctx, struct lb_err **err)
{
	const struct lb_spec *spec = ctx->spec;
	for (size_t i = 0; i < spec->n_mounts; i++) {
		const struct lb_mount *m = &spec->mounts[i];
		if ((m->tmpfs_size ? mount_user_tmpfs(rootfd, m, err)
				   : bind_volume(rootfd, m, ctx->fds->mounts[i], err)) < 0)
			return -1;
	}
	return 0;
}

int lb_rootfs_prepare(const struct lb_child_ctx *host_ctx, char *newroot, size_t len, int *scratch,
		      struct lb_root_id *root, struct lb_err **err)
{
	const struct lb_spec *spec = host_ctx->spec;
	char scratch_path[LB_FD_PATH_BUF];

	*scratch = -1;
	/* Nothing we mount may propagate back to the host, but host unmounts still reach us. */
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		return lb_err_set(err, errno, "make mounts private");
	if (mount_scratch(host_ctx, scratch, err) < 0)
		return -1;
	/* from here the state directory is the scratch tmpfs, reached through its handle */
	struct lb_child_ctx c = *host_ctx;
	const struct lb_child_ctx *ctx = &c;
	c.statedir = lb_fd_path(*scratch, scratch_path);
	if (fill_scratch(ctx, newroot, len, err) < 0 || mount_root(ctx, newroot, err) < 0)
		return -1;
	_cleanup_close_ int rootfd = open(newroot, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	if (rootfd < 0 || fstat(rootfd, &st) < 0)
		return lb_err_set(err, errno, "open %s", newroot);
	*root = (struct lb_root_id){.dev = st.st_dev, .ino = st.st_ino};
	/* A device node in an image (or a rootfs directory) is never usable: the only devices a
	 * sandbox can open are the ones lb_mount_dev binds into /dev, mounted after this. */
	/* private: what the host mounts later below a bound rootfs does not appear inside */
	if (lb_mount_setattr(rootfd, true, MOUNT_ATTR_NODEV, MS_PRIVATE, err) < 0)
		return lb_err_wrap(err, "root %s", newroot);
	if (lb_spec_is_host_image(spec) && lb_rootfs_host_image(rootfd, err) < 0)
		return -1;
	if (lb_mount_proc_sys(rootfd, ctx->cg, err) < 0)
		return -1;
	_cleanup_close_ int devfd = -1;
	if (lb_mount_dev(rootfd, ctx, &devfd, err) < 0)
		return -1;
	if (mount_tmp(rootfd, spec->tmp_size, err) < 0)
		return -1;
	if (bind_etc(rootfd, ctx, err) < 0)
		return -1;
	/* The volumes' targets are looked up by path, as the command sees them: a volume over /dev
	 * gets the next ones below /dev in it, not in the tmpfs it hides; lbbox's own /dev is then
	 * sealed through its handle. */
	if (user_mounts(rootfd, ctx, err) < 0 || lb_seal_dev(devfd, err) < 0)
		return -1;
	/* Like podman, a missing working directory is created (before the root turns read-only). */
	_cleanup_close_ int cwdfd = -1;
	if (spec->cwd && lb_open_in_root(rootfd, spec->cwd, true, true, &cwdfd, err) < 0)
		return lb_err_wrap(err, "working directory");
	return 0;
}

/* newroot still leads to the root lbbox mounted, not to something mounted on it since (which
 * pivot_root would make the sandbox's root): the same directory, the root of its mount. */
static int check_root(const char *newroot, const struct lb_root_id *root, struct lb_err **err)
{
	struct statx t;
	if (statx(AT_FDCWD, ".", 0, 0, &t) < 0)
		return lb_err_set(err, errno, "stat %s", newroot);
	if (makedev(t.stx_dev_major, t.stx_dev_minor) != root->dev || t.stx_ino != root->ino ||
	    !lb_statx_mount_root(&t))
		return lb_err_set(err, 0, "something was mounted over the sandbox's root");
	return 0;
}

int lb_pivot_root(const char *newroot, const struct lb_root_id *root, bool readonly,
		  struct lb_err **err)
{
	if (chdir(newroot) < 0)
		return lb_err_set(err, errno, "chdir %s", newroot);
	if (check_root(newroot, root, err) < 0)
		return -1;
	/* pivot_root(".", ".") stacks the old root under the new one; no put_old directory. */
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		return lb_err_set(err, errno, "pivot_root %s", newroot);
	if (umount2(".", MNT_DETACH) < 0)
		return lb_err_set(err, errno, "detach the old root");
	if (chdir("/") < 0)
		return lb_err_set(err, errno, "chdir /");
	if (readonly && lb_remount_ro("/", false, err) < 0)
		return -1;
	return 0;
}
