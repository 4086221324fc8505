/*
 * Rootless sandboxes: without root, lbbox gives the sandbox a user namespace of its own in which
 * the caller's uid and gid are 0, and nothing else is mapped (subordinate ranges would need the
 * setuid newuidmap). That user namespace owns the sandbox's other namespaces, so pid 1 holds
 * every capability over its own mounts, network and hostname, and none over the host's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>
#include <unistd.h>

#include "lbbox/sandbox.h"
#include "lbbox/util.h"
#include "sandbox/engine.h"

/* Root in the initial user namespace (or with CAP_SYS_ADMIN there) builds sandboxes as root. */
bool lb_rootless(void)
{
	if (geteuid() == 0)
		return false;
	cap_t caps = cap_get_proc();
	cap_flag_value_t v = CAP_CLEAR;
	if (caps)
		cap_get_flag(caps, CAP_SYS_ADMIN, CAP_EFFECTIVE, &v);
	cap_free(caps);
	return v != CAP_SET;
}

int lb_userns_check_spec(const struct lb_spec *spec, struct lb_err **err)
{
	if (spec->uid != 0 || spec->gid != 0)
		return lb_err_set(err, 0,
				  "--user %u:%u: a rootless sandbox maps only your own user (uid 0 "
				  "inside); other users need lbbox run as root",
				  spec->uid, spec->gid);
	return 0;
}

static int write_proc(pid_t pid, const char *file, const char *text, struct lb_err **err)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	return lb_write_fileat(AT_FDCWD, path, text, strlen(text), 0, 0, err);
}

/* setgroups must be denied before an unprivileged gid_map can be written (user_namespaces(7)). */
int lb_userns_map(pid_t pid, struct lb_err **err)
{
	char map[64];
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)geteuid());
	if (write_proc(pid, "uid_map", map, err) < 0 ||
	    write_proc(pid, "setgroups", "deny\n", err) < 0)
		return lb_err_wrap(err, "user namespace of the sandbox");
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)getegid());
	if (write_proc(pid, "gid_map", map, err) < 0)
		return lb_err_wrap(err, "user namespace of the sandbox");
	return 0;
}
