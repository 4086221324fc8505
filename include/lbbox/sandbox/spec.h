/* A sandbox spec: everything the engine needs to build one sandbox. Filled by cli/ (later box/). */
#ifndef LBBOX_SPEC_H
#define LBBOX_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "lbbox/sandbox/cgroup.h"
#include "lbbox/base/err.h"

#define LB_MAX_MOUNTS  64
#define LB_MAX_RLIMITS 16
#define LB_MIN_MEMORY  (32ULL << 20) /* same floor as LangBot's memory_mb >= 32 */

/* The most descriptors --preserve-fds passes on. */
#define LB_MAX_PRESERVE_FDS 1024

struct lb_mount {
	char *source; /* host path, canonical (realpath) after lb_spec_check */
	char *target; /* absolute path inside the sandbox */
	bool readonly;
	/* lbbox's own directory (a session's workspace in its state): exempt from the rules on
	 * host paths a user gives, which forbid lbbox's state. Never set from user input. */
	bool owned;
	/* source is canonical and its caller checked it (the Box's allowed roots): it must still
	 * resolve to itself, or a component was swapped for a link since. */
	bool pinned;
	/* Not a bind: a fresh tmpfs of this many bytes at target (source NULL), mode tmpfs_mode. */
	uint64_t tmpfs_size;
	uint32_t tmpfs_mode;
};

/* One range of a user namespace's uid or gid map: count ids from inside on map to outside on (the
 * ids of lbbox's own user namespace, the host's when lbbox runs as root). */
struct lb_id_map {
	uint32_t inside, outside, count;
};

/* The kernel's limit on the ranges of one uid_map or gid_map (since 4.15). */
#define LB_MAX_ID_MAPS 340

struct lb_rlimit {
	int resource; /* RLIMIT_* */
	rlim_t soft, hard;
};
/* "nofile" for RLIMIT_NOFILE ("?" for an unknown one), and back (-1 for an unknown name). */
const char *lb_rlimit_name(int resource);
int lb_rlimit_by_name(const char *name);

/* The most extra devices a spec may ask for. */
#define LB_MAX_DEVICES 64

/* An extra device node pid 1 makes in the sandbox's /dev (an OCI bundle's linux.devices entry):
 * mknod as the host's root, else (a user namespace) a bind of the host's node at the same path,
 * which must be that very device. */
struct lb_device {
	char *path;	 /* absolute, below /dev, no "." or ".." component */
	char *host_path; /* the host's node a user namespace binds; NULL: path (runc's rule) */
	char type;	 /* 'c', 'b' or 'p' (a fifo: no major, minor or access) */
	uint32_t major;	 /* below 4096 */
	uint32_t minor;	 /* below 2^20 */
	uint32_t mode;	 /* permission bits (07777 at most) */
	uid_t uid;
	gid_t gid;
	/* what the device fence grants (LB_DEV_* bits); 0: the node exists but cannot be opened */
	unsigned access;
};

enum lb_net_mode { LB_NET_OFF = 0, LB_NET_HOST, LB_NET_ON };

#define LB_MAX_ALLOW_HOSTS 16
#define LB_MAX_DNS	   3

/* --allow-host ADDR[:PORT]: one exception to the private-range filter of network "on". */
struct lb_allow_host {
	uint32_t addr; /* IPv4, host byte order */
	uint16_t port; /* 0 = every port (tcp and udp otherwise) */
};

#define LB_MAX_PUBLISH 16

/* -p [IP:][HOST_PORT:]PORT[/tcp|udp]: a host port forwarded to the sandbox (network "on"). */
struct lb_publish {
	uint32_t host_addr; /* host byte order; 0 = every address of the host */
	uint16_t host_port, port;
	bool udp;
};

/* Network "on" options; all zero = defaults (bridge lbbox0, 10.89.0.0/16, the host's DNS). */
struct lb_net_opts {
	char bridge[16];
	uint32_t subnet; /* host byte order */
	uint8_t prefix;
	struct lb_allow_host allow[LB_MAX_ALLOW_HOSTS];
	size_t n_allow;
	uint32_t dns[LB_MAX_DNS]; /* host byte order; none = the host's upstream resolvers */
	size_t n_dns;
	char nft[256]; /* the nft binary; "" = /usr/sbin/nft */
	struct lb_publish publish[LB_MAX_PUBLISH];
	size_t n_publish;
};

/* Hook points of a gated sandbox's setup (lb_sandbox_create), where an OCI runtime runs its
 * hooks. The engine knows nothing of what they run; it only says where and with what rights. */
enum lb_hook_point {
	/* pid 1 has built every mount below the new root, pivot_root is yet to come: paths resolve
	 * in the host's filesystem, the working directory is the new root */
	LB_HOOK_MOUNTED,
	/* the start gate opened, the command not forked yet: inside the root */
	LB_HOOK_STARTED,
};

/* Seconds pid 1 gives a hook point's child on top of its hooks' timeouts. */
#define LB_HOOKS_MARGIN_S 5

