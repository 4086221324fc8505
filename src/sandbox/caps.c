/*
 * Identity and privileges of the command: supplementary groups, gid, uid, then the capability
 * sets (bounding, ambient and inheritable cleared of everything not kept), then no_new_privs so
 * nothing executed can gain privileges back through setuid bits or file capabilities.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "engine.h"

/* Must run while still uid 0 with CAP_SETPCAP: dropping from the bounding set needs it. */
static int drop_bounding(uint64_t keep, struct lb_err **err)
{
	for (cap_value_t c = 0; c <= CAP_LAST_CAP; c++) {
		if (keep & (1ULL << c))
			continue;
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			return lb_err_set(err, errno, "drop capability %d from the bounding set",
					  c);
	}
	return 0;
}

static bool setgroups_denied(void)
{
	char buf[16] = "";
	int fd = open("/proc/self/setgroups", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		(void)!read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	return strncmp(buf, "deny", 4) == 0;
}

static int set_identity(const struct lb_spec *spec, struct lb_err **err)
{
	uid_t uid = spec->uid;
	gid_t gid = spec->gid;
	/* a rootless sandbox's user namespace denies setgroups (the price of mapping without
	 * newgidmap): its supplementary groups stay the caller's, shown as the overflow gid */
	if (setgroups(spec->n_groups, spec->groups) < 0) {
		if (spec->n_groups && errno == EINVAL)
			return lb_err_set(err, 0,
					  "a supplementary group is not mapped in the sandbox");
		if (spec->n_groups || !(errno == EPERM && setgroups_denied()))
			return lb_err_set(err, errno, "setgroups");
	}
	/* EINVAL: an id the sandbox's user namespace does not map */
	if (setresgid(gid, gid, gid) < 0)
		return errno == EINVAL
			   ? lb_err_set(err, 0, "group %u is not mapped in the sandbox", gid)
			   : lb_err_set(err, errno, "setgid %u", gid);
	if (setresuid(uid, uid, uid) < 0)
		return errno == EINVAL
			   ? lb_err_set(err, 0, "user %u is not mapped in the sandbox", uid)
			   : lb_err_set(err, errno, "setuid %u", uid);
	return 0;
}

/* A capability the host does not give lbbox (outside its bounding set) is named. */
static int caps_refused(uint64_t keep, int e, struct lb_err **err)
{
	for (cap_value_t c = 0; c <= CAP_LAST_CAP; c++) {
		if (!(keep & (1ULL << c)) || prctl(PR_CAPBSET_READ, c, 0, 0, 0) > 0)
			continue;
		char *name = cap_to_name(c);
		for (char *p = name; p && *p; p++)
			*p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
		int r =
		    lb_err_set(err, 0,
			       "capability %s: this host does not give it to lbbox (it is not in "
			       "lbbox's bounding set); drop it (--cap-drop)",
			       name ? name : "?");
		cap_free(name);
		return r;
	}
	return lb_err_set(err, e, "set capabilities");
}

/* Permitted/effective = keep for root, nothing for other users (as Docker); inheritable empty. */
static int set_caps(uint64_t keep, struct lb_err **err)
{
	cap_t caps = cap_init();
	if (!caps)
		return lb_err_set(err, errno, "cap_init");
	for (cap_value_t c = 0; c <= CAP_LAST_CAP; c++) {
		if (!(keep & (1ULL << c)))
			continue;
		cap_set_flag(caps, CAP_EFFECTIVE, 1, &c, CAP_SET);
		cap_set_flag(caps, CAP_PERMITTED, 1, &c, CAP_SET);
	}
	int r = cap_set_proc(caps);
	int e = errno;
	cap_free(caps);
	if (r < 0)
		return caps_refused(keep, e, err);
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return lb_err_set(err, errno, "clear ambient capabilities");
	return 0;
}

int lb_drop_privileges(const struct lb_spec *spec, struct lb_err **err)
{
	uint64_t keep = spec->uid == 0 ? spec->caps : 0;

	if (drop_bounding(keep, err) < 0)
		return -1;
	/* keep permitted caps across setuid so set_caps can still narrow them precisely */
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
		return lb_err_set(err, errno, "PR_SET_KEEPCAPS");
	if (set_identity(spec, err) < 0)
		return -1;
	/* a new uid or gid made it dumpable again where fs.suid_dumpable is 1: until its execve no
	 * process of that user may write its memory (and run it without the seccomp filter). Set
	 * while the kept capabilities still deny that user access */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return lb_err_set(err, errno, "PR_SET_DUMPABLE");
	if (set_caps(keep, err) < 0)
		return -1;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return lb_err_set(err, errno, "PR_SET_NO_NEW_PRIVS");
	return 0;
}
