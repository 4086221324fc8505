/*
 * The built-in "host" image: the host's own userland read-only in a fresh tmpfs root, and only
 * the /etc entries a program needs to start (the dynamic loader's cache, certificates, time
 * zone, alternatives). Secrets such as /etc/shadow or ssh keys never appear.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "engine.h"

static const char *const host_dirs[] = {"/usr",	  "/bin",   "/sbin",  "/lib",
					"/lib32", "/lib64", "/libx32"};

static const char *const host_etc[] = {
    "/etc/ld.so.cache",	    "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/ssl",
    "/etc/ca-certificates", "/etc/localtime",  "/etc/timezone",	    "/etc/alternatives",
    "/etc/nsswitch.conf",   "/etc/host.conf",  "/etc/gai.conf",	    "/etc/os-release",
    "/etc/debian_version",  "/etc/mime.types", "/etc/protocols",    "/etc/services",
    "/etc/python3",	    "/etc/python3.11", "/etc/pki",	    "/etc/crypto-policies",
};

/* Mirrors a host symlink (merged /usr: /bin -> usr/bin) or binds the directory read-only. */
static int mirror(int rootfd, const char *path, struct lb_err **err)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : lb_err_set(err, errno, "host image: %s", path);
	if (!S_ISLNK(st.st_mode))
		return lb_bind_in_root(rootfd, path, path, true, err);

	char target[PATH_MAX];
	ssize_t n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return lb_err_set(err, errno, "host image: readlink %s", path);
	target[n] = '\0';
	if (symlinkat(target, rootfd, path + 1) < 0 && errno != EEXIST)
		return lb_err_set(err, errno, "host image: symlink %s", path);
	return 0;
}

static int make_dirs(int rootfd, struct lb_err **err)
{
	static const char *const dirs[] = {"etc", "proc", "sys",  "dev",      "tmp",
					   "run", "var",  "root", "workspace"};
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (mkdirat(rootfd, dirs[i], 0755) < 0 && errno != EEXIST)
			return lb_err_set(err, errno, "host image: mkdir /%s", dirs[i]);
	if (symlinkat("../tmp", rootfd, "var/tmp") < 0 && errno != EEXIST)
		return lb_err_set(err, errno, "host image: symlink /var/tmp");
	return 0;
}

int lb_rootfs_host_image(int rootfd, struct lb_err **err)
{
	if (make_dirs(rootfd, err) < 0)
		return -1;
	for (size_t i = 0; i < sizeof(host_dirs) / sizeof(host_dirs[0]); i++)
		if (mirror(rootfd, host_dirs[i], err) < 0)
			return -1;
	for (size_t i = 0; i < sizeof(host_etc) / sizeof(host_etc[0]); i++)
		if (mirror(rootfd, host_etc[i], err) < 0)
			return -1;
	return 0;
}