struct lb_hooks {
	/* In lbbox, once pid 1 has built its mounts and waits (before any LB_HOOK_MOUNTED hook);
	 * pid is pid 1's. A failure ends the sandbox. */
	int (*parent)(void *ctx, pid_t pid, struct lb_err **err);
	/* In a child of pid 1, in every namespace of the sandbox, with the command's rlimits,
	 * identity, capabilities, no_new_privs and seccomp filter; every process it leaves
	 * is killed once it returns. pid: pid 1's, as lbbox sees it. A failure ends the sandbox,
	 * and so does a child that stops, or runs past its point's timeout + LB_HOOKS_MARGIN_S. */
	int (*child)(void *ctx, enum lb_hook_point point, pid_t pid, struct lb_err **err);
	void *ctx;
	/* How long the LB_HOOK_MOUNTED hooks may take in all, on top of the setup's own time. */
	unsigned mounted_timeout_s;
	/* The same for the LB_HOOK_STARTED hooks. */
	unsigned started_timeout_s;
	/* LB_HOOK_STARTED runs only with this fifo (host path, opened by pid 1 before pivot_root):
	 * pid 1 writes a struct lb_child_msg there once the hooks ran, exit_code 0 when they
	 * succeeded (the command is then forked), else why they failed (pid 1 then exits). */
	char *start_report;
};

struct lb_spec {
	/* Root filesystem: a directory, or an image's unpacked layers (an overlayfs lowerdir list,
	 * top first), or neither for the built-in "host" image. */
	char *rootfs;
	char *layers;
	/* Copy rootfs into the sandbox's state directory first and run on the copy: a writable
	 * image root where the kernel has no overlayfs. Removed with the sandbox. */
	bool copy_rootfs;
	bool readonly_root;
	uint64_t tmp_size; /* bytes of the /tmp tmpfs; 0 = no /tmp tmpfs */

	char **argv; /* NULL-terminated */
	char **env;  /* NULL-terminated, KEY=VALUE */
	char *cwd;
	uid_t uid;
	gid_t gid;
	/* supplementary groups of the command (an OCI process.user.additionalGids); none by
	 * default. Owned (lb_spec_free frees it). */
	gid_t *groups;
	size_t n_groups;
	/* The command's umask (an OCI process.user.umask), an exec's too; umask_set false = the
	 * caller's. */
	mode_t umask;
	bool umask_set;
	/* Written to pid 1's oom_score_adj (so the command's, inherited) by lbbox before the
	 * sandbox runs: -1000..1000, a value below the current minimum needs CAP_SYS_RESOURCE and
	 * fails the create; an exec's too (lb_sandbox_spawn, failing the same way).
	 * oom_score_adj_set false = left as lbbox's (an exec's caller's). */
	int oom_score_adj;
	bool oom_score_adj_set;
	char *hostname;
	/* Root only: the sandbox gets a user namespace of its own, which owns its other namespaces,
	 * with these uid and gid maps (both given, each mapping id 0). n_uid_map 0 = none (a
	 * rootless sandbox always has one, mapping the caller alone). */
	struct lb_id_map *uid_map, *gid_map;
	size_t n_uid_map, n_gid_map;

	struct lb_mount mounts[LB_MAX_MOUNTS];
	size_t n_mounts;

	struct lb_cgroup_limits limits;
	char *cgroup_parent; /* NULL = lbbox's own cgroup */
	/* The sandbox's cgroup's own name below cgroup_parent (an OCI bundle's cgroupsPath, which
	 * engines read stats from); NULL = "lbbox-ID". One path component. */
	char *cgroup_name;
	struct lb_rlimit rlimits[LB_MAX_RLIMITS];
	size_t n_rlimits;

	enum lb_net_mode net;
	struct lb_net_opts net_opts; /* used with LB_NET_ON only */
	char *seccomp_profile;	     /* NULL = embedded default; "unconfined" disables seccomp */
	uint64_t caps;		     /* bitmask of CAP_* kept when running as uid 0 */

