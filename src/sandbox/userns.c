/*
 * Rootless sandboxes: without root, lbbox gives the sandbox a user namespace of its own in which
 * the caller's uid and gid are 0, and nothing else is mapped (subordinate ranges would need the
 * setuid newuidmap). That user namespace owns the sandbox's other namespaces, so pid 1 holds
 * every capability over its own mounts, network and hostname, and none over the host's.
 *
 * As root, a spec may give uid and gid maps of its own (an OCI bundle's uidMappings: podman
 * --uidmap, Kubernetes' user namespaces): root writes them directly, and pid 1, once they are
 * written, becomes the namespace's uid 0 (a host id such as 100000) before it builds anything.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>
#include <unistd.h>

#include "lbbox/sandbox/net.h"
#include "lbbox/sandbox/sandbox.h"
#include "lbbox/base/util.h"
#include "engine.h"

bool lb_cap_effective(int cap)
{
	cap_t caps = cap_get_proc();
	cap_flag_value_t v = CAP_CLEAR;
	if (caps)
		cap_get_flag(caps, cap, CAP_EFFECTIVE, &v);
	cap_free(caps);
	return v == CAP_SET;
}

/* Root in the initial user namespace (or with CAP_SYS_ADMIN there) builds sandboxes as root. */
bool lb_rootless(void)
{
	return geteuid() != 0 && !lb_cap_effective(CAP_SYS_ADMIN);
}

/*
 * Capabilities that would undo what a rootless sandbox relies on. Its pid 1 holds every
 * capability of the user namespace and stays dumpable (init.c): only the kernel's rule that a
 * tracer's capabilities must cover its target's keeps the command out, unless it has
 * CAP_SYS_PTRACE. With network "on", lbbox's filter lives in the sandbox's own namespace:
 * CAP_NET_ADMIN could delete it, CAP_NET_RAW send frames past it (packet sockets skip the
 * output hook) to pasta, which connects anywhere.
 */
int lb_rootless_check(const struct lb_spec *spec, struct lb_err **err)
{
	static const struct {
		int cap;
		const char *name;
		bool net_on_only;
	} refused[] = {{CAP_SYS_PTRACE, "SYS_PTRACE", false},
		       {CAP_NET_ADMIN, "NET_ADMIN", true},
		       {CAP_NET_RAW, "NET_RAW", true},
		       /* the sandbox's mounts are its own: /proc/sys could be made writable */
		       {CAP_SYS_ADMIN, "SYS_ADMIN", true}};
	if (spec->n_uid_map || spec->n_gid_map || spec->userns_path)
		return lb_err_set(
		    err, EPERM,
		    "%s needs lbbox run as root (without root, a sandbox maps only your "
		    "own user)",
		    spec->userns_path ? "joining a user namespace" : "uid/gid maps");
	if (spec->uid != 0 || spec->gid != 0)
		return lb_err_set(
		    err, 0,
		    "user %u:%u (--user, or the image's USER): a rootless sandbox maps "
		    "only your own user (uid 0 inside); other users need lbbox run as "
		    "root",
		    spec->uid, spec->gid);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		if (!(spec->caps & (1ULL << refused[i].cap)) ||
		    (refused[i].net_on_only && spec->net != LB_NET_ON))
			continue;
		return lb_err_set(
		    err, 0,
		    "--cap-add %s is refused without root%s: it would reach past "
		    "what isolates the sandbox %s",
		    refused[i].name, refused[i].net_on_only ? " with --network on" : "",
		    refused[i].net_on_only ? "(its egress filter is in its own namespace)"
					   : "(lbbox's pid 1 inside it)");
	}
	for (size_t i = 0; i < spec->net_opts.n_publish; i++) {
		const struct lb_publish *p = &spec->net_opts.publish[i];
		/* pasta forwards them; other addresses and UDP are not built (or tested) yet */
		if (p->udp || p->host_addr != 0x7f000001U)
			return lb_err_set(
			    err, 0, "-p without root publishes TCP on 127.0.0.1 only (port %u)",
			    p->host_port);
	}
	return spec->net == LB_NET_ON ? lb_net_pasta_check(&spec->net_opts, err) : 0;
}

static int write_proc(pid_t pid, const char *file, const char *text, struct lb_err **err)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	return lb_write_fileat(AT_FDCWD, path, text, strlen(text), 0, 0, err);
}

/* Root writes any map of its ids; setgroups stays allowed, as with runc (every group a process
 * of the namespace could take is one of its mapped ones). */
static int write_maps(pid_t pid, const struct lb_spec *spec, struct lb_err **err)
{
	char text[4096];
	if (lb_id_map_text(spec->uid_map, spec->n_uid_map, text, sizeof(text)) < 0 ||
	    write_proc(pid, "uid_map", text, err) < 0)
		return lb_err_wrap(err, "uid map of the sandbox");
	if (lb_id_map_text(spec->gid_map, spec->n_gid_map, text, sizeof(text)) < 0 ||
	    write_proc(pid, "gid_map", text, err) < 0)
		return lb_err_wrap(err, "gid map of the sandbox");
	return 0;
}

/* setgroups must be denied before an unprivileged gid_map can be written (user_namespaces(7)). */
int lb_userns_map(pid_t pid, const struct lb_spec *spec, bool rootless, struct lb_err **err)
{
	char map[64];
	if (!rootless)
		return write_maps(pid, spec, err);
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)geteuid());
	if (write_proc(pid, "uid_map", map, err) < 0 ||
	    write_proc(pid, "setgroups", "deny\n", err) < 0)
		return lb_err_wrap(err, "user namespace of the sandbox");
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)getegid());
	if (write_proc(pid, "gid_map", map, err) < 0)
		return lb_err_wrap(err, "user namespace of the sandbox");
	return 0;
}

/* Groups first: the host's supplementary groups of lbbox mean nothing inside. */
int lb_userns_become_root(struct lb_err **err)
{
	/* none left by a joined namespace's intermediate: one that denies setgroups is fine */
	if (getgroups(0, NULL) > 0 && setgroups(0, NULL) < 0)
		return lb_err_set(err, errno, "setgroups in the sandbox's user namespace");
	if (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0)
		return lb_err_set(err, errno, "become root of the sandbox's user namespace");
	return 0;
}
