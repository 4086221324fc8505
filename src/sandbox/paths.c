/*
 * lbbox's own directories: the store (--root: images, unpacked snapshots, the seccomp cache) and
 * the runtime state (--runroot). Both are private to the user running lbbox, as podman's and
 * Docker's are: an image's setuid file in a snapshot must never be reachable from the host, nor
 * another sandbox's state. And no sandbox may mount either of them, or a directory holding them:
 * a sandbox could rewrite the cached seccomp programs or the state of the others.
 */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/mountinfo.h"
#include "lbbox/sandbox/sandbox.h"
#include "lbbox/base/util.h"

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
	if (strlen(p->root) >= LB_PATH_ROOT_MAX || strlen(p->runroot) >= LB_PATH_ROOT_MAX)
		return lb_err_set(err, 0,
				  "the store and runtime directory paths must be shorter "
				  "than %d bytes",
				  LB_PATH_ROOT_MAX);
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

static const char *env_or(const char *name, const char *def)
{
	const char *v = getenv(name);
	return v && *v ? v : def;
}

/* podman's rootless places: the store under $XDG_DATA_HOME (~/.local/share), the runtime state
 * under $XDG_RUNTIME_DIR, or a per-user directory in /tmp (checked to be ours). */
static void rootless_defaults(struct lb_default_paths *d)
{
	const char *data = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
	const char *run = getenv("XDG_RUNTIME_DIR");
	const struct passwd *pw = home && *home ? NULL : getpwuid(geteuid());
	if (pw && pw->pw_dir && *pw->pw_dir)
		home = pw->pw_dir;
	if (run && *run)
		snprintf(d->runroot, sizeof(d->runroot), "%s/lbbox", run);
	else
		snprintf(d->runroot, sizeof(d->runroot), "/tmp/lbbox-run-%u", (unsigned)geteuid());
	if (data && *data)
		snprintf(d->root, sizeof(d->root), "%s/lbbox", data);
	else if (home && *home)
		snprintf(d->root, sizeof(d->root), "%s/.local/share/lbbox", home);
	else /* no home at all: beside the runtime state, whose directory is checked to be ours */
		snprintf(d->root, sizeof(d->root), "%s/store", d->runroot);
}

void lb_paths_defaults(struct lb_default_paths *d)
{
	struct lb_default_paths own = {"/var/lib/lbbox", "/run/lbbox"};
	if (geteuid() != 0)
		rootless_defaults(&own);
	snprintf(d->root, sizeof(d->root), "%s", env_or("LBBOX_ROOT", own.root));
	snprintf(d->runroot, sizeof(d->runroot), "%s", env_or("LBBOX_RUNROOT", own.runroot));
}

int lb_paths_check_runroot(const char *runroot, struct lb_err **err)
{
	struct stat st;
	if (geteuid() == 0 || strncmp(runroot, "/tmp/lbbox-run-", 15) != 0)
		return 0;
	if ((mkdir(runroot, 0700) < 0 && errno != EEXIST) || lstat(runroot, &st) < 0)
		return lb_err_set(err, errno, "runtime directory %s", runroot);
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
		return lb_err_set(err, 0,
				  "runtime directory %s is not a private directory of this user; "
				  "set XDG_RUNTIME_DIR or --runroot",
				  runroot);
	return 0;
}