	/* A session: pid 1 runs no command and stays up until destroyed (argv unused). */
	bool session;
	/* An OCI runtime's bundle: pid 1 joins this network namespace (a host path, e.g.
	 * /run/netns/NAME) instead of keeping a new one; network "off" otherwise. */
	char *netns_path;
	/* The same for the IPC and UTS namespaces (a Kubernetes pod's containers join its
	 * sandbox's); with a joined UTS namespace the hostname is left as it is. */
	char *ipcns_path;
	char *utsns_path;
	/* A pod's shared pid namespace (an OCI bundle's pid path): pid 1 is born in it, so it is
	 * not that namespace's init; it reaps as a subreaper and, when the command ends, kills what
	 * it left (its descendants; the rest of the container through its cgroup). */
	char *pidns_path;
	/* A cgroup namespace joined instead of a new one rooted at the sandbox's cgroup. */
	char *cgroupns_path;
	/* A user namespace joined by path (a Kubernetes pod's with user namespaces): pid 1 is born
	 * in it, owning nothing of the host's; uid_map/gid_map, if given too, must be its own. */
	char *userns_path;
	/* An OCI bundle without a uts namespace (a Kubernetes hostNetwork pod): the host's, as
	 * runc gives; the hostname is left as it is. */
	bool uts_host;
	/* An OCI runtime's create/start split: a fifo (host path) pid 1 opens before pivot_root;
	 * once the sandbox is built it reports ready and waits for one byte there before forking
	 * the command (lb_sandbox_create). NULL = the command starts at once. */
	char *start_gate;
	/* An OCI process.terminal: pid 1 connects to this unix socket (a host path) before
	 * pivot_root, then opens a pty on the sandbox's own devpts, sends its master there
	 * (SCM_RIGHTS) and makes the slave the command's stdio and controlling terminal. */
	char *console_socket;
	/* An OCI runtime's hooks that run inside the sandbox (createContainer, startContainer);
	 * not owned (lb_spec_free leaves it). NULL = none, pid 1 never stops. */
	const struct lb_hooks *hooks;
	/* Paths inside the root masked (a directory: an empty read-only tmpfs; anything else:
	 * /dev/null) or made read-only (recursively), on top of lbbox's own lists; resolved
	 * without leaving the root, skipped when absent. NULL-terminated, or NULL. */
	char **masked_paths;
	char **readonly_paths;
	/* Namespaced sysctls as "name=value" (dotted name), written by pid 1 in its own network
	 * or IPC namespace (sysctl.c). NULL-terminated, or NULL; at most LB_MAX_SYSCTLS. */
	char **sysctls;
	/* Extra device nodes in /dev, and the fence's access to them. Owned; at most
	 * LB_MAX_DEVICES. */
	struct lb_device *devices;
	size_t n_devices;
	/* An OCI runtime's --preserve-fds: the creator's descriptors 3 .. 3 + N - 1 are the
	 * command's too, at the same numbers (pid 1 keeps none of them once it forked it). */
	unsigned preserve_fds;
	/* Socket activation: the command's LISTEN_PID (an env entry) is set to its own pid once
	 * forked, which sd_listen_fds checks; it is not pid 1 here. */
	bool listen_pid;

	uint64_t timeout_ms; /* 0 = none */
	bool die_with_parent;
	/* Recorded in the sandbox's state: who made it (a session's directory), so a creator that
	 * died before noting the sandbox's id can still have it found (lb_sandbox_destroy_tagged).
	 */
	char *tag;
};

static inline bool lb_spec_is_host_image(const struct lb_spec *spec)
{
	return !spec->rootfs && !spec->layers;
}

/* Podman's default capability set, minus CAP_SETFCAP, CAP_SYS_CHROOT and CAP_SETPCAP. */
uint64_t lb_default_caps(void);

void lb_spec_init(struct lb_spec *spec);
void lb_spec_free(struct lb_spec *spec);

/* LangBot's blocked-path rule on an already canonical path: 0 when allowed. */
int lb_check_host_path(const char *canonical, const char *original, struct lb_err **err);

/* The kernel's rules for one map, checked before anything exists: 1..LB_MAX_ID_MAPS ranges, sizes
 * above 0, no range past 2^32 - 1, no two overlapping inside or outside, its text within a
 * page. what: "uid" or "gid", for the message. */
int lb_id_map_check(const struct lb_id_map *map, size_t n, const char *what, struct lb_err **err);
/* Whether id is inside one of the map's ranges. */
bool lb_id_map_has(const struct lb_id_map *map, size_t n, uint32_t id);
/* A spec's maps (none, or both): each checked, uid and gid 0 mapped and so the command's uid
 * and gid; a directory rootfs (an image's layers are not reachable from inside). */
int lb_spec_check_userns(const struct lb_spec *spec, struct lb_err **err);

/* The rlimits alone (rlimit.c): a hard limit above lbbox's own is refused before anything
 * exists when the command could not raise it (no CAP_SYS_RESOURCE of the host's, or a user
 * namespace of the sandbox's own), instead of failing once the command starts. */
int lb_spec_check_rlimits(const struct lb_spec *spec, struct lb_err **err);

/* The sysctls alone (sysctl.c): well-formed names, net.* only with a network namespace that
 * is not the host's, else the IPC namespace's; values of printable text. */
#define LB_MAX_SYSCTLS 64
int lb_spec_check_sysctls(const struct lb_spec *spec, struct lb_err **err);

/* The devices alone (dev_nodes.c): paths below /dev, types, numbers, modes, the count. */
int lb_spec_check_devices(const struct lb_spec *spec, struct lb_err **err);
void lb_devices_free(struct lb_device *d, size_t n);

struct lb_paths;
/*
 * Validates the spec before anything is created: canonicalises and checks every mount source
 * (the blocked paths, and never lbbox's own store or state in paths), checks limits (memory >=
 * 32 MiB, pids >= 1 when set), cwd and targets absolute, rootfs a directory. Fills in canonical
 * mount sources.
 */
int lb_spec_check(struct lb_spec *spec, const struct lb_paths *paths, struct lb_err **err);

#endif
