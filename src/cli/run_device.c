/* lbbox run --device HOST[:CONTAINER][:PERMS], as podman spells it: the host's device node, made
 * (or, rootless, bound) at CONTAINER in the sandbox's /dev, and let through the device fence
 * with PERMS (r, w, m; default rwm). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"
#include "run_internal.h"

static bool is_perms(const char *s)
{
	return *s && s[strspn(s, "rwm")] == '\0';
}

static unsigned perms_bits(const char *s)
{
	unsigned bits = 0;
	for (; *s; s++)
		bits |= *s == 'r' ? LB_DEV_READ : *s == 'w' ? LB_DEV_WRITE : LB_DEV_MKNOD;
	return bits;
}

/* HOST, CONTAINER (HOST when not given) and PERMS (NULL: rwm) out of arg, split in copy. */
static int split(const char *arg, char *copy, char **host, char **ctr, char **perms,
		 struct lb_err **err)
{
	char *p[3] = {copy, NULL, NULL};
	size_t n = 1;
	for (char *c = copy; (c = strchr(c, ':')); *c++ = '\0') {
		if (n == 3)
			return lb_err_set(err, 0, "invalid --device '%s': HOST[:CONTAINER][:PERMS]",
					  arg);
		p[n++] = c + 1;
	}
	*host = p[0];
	*ctr = n == 3 || (n == 2 && !is_perms(p[1])) ? p[1] : p[0];
	*perms = n == 3 ? p[2] : n == 2 && is_perms(p[1]) ? p[1] : NULL;
	if ((*host)[0] != '/' || (*ctr)[0] != '/')
		return lb_err_set(err, 0, "invalid --device '%s': paths must be absolute", arg);
	if (*perms && !is_perms(*perms))
		return lb_err_set(err, 0, "invalid --device '%s': PERMS is made of r, w, m", arg);
	return 0;
}

int run_add_device(struct lb_spec *spec, const char *arg, struct lb_err **err)
{
	_cleanup_free_ char *copy = strdup(arg);
	char *host = NULL, *ctr = NULL, *perms = NULL;
	struct stat st;
	if (!copy)
		return lb_err_set(err, ENOMEM, "--device");
	if (spec->n_devices >= LB_MAX_DEVICES)
		return lb_err_set(err, 0, "too many --device options (at most %d)", LB_MAX_DEVICES);
	if (split(arg, copy, &host, &ctr, &perms, err) < 0)
		return -1;
	if (stat(host, &st) < 0)
		return lb_err_set(err, errno, "--device %s", host);
	if (!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode))
		return lb_err_set(err, 0, "--device %s is not a device node", host);
	struct lb_device *grown = realloc(spec->devices, (spec->n_devices + 1) * sizeof(*grown));
	if (!grown)
		return lb_err_set(err, ENOMEM, "--device");
	spec->devices = grown;
	/* a link's target is what a user namespace binds; pid 1 checks it is still this device */
	struct lb_device *d = &spec->devices[spec->n_devices];
	errno = 0;
	*d = (struct lb_device){
	    .path = strdup(ctr),
	    .host_path = realpath(host, NULL),
	    .type = S_ISBLK(st.st_mode) ? 'b' : 'c',
	    .major = major(st.st_rdev),
	    .minor = minor(st.st_rdev),
	    .mode = st.st_mode & 07777,
	    .uid = st.st_uid,
	    .gid = st.st_gid,
	    .access = perms ? perms_bits(perms) : LB_DEV_RWM,
	};
	spec->n_devices++; /* freed with the spec from here */
	if (!d->path || !d->host_path)
		return lb_err_set(err, errno ? errno : ENOMEM, "--device %s", host);
	return 0;
}
