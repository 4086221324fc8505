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

#include "lbbox/sandbox/net.h"
#include "lbbox/sandbox/sandbox.h"
#include "lbbox/base/util.h"
#include "engine.h"

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
