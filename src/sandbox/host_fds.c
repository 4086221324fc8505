/*
 * What pid 1 takes from the host (its state directory, the rootfs, volume sources, the start
 * gate, the console socket) is opened first, by path, and from then on reached through the
 * descriptors alone. With mapped ids pid 1 opens them while it is still the host's root in its
 * new user namespace (no capability over host files there, but the owner of root's private
 * directories: a --root, a bundle below a 0700 directory), then becomes the namespace's root,
 * which need not be able to walk there (runc's rule that the container's root must reach the
 * bundle does not apply). Opened after the clone, so they are mounts of pid 1's own namespace,
 * as mount and move_mount require.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lbbox/base/console.h"
#include "engine.h"

const char *lb_fd_path(int fd, char buf[LB_FD_PATH_BUF])
{
	snprintf(buf, LB_FD_PATH_BUF, "/proc/self/fd/%d", fd);
	return buf;
}

static int open_dir(const char *path, const char *what, int *out, struct lb_err **err)
{
	*out = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return *out < 0 ? lb_err_set(err, errno, "open %s %s", what, path) : 0;
}

/*
 * The source was canonicalised and checked against the blocked paths (lb_spec_check). Opening
 * that symlink-free path again with RESOLVE_NO_SYMLINKS, and binding the opened inode, closes
 * the window in which a path component could be swapped for a symlink to /etc.
 */
static int open_volume(const struct lb_mount *m, int *out, struct lb_err **err)
{
	struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_NO_SYMLINKS};
	*out = (int)syscall(SYS_openat2, AT_FDCWD, m->source, &how, sizeof(how));
	if (*out >= 0)
		return 0;
	/* with mapped ids, pid 1 reaches what the host's root owns, not others' private
	 * directories (it has no capability over host files) */
	if (errno == EACCES)
		return lb_err_set(err, errno, "volume %s", m->source);
	return lb_err_set(err, errno, "volume %s changed since it was checked", m->source);
}

/* Read side, non-blocking: the open needs no writer, and poll() sees nothing until `start`
 * writes. */
static int open_gate(const char *path, int *out, struct lb_err **err)
{
	struct stat st;
	*out = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (*out < 0)
		return lb_err_set(err, errno, "start gate %s", path);
	if (fstat(*out, &st) < 0 || !S_ISFIFO(st.st_mode))
		return lb_err_set(err, EINVAL, "start gate %s is not a fifo", path);
	return 0;
}

static int open_rootfs(const struct lb_spec *spec, const char *statedir, int *out,
		       struct lb_err **err)
{
	char copy[LB_PATH_BUF];
	if (spec->copy_rootfs) { /* the per-sandbox copy, made in the state directory */
		snprintf(copy, sizeof(copy), "%s/rootfs", statedir);
		return open_dir(copy, "the copy of", out, err);
	}
	return spec->rootfs && !spec->layers ? open_dir(spec->rootfs, "rootfs", out, err) : 0;
}

void lb_host_fds_init(struct lb_host_fds *h)
{
	h->statedir = h->rootfs = h->gate = h->console = -1;
	for (size_t i = 0; i < LB_MAX_MOUNTS; i++)
		h->mounts[i] = -1;
	for (size_t i = 0; i < LB_MAX_DEVICES; i++)
		h->devices[i] = -1;
}

int lb_host_fds_open(const struct lb_spec *spec, const char *statedir, bool userns,
		     struct lb_host_fds *h, struct lb_err **err)
{
	if (open_dir(statedir, "state directory", &h->statedir, err) < 0 ||
	    open_rootfs(spec, statedir, &h->rootfs, err) < 0)
		return -1;
	for (size_t i = 0; i < spec->n_mounts; i++)
		if (!spec->mounts[i].tmpfs_size &&
		    open_volume(&spec->mounts[i], &h->mounts[i], err) < 0)
			return -1;
	if (userns && lb_devices_open_host(spec, h->devices, err) < 0)
		return -1;
	if (spec->start_gate && open_gate(spec->start_gate, &h->gate, err) < 0)
		return -1;
	/* connected here, where the path resolves; pid 1 makes the pty on its own devpts */
	if (spec->console_socket &&
	    (h->console = lb_console_connect(spec->console_socket, err)) < 0)
		return -1;
	return 0;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

void lb_host_fds_close(struct lb_host_fds *h)
{
	close_fd(&h->statedir);
	close_fd(&h->rootfs);
	close_fd(&h->gate);
	close_fd(&h->console);
	for (size_t i = 0; i < LB_MAX_MOUNTS; i++)
		close_fd(&h->mounts[i]);
	for (size_t i = 0; i < LB_MAX_DEVICES; i++)
		close_fd(&h->devices[i]);
}
