/*
 * lbbox's own directories: the store (--root: images, unpacked snapshots, the seccomp cache) and
 * the runtime state (--runroot). Both are private to the user running lbbox, as podman's and
 * Docker's are: an image's setuid file in a snapshot must never be reachable from the host, nor
 * another sandbox's state. And no sandbox may mount either of them, or a directory holding them:
 * a sandbox could rewrite the cached seccomp programs or the state of the others.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lbbox/cleanup.h"
#include "lbbox/mountinfo.h"
#include "lbbox/sandbox.h"
#include "lbbox/util.h"

/* What lbbox itself puts at the top of the store (image/ and the seccomp cache). */
static bool root_entry(const char *name)
{
	static const char *const names[] = {"oci-layout", "blobs",  "tmp",	 "snapshots",
					    "cache",	  "images", "index.json"};
	if (name[0] == '.' || !strncmp(name, "index.json", 10))
		return true;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return true;
	return false;
}

/* Sandboxes' state directories (12 hex digits), the Box's and the networks' state, locks. */
static bool runroot_entry(const char *name)
{
	if (name[0] == '.' || !strcmp(name, "box") || !strcmp(name, "net"))
		return true;
	size_t n = strspn(name, "0123456789abcdef");
	return n == 12 && name[n] == '\0';
}

int lb_paths_secure(const struct lb_paths *p, struct lb_err **err)
{
	if (lb_private_dir(p->root, "store", root_entry, err) < 0 ||
	    lb_private_dir(p->runroot, "runtime directory", runroot_entry, err) < 0)
		return -1;
	return 0;
}

int lb_paths_check_mount(const struct lb_paths *p, const char *canonical, const char *original,
			 struct lb_err **err)
{
	struct lb_mountinfo mi;
	if (lb_mountinfo_read(&mi, err) < 0)
		return -1;
	const char *dirs[] = {p->root, p->runroot};
	int r = 0;
	for (size_t i = 0; i < 2 && r == 0; i++) {
		_cleanup_free_ char *real = dirs[i] ? realpath(dirs[i], NULL) : NULL;
		/* not created yet: nothing of it can be mounted */
		if (real && lb_mountinfo_overlap(&mi, canonical, real))
			r = lb_err_set(err, 0,
				       "host path %s overlaps lbbox's own state (%s): refused",
				       original, dirs[i]);
	}
	lb_mountinfo_free(&mi);
	return r;
}
