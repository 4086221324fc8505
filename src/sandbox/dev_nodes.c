/*
 * The spec's extra devices (an OCI bundle's linux.devices): checked before anything exists, then
 * made by pid 1 in the sandbox's fresh /dev tmpfs before it turns read-only. As the host's root,
 * mknod with the asked mode and owner; in a user namespace, where the kernel refuses mknod, the
 * host's node at the same path is bound instead (as runc does), and only when it is that very
 * device: its type and numbers are read from the descriptor opened, never trusted from the name.
 * Every path is walked one component at a time below /dev, without following a link, and must
 * stay on /dev's own tmpfs (not devpts, not /dev/shm). Whether the command may then open the
 * node is the device fence's call (cgroup_devices.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "engine.h"

#define DEV_PATH_MAX 255

void lb_devices_free(struct lb_device *d, size_t n)
{
	for (size_t i = 0; d && i < n; i++) {
		free(d[i].path);
		free(d[i].host_path);
	}
	free(d);
}

/* "/dev/a/b": every component after /dev/ a plain name. */
static bool path_ok(const char *p)
{
	if (!p || strncmp(p, "/dev/", 5) != 0 || strlen(p) > DEV_PATH_MAX)
		return false;
	for (const char *c = p + 5;; c++) {
		const char *end = strchrnul(c, '/');
		size_t len = (size_t)(end - c);
		if (!len || (len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		for (const char *q = c; q < end; q++)
			if ((unsigned char)*q < 0x20 || *q == 0x7f)
				return false;
		if (!*end)
			return true;
		c = end;
	}
}

static int check_one(const struct lb_device *d, struct lb_err **err)
{
	if (!path_ok(d->path))
		return lb_err_set(err, EINVAL, "device path %.64s must be a plain path below /dev/",
				  d->path ? d->path : "(none)");
	if (d->host_path && d->host_path[0] != '/')
		return lb_err_set(err, EINVAL, "device %s: the host's node must be absolute",
				  d->path);
	if (d->type != 'c' && d->type != 'b' && d->type != 'p')
		return lb_err_set(err, EINVAL, "device %s: type must be c, b or p", d->path);
	if (d->major >= 4096 || d->minor >= (1u << 20))
		return lb_err_set(err, EINVAL, "device %s: major or minor out of range", d->path);
	if (d->mode & ~07777u)
		return lb_err_set(err, EINVAL, "device %s: mode %o is not a permission", d->path,
				  d->mode);
	if (d->access & ~LB_DEV_RWM || (d->type == 'p' && d->access))
		return lb_err_set(err, EINVAL, "device %s: bad access", d->path);
	return 0;
}

int lb_spec_check_devices(const struct lb_spec *spec, struct lb_err **err)
{
	if (spec->n_devices > LB_MAX_DEVICES)
		return lb_err_set(err, E2BIG, "too many devices (at most %d)", LB_MAX_DEVICES);
	for (size_t i = 0; i < spec->n_devices; i++)
		if (check_one(&spec->devices[i], err) < 0)
			return -1;
	return 0;
}

static mode_t node_type(char type)
{
	return type == 'b' ? S_IFBLK : type == 'c' ? S_IFCHR : S_IFIFO;
}

static bool same_device(const struct stat *st, const struct lb_device *d)
{
	if ((st->st_mode & S_IFMT) != node_type(d->type))
		return false;
	return d->type == 'p' || st->st_rdev == makedev(d->major, d->minor);
}

int lb_devices_open_host(const struct lb_spec *spec, int *fds, struct lb_err **err)
{
	for (size_t i = 0; i < spec->n_devices; i++) {
		const struct lb_device *d = &spec->devices[i];
		const char *host = d->host_path ? d->host_path : d->path;
		struct stat st;
		if (d->type == 'p')
			continue;
		fds[i] = open(host, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fds[i] < 0)
			return lb_err_set(err, errno, "device %s: the host's node to bind", host);
		if (fstat(fds[i], &st) < 0)
			return lb_err_set(err, errno, "device %s", host);
		if (!same_device(&st, d))
			return lb_err_set(err, EINVAL, "device %s: the host's node is not %c %u:%u",
					  host, d->type, d->major, d->minor);
	}
	return 0;
}

/* *dir: the directory of path's last component (made when missing), on /dev's own file system;
 * *name points into buf. */
static int open_parent(int devfd, dev_t devdev, char *buf, int *dir, const char **name,
		       struct lb_err **err)
{
	_cleanup_close_ int cur = fcntl(devfd, F_DUPFD_CLOEXEC, 0);
	char *c = buf;
	if (cur < 0)
		return lb_err_set(err, errno, "dup");
	for (char *slash; (slash = strchr(c, '/')); c = slash + 1) {
		struct stat st;
		*slash = '\0';
		if (mkdirat(cur, c, 0755) < 0 && errno != EEXIST)
			return lb_err_set(err, errno, "mkdir %s", c);
		int next = openat(cur, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0)
			return lb_err_set(err, errno, "open %s", c);
		close(cur);
		cur = next;
		if (fstat(cur, &st) < 0)
			return lb_err_set(err, errno, "stat %s", c);
		if (st.st_dev != devdev)
			return lb_err_set(err, EXDEV, "%s is not part of /dev itself", c);
	}
	*name = c;
	*dir = LB_TAKE_FD(cur);
	return 0;
}

/* The host's node (hostfd) bound on an empty file made for it. */
static int bind_node(int dir, const char *name, int hostfd, struct lb_err **err)
{
	char src[LB_FD_PATH_BUF];
	_cleanup_close_ int fd = openat(dir, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0)
		return lb_err_set(err, errno, "create");
	_cleanup_close_ int pfd = openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0)
		return lb_err_set(err, errno, "open");
	return lb_mount_fd(lb_fd_path(hostfd, src), pfd, NULL, MS_BIND, NULL, err);
}

static int make_node(int dir, const char *name, const struct lb_device *d, struct lb_err **err)
{
	if (mknodat(dir, name, node_type(d->type) | (d->mode & 07777),
		    makedev(d->major, d->minor)) < 0)
		return lb_err_set(err, errno, "mknod");
	/* the umask took bits away; the mode asked is the node's */
	if (fchownat(dir, name, d->uid, d->gid, AT_SYMLINK_NOFOLLOW) < 0 ||
	    fchmodat(dir, name, d->mode & 07777, 0) < 0)
		return lb_err_set(err, errno, "owner and mode");
	return 0;
}

/* An existing node (lbbox's own, or an earlier entry) is kept only when it is that device. */
static int make_one(int devfd, dev_t devdev, const struct lb_device *d, int hostfd,
		    struct lb_err **err)
{
	char buf[DEV_PATH_MAX + 1];
	const char *name = NULL;
	struct stat st;
	_cleanup_close_ int dir = -1;
	snprintf(buf, sizeof(buf), "%s", d->path + 5);
	if (open_parent(devfd, devdev, buf, &dir, &name, err) < 0)
		return -1;
	if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return same_device(&st, d) ? 0 : lb_err_set(err, EEXIST, "another node is there");
	if (errno != ENOENT)
		return lb_err_set(err, errno, "stat");
	return hostfd >= 0 ? bind_node(dir, name, hostfd, err) : make_node(dir, name, d, err);
}

int lb_make_devices(int devfd, const struct lb_spec *spec, const int *hostfds, struct lb_err **err)
{
	struct stat st;
	if (!spec->n_devices)
		return 0;
	if (fstat(devfd, &st) < 0)
		return lb_err_set(err, errno, "stat /dev");
	for (size_t i = 0; i < spec->n_devices; i++)
		if (make_one(devfd, st.st_dev, &spec->devices[i], hostfds[i], err) < 0)
			return lb_err_wrap(err, "device %s", spec->devices[i].path);
	return 0;
}
