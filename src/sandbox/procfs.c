/*
 * /proc and /sys for the sandbox. procfs belongs to the new pid namespace; the paths Docker masks
 * (kernel memory, keys, timers, interrupts, firmware) are covered, and the tunables are read-only.
 * /sys/fs/cgroup shows the sandbox's own cgroup as root (cgroup namespace), read-only, so
 * runtimes that size themselves from cgroup limits (JVM, node, Go) see the real limits.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "engine.h"

static const char *const proc_masked[] = {
    "asound",	   "acpi",	  "kcore", "keys",	 "latency_stats", "timer_list",
    "timer_stats", "sched_debug", "scsi",  "interrupts", "kallsyms",	  "kmsg",
};
static const char *const sys_masked[] = {
    "firmware",
    "devices/virtual/powercap",
    "kernel/security",
    "kernel/debug",
};
static const char *const proc_readonly[] = {"bus", "fs", "irq", "sys", "sysrq-trigger"};

#define NOSUID_NODEV_NOEXEC	  (MS_NOSUID | MS_NODEV | MS_NOEXEC)
#define NOSUID_NODEV_NOEXEC_ATTRS (MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC)
#define N_ELEM(a)		  (sizeof(a) / sizeof((a)[0]))

/* Entries are looked up below an fd of the fresh procfs/sysfs, never through a path string. */
static int mask_path(int dirfd, const char *name, struct lb_err **err)
{
	struct stat st;
	_cleanup_close_ int fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR
			   ? 0
			   : lb_err_set(err, errno, "mask %s", name);
	if (fstat(fd, &st) < 0)
		return lb_err_set(err, errno, "mask %s", name);
	if (S_ISDIR(st.st_mode))
		return lb_mount_fd("lbbox-mask", fd, "tmpfs", MS_RDONLY | NOSUID_NODEV_NOEXEC,
				   "size=0", err);
	return lb_mount_fd("/dev/null", fd, NULL, MS_BIND, NULL, err);
}

/* Bound onto itself read-only through its one descriptor (lb_bind_tree), never looked up again. */
static int readonly_path(int dirfd, const char *name, struct lb_err **err)
{
	_cleanup_close_ int fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : lb_err_set(err, errno, "read-only %s", name);
	if (lb_bind_tree(fd, "", fd, MOUNT_ATTR_RDONLY, 0, NULL, err) < 0)
		return lb_err_wrap(err, "read-only /proc/%s", name);
	return 0;
}

static int mount_cgroup_v1(int sysfd, const struct lb_cgroup *cg, struct lb_err **err)
{
	_cleanup_close_ int fd = -1;
	if (lb_open_in_root(sysfd, "fs/cgroup", false, true, &fd, err) < 0)
		return -1;
	if (lb_mount_fd("lbbox-cgroup", fd, "tmpfs", NOSUID_NODEV_NOEXEC, "mode=0755,size=64k",
			err) < 0)
		return -1;
	_cleanup_close_ int dirfd = -1;
	if (lb_open_in_root(sysfd, "fs/cgroup", false, true, &dirfd, err) < 0)
		return -1;
	for (const char *const *h = lb_cgroup_v1_hierarchies(cg); h && *h; h++) {
		_cleanup_close_ int hfd = -1;
		if (lb_open_in_root(dirfd, *h, true, true, &hfd, err) < 0)
			return -1;
		if (lb_mount_fd("cgroup", hfd, "cgroup", MS_RDONLY | NOSUID_NODEV_NOEXEC, *h, err) <
		    0)
			return lb_err_wrap(err, "cgroup %s", *h);
	}
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", dirfd);
	return lb_remount_ro(path, false, err);
}

static int mount_cgroup(int sysfd, const struct lb_cgroup *cg, struct lb_err **err)
{
	_cleanup_close_ int fd = -1;
	switch (lb_cgroup_version(cg)) {
	case LB_CGROUP_V2:
		if (lb_open_in_root(sysfd, "fs/cgroup", false, true, &fd, err) < 0)
			return -1;
		return lb_mount_fd("cgroup2", fd, "cgroup2", MS_RDONLY | NOSUID_NODEV_NOEXEC, NULL,
				   err);
	case LB_CGROUP_V1:
		return mount_cgroup_v1(sysfd, cg, err);
	default:
		return 0;
	}
}

/*
 * A sysfs shows the network namespace of whoever mounts it, and only that namespace's owner may:
 * in a user namespace of its own whose network namespace is the host's or a joined one (CNI's),
 * EPERM. Then, as runc does, the host's /sys is bound instead, read-only; the masks and the
 * cgroup mounts below go over it the same way.
 */
static int mount_sysfs(int rootfd, int *sysfd, struct lb_err **err)
{
	_cleanup_close_ int fd = -1;
	struct lb_err *e = NULL;
	if (lb_open_root_dir(rootfd, "sys", &fd, err) < 0)
		return -1;
	if (lb_mount_new("sysfs", MOUNT_ATTR_RDONLY | NOSUID_NODEV_NOEXEC_ATTRS, fd, sysfd, &e) ==
	    0)
		return 0;
	int errnum = e->errnum;
	if (errnum != EPERM && err)
		*err = LB_TAKE_PTR(e);
	lb_err_free(&e);
	if (errnum != EPERM)
		return -1;
	return lb_bind_tree(AT_FDCWD, "/sys", fd, MOUNT_ATTR_RDONLY | NOSUID_NODEV_NOEXEC_ATTRS, 0,
			    sysfd, err) < 0
		   ? lb_err_wrap(err, "the host's /sys")
		   : 0;
}

/* Masks and cgroup mounts through the handle of the mount just made, never by "/sys" again. */
static int mount_sys(int rootfd, const struct lb_cgroup *cg, struct lb_err **err)
{
	_cleanup_close_ int sysfd = -1;
	if (mount_sysfs(rootfd, &sysfd, err) < 0)
		return -1;
	for (size_t i = 0; i < N_ELEM(sys_masked); i++)
		if (mask_path(sysfd, sys_masked[i], err) < 0)
			return -1;
	return mount_cgroup(sysfd, cg, err);
}

int lb_mount_proc_sys(int rootfd, const struct lb_cgroup *cg, struct lb_err **err)
{
	_cleanup_close_ int fd = -1;
	if (lb_open_root_dir(rootfd, "proc", &fd, err) < 0)
		return -1;
	_cleanup_close_ int procfd = -1;
	if (lb_mount_new("proc", NOSUID_NODEV_NOEXEC_ATTRS, fd, &procfd, err) < 0)
		return -1;
	for (size_t i = 0; i < N_ELEM(proc_masked); i++)
		if (mask_path(procfd, proc_masked[i], err) < 0)
			return -1;
	for (size_t i = 0; i < N_ELEM(proc_readonly); i++)
		if (readonly_path(procfd, proc_readonly[i], err) < 0)
			return -1;
	return mount_sys(rootfd, cg, err);
}
