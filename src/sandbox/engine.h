/* Private interfaces between the engine's files (src/sandbox/). */
#ifndef LBBOX_ENGINE_H
#define LBBOX_ENGINE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "lbbox/base/util.h"
#include "lbbox/sandbox/cgroup.h"
#include "lbbox/base/err.h"
#include "lbbox/sandbox/seccomp.h"
#include "lbbox/sandbox/spec.h"

/* Network "on": what pid 1 needs to configure eth0 (host byte order); sent after the sync byte. */
struct lb_net_lease {
	uint32_t addr, gateway;
	uint8_t prefix;
	bool pasta; /* rootless: pasta configured the interface; pid 1 only reads its address */
};

/*
 * Host objects pid 1 needs, opened by pid 1 first (host_fds.c): in a user namespace with mapped
 * ids, it then becomes uid 0 of that namespace, which may not reach them by path (a private
 * --root, a bundle below a 0700 directory). All close-on-exec; -1 = none.
 */
struct lb_host_fds {
	int statedir;		   /* O_PATH */
	int rootfs;		   /* O_PATH: spec->rootfs or its copy; -1 for layers or the host */
	int mounts[LB_MAX_MOUNTS]; /* O_PATH of each bind's source; -1 for a tmpfs */
	/* O_PATH of the host's node of each spec->devices entry, checked to be that device; in a
	 * user namespace only (bound there, as mknod is refused), -1 otherwise and for a fifo */
	int devices[LB_MAX_DEVICES];
	int gate;    /* the start gate's read side, non-blocking */
	int console; /* connected to spec->console_socket */
};
/* host_fds.c: init (all -1), then open (userns: the devices' host nodes too); close is
 * idempotent. */
void lb_host_fds_init(struct lb_host_fds *h);
int lb_host_fds_open(const struct lb_spec *spec, const char *statedir, bool userns,
		     struct lb_host_fds *h, struct lb_err **err);
void lb_host_fds_close(struct lb_host_fds *h);
/* "/proc/self/fd/N": a path through which a descriptor's object is reached without a lookup of
 * its host path (mount sources and targets, overlay directories). */
#define LB_FD_PATH_BUF 32
const char *lb_fd_path(int fd, char buf[LB_FD_PATH_BUF]);

/*
 * nsjoin.c: namespaces an OCI bundle names by path (network, ipc, uts) are entered by lbbox around
 * the clone, so pid 1 is born in them: from inside a user namespace of its own it could no
 * longer join namespaces the host's user namespace owns.
 */
#define LB_NS_JOIN_MAX 5 /* network, ipc, uts, pid, cgroup */
struct lb_ns_join {
	int target[LB_NS_JOIN_MAX], saved[LB_NS_JOIN_MAX], type[LB_NS_JOIN_MAX];
	size_t n;
};
int lb_ns_join_open(const struct lb_spec *spec, struct lb_ns_join *j, struct lb_err **err);
int lb_ns_join_enter(const struct lb_ns_join *j, struct lb_err **err);
/* Back in lbbox's own namespaces; a failure there is fatal for lbbox's caller to know. */
int lb_ns_join_leave(const struct lb_ns_join *j, struct lb_err **err);
void lb_ns_join_close(struct lb_ns_join *j);
/* Why the clone of pid 1 failed (errno e), in words for the namespaces it was to join. */
int lb_ns_join_clone_failed(const struct lb_spec *spec, int e, struct lb_err **err);

/* userns_join.c: pid 1 born in spec->userns_path (with flags' new namespaces owned by it and
 * j's joined), lbbox's child, waiting for the sync byte, the namespace's maps checked: its pid,
 * 0 in pid 1 itself, -1 on failure (no pid 1 then, nor after timeout_ms). */
pid_t lb_userns_join_clone(const struct lb_spec *spec, const struct lb_ns_join *j, uint64_t flags,
			   int cgroup_fd, int timeout_ms, int *pidfd, struct lb_err **err);

/* What the sandbox's pid 1 needs to build its world; everything was prepared by the parent. */
struct lb_child_ctx {
	const struct lb_spec *spec;
	/* holds root/ (the mount point) and generated /etc files: the host path for lbbox, then
	 * (pid 1, once the scratch tmpfs covers it) a /proc/self/fd path of that tmpfs */
	const char *statedir;
	const struct lb_host_fds *fds;
	const struct lb_seccomp_prog *seccomp; /* NULL = unconfined */
	const struct lb_cgroup *cg;
	int sync_fd;		    /* parent -> child: one byte once the child may go on */
	int err_fd;		    /* child -> parent, CLOEXEC: a struct lb_child_msg on failure */
	int status_fd;		    /* init -> parent: the command's raw wait status */
	struct lb_net_lease *lease; /* network "on": filled from the sync pipe by pid 1 */
	int init_fd;		    /* session: lbbox-init to exec once ready, -1 = stay lbbox */
	int alive_fd; /* LB_ALIVE_LOCK (flocked): pid 1 keeps it open while it lives */
	bool userns;  /* pid 1 is root of a user namespace only (rootless, mapped ids, or joined) */
	bool rootless;	  /* that namespace maps the caller alone */
	bool join_cgroup; /* pid 1 moves itself into cg (v1, no user namespace: cgroup.c) */
	int console_fd;	  /* lb_run_io.console_fd (-1: spec->console_socket, if any) */
	const struct winsize *console_size;
};

/* In a sandbox's state directory: flocked by pid 1 for its whole life (gc.c). */
#define LB_ALIVE_LOCK "alive.lock"

/* mount_util.c: paths created and opened without ever leaving the new root. */
int lb_open_in_root(int rootfd, const char *path, bool create, bool want_dir, int *out,
		    struct lb_err **err);
int lb_open_root_dir(int rootfd, const char *name, int *out, struct lb_err **err);
/* lb_open_in_root for what lbbox mounts on: refused when path leads to the root itself. */
int lb_open_mount_target(int rootfd, const char *path, bool create, bool want_dir, int *out,
			 struct lb_err **err);
int lb_mount_fd(const char *source, int target_fd, const char *fstype, unsigned long flags,
		const char *data, struct lb_err **err);
/* Adds attrs (MOUNT_ATTR_*) to the mount fd refers to (and every mount below it when rec),
 * keeping its other flags; propagation: MS_PRIVATE, MS_SLAVE ..., or 0 to leave it. */
int lb_mount_setattr(int fd, bool rec, uint64_t attrs, uint64_t propagation, struct lb_err **err);
/* Makes an existing mount read-only (recursively when rec), keeping nosuid/nodev/noexec. */
int lb_remount_ro(const char *path, bool rec, struct lb_err **err);
/* The mounts at src below src_dirfd ("": src_dirfd itself) bound recursively onto target_fd,
 * given attrs and propagation before they are attached; *out (unless NULL) the attached copy. */
int lb_bind_tree(int src_dirfd, const char *src, int target_fd, uint64_t attrs,
		 uint64_t propagation, int *out, struct lb_err **err);
/* Whether what t describes is the root of a mount (or the kernel cannot tell: taken as one). */
struct statx;
bool lb_statx_mount_root(const struct statx *t);
/* A new fstype filesystem with mount attrs onto target_fd; *out the handle of its root. */
int lb_mount_new(const char *fstype, uint64_t attrs, int target_fd, int *out, struct lb_err **err);
/* Binds source (a host path) on target inside the root: nodev, nosuid, private propagation,
 * read-only when asked, recursively. */
int lb_bind_in_root(int rootfd, const char *source, const char *target, bool readonly,
		    struct lb_err **err);

/* rootfs.c / rootfs_host.c / procfs.c / dev.c */
/* Builds the whole filesystem below <statedir>/root (returned in newroot) in the child. */
/* *scratch: the scratch tmpfs's handle, which newroot's path goes through (kept until
 * pivot_root, then closed by the caller). */
/* *root: the root's directory as mounted, which lb_pivot_root checks newroot still leads to. */
struct lb_root_id {
	dev_t dev;
	ino_t ino;
};
int lb_rootfs_prepare(const struct lb_child_ctx *ctx, char *newroot, size_t len, int *scratch,
		      struct lb_root_id *root, struct lb_err **err);
int lb_rootfs_host_image(int rootfd, struct lb_err **err);
int lb_mount_proc_sys(int rootfd, const struct lb_cgroup *cg, struct lb_err **err);
/* dev.c: *out = the handle of /dev's tmpfs mount, for lb_seal_dev once the volumes are mounted. */
int lb_mount_dev(int rootfd, const struct lb_child_ctx *ctx, int *out, struct lb_err **err);
/* dev_nodes.c: fds[i] = the host's node of spec->devices[i] (c and b), refused unless it is that
 * device; then, in pid 1, the nodes made below devfd (/dev) from hostfds (-1: mknod). */
int lb_devices_open_host(const struct lb_spec *spec, int *fds, struct lb_err **err);
int lb_make_devices(int devfd, const struct lb_spec *spec, const int *hostfds, struct lb_err **err);
int lb_seal_dev(int devfd, struct lb_err **err);
int lb_pivot_root(const char *newroot, const struct lb_root_id *root, bool readonly,
		  struct lb_err **err);

/* hooks.c: spec->hooks' points, in pid 1. */
/* The exit_code of the report pid 1 sends on err_fd when it stops for lbbox's own hooks. */
#define LB_HOOK_PAUSED (-1)
/* Mounts built: reports to lbbox, waits for it (and so for spec->hooks->parent) and learns its
 * own pid as lbbox sees it, then runs the LB_HOOK_MOUNTED hooks with cwd newroot. */
int lb_hooks_mounted(const struct lb_child_ctx *ctx, const char *newroot, pid_t *pid,
		     struct lb_err **err);
/* spec->hooks->start_report opened (before pivot_root): its fd; -1 when there is none, -2 with
 * *err set when it cannot be opened. */
int lb_hooks_open_report(const struct lb_spec *spec, struct lb_err **err);
/* Gate open: runs the LB_HOOK_STARTED hooks and reports to report_fd; exits on a failure. */
void lb_hooks_started(const struct lb_child_ctx *ctx, int report_fd, pid_t pid);

/* userns.c: whether this process has cap in its effective set. */
bool lb_cap_effective(int cap);

/* sysctl.c: pid 1 writes spec->sysctls in its namespaces, through the host's /proc (before the
 * root is built). */
int lb_sysctls_apply(const struct lb_spec *spec, struct lb_err **err);
/* Whether spec->sysctls has one of the namespace of this CLONE_NEW* type (net or IPC). */
bool lb_sysctls_in(const struct lb_spec *spec, int clone_type);

/* masks.c: spec->masked_paths and readonly_paths, below the new root (before pivot_root). */
int lb_apply_masks(const struct lb_spec *spec, const char *newroot, struct lb_err **err);

/* etc.c: files generated into <statedir>/etc (the scratch tmpfs) and bound into /etc. */
/* lease: network "on" only (the hostname then names the sandbox's address), else NULL. */
int lb_etc_generate(const struct lb_spec *spec, const struct lb_net_lease *lease,
		    const char *statedir, struct lb_err **err);
/* /etc/hosts again, once the address is known (pasta's), through the scratch tmpfs's fd. */
int lb_etc_hosts_update(int scratch, const struct lb_spec *spec, const struct lb_net_lease *lease,
			struct lb_err **err);

/* userns.c: a sandbox's user namespace: rootless (the caller as uid 0), or the spec's maps. */
/* Writes pid's uid_map and gid_map: the spec's, or (rootless: setgroups denied first) the
 * caller's uid and gid as 0, nothing else. */
int lb_userns_map(pid_t pid, const struct lb_spec *spec, bool rootless, struct lb_err **err);
/* pid 1 with mapped ids: becomes uid and gid 0 of its namespace (it was the host's root there,
 * an unmapped id that could create nothing on the namespace's own file systems). */
int lb_userns_become_root(struct lb_err **err);
/* idmap.c: a map as the kernel reads it ("inside outside count" lines); -1 when it exceeds size. */
int lb_id_map_text(const struct lb_id_map *map, size_t n, char *out, size_t size);

/* become.c: the command's last steps, then execvp; a failure goes to err_fd (never returns). */
struct lb_become {
	const struct lb_spec *spec; /* rlimits, identity, capabilities */
	char *const *argv;
	char **env;
	const char *cwd;		       /* NULL = "/" */
	uint64_t fsize;			       /* RLIMIT_FSIZE in bytes, 0 = the spec's */
	const struct lb_seccomp_prog *seccomp; /* NULL = unconfined */
	unsigned first_private_fd;	       /* descriptors from here are closed on exec */
	int err_fd;
	bool ctty; /* stdin is a terminal to take as the new session's controlling one */
};
__attribute__((noreturn)) void lb_become_command(const struct lb_become *b);

/* caps.c: identity, capabilities, no_new_privs. */
int lb_drop_privileges(const struct lb_spec *spec, struct lb_err **err);

/* rlimit.c */
int lb_apply_rlimits(const struct lb_spec *spec, struct lb_err **err);
/* Writes v to pid's oom_score_adj (0 = the caller's own); a value below the kernel's floor
 * fails with one line naming CAP_SYS_RESOURCE. */
int lb_set_oom_score_adj(pid_t pid, int v, struct lb_err **err);
/* The same in two steps: the file opened first (while dumpable), written later. */
int lb_open_oom_score_adj(pid_t pid, int *out, struct lb_err **err);
int lb_write_oom_score_adj(int fd, int v, struct lb_err **err);

/* net_inside.c: inside the sandbox's netns. */
int lb_net_loopback_up(struct lb_err **err);
/* Network "on": eth0 (ifindex 2, created by the parent) up, its address, the default route. */
int lb_net_eth_configure(const struct lb_net_lease *lease, struct lb_err **err);
/* Rootless "on": waits until pasta gave eth0 its default route; *addr = eth0's address. */
int lb_net_wait_pasta(int timeout_ms, uint32_t *addr, struct lb_err **err);

/* net_on.c: network "on", parent side: bridge, veth into pid's netns, address, filter rules. */
struct lb_net_handle {
	bool leased;	  /* an address is recorded in the allocation file */
	bool has_allow;	  /* the lease added elements to the nftables allow sets */
	char host_if[16]; /* the host end of the veth pair, "" until created */
	pid_t pasta;	  /* rootless: the pasta process (our child), 0 when none */
	int pasta_pidfd;  /* of pasta, -1 when none */
	int pasta_err;	  /* pasta's stderr (read end) until the sandbox is ready, -1 after */
	struct lb_net_lease lease;
};
int lb_net_on_setup(const struct lb_spec *spec, const char *runroot, const char *id, pid_t pid,
		    struct lb_net_handle *h, struct lb_err **err);
/* Undoes whatever lb_net_on_setup did; best effort, idempotent. */
void lb_net_on_teardown(const struct lb_spec *spec, const char *runroot, struct lb_net_handle *h);
/* net_pasta.c: network "on" without root: pasta (passt) connects pid's namespace to the host
 * through user-mode sockets, and lbbox's filter is written into the sandbox's own namespace. */
/* record: a session's state directory, where pasta's pid is written before it runs (it then
 * outlives lbbox and goes with the sandbox, gc.c); NULL: pasta dies with lbbox. */
int lb_net_pasta_setup(const struct lb_spec *spec, pid_t pid, const char *record,
		       struct lb_net_handle *h, struct lb_err **err);
/* pasta exited before the sandbox was ready: why, from its stderr. */
int lb_net_pasta_failed(struct lb_net_handle *h, struct lb_err **err);
/* The first line pasta wrote to stderr so far (without waiting), if any. */
bool lb_net_pasta_said(struct lb_net_handle *h, char *out, size_t size);
/* The sandbox is ready: pasta's stderr is no longer read. */
void lb_net_pasta_ready(struct lb_net_handle *h);
void lb_net_pasta_teardown(struct lb_net_handle *h);
/* The session keeps its pasta: only lbbox's handles on it are closed. */
void lb_net_pasta_detach(struct lb_net_handle *h);
/* Kills the pasta recorded in a dead sandbox's state directory, if it still runs. */
void lb_net_pasta_reap_record(const char *statedir);
/* False when the state directory records a pasta that is no longer running. */
bool lb_net_pasta_record_ok(const char *statedir);
#define LB_PASTA_TIMEOUT_MS 10000
/* Frees the leases (and their filter rules) of dead sandboxes of every network of runroot. */
void lb_net_gc(const char *runroot);

/* init.c: the sandbox's pid 1. Never returns. */
__attribute__((noreturn)) void lb_child_main(const struct lb_child_ctx *ctx);

/* pid 1 and the processes it leaves (descendants.c): in a joined pid namespace it blocks every
 * signal and makes itself a subreaper (adopt), and kill ends its own descendants only; else
 * kill(-1). Both reap. */
int lb_descendants_adopt(struct lb_err **err);
void lb_descendants_kill(const struct lb_spec *spec);

/* state.c */
struct lb_state {
	pid_t pid;	    /* the sandbox's pid 1, as seen from lbbox */
	uint64_t pid_start; /* its start time in clock ticks since boot */
	char **cgroups;	    /* absolute cgroup directories, NULL-terminated */
	bool net_on;	    /* network "on" on a bridge: its lease may need collecting */
	bool pasta;	    /* network "on" through pasta (rootless): pasta may need killing */
	char *tag;	    /* lb_spec.tag, NULL when none */
};
int lb_state_read(const char *statedir, struct lb_state *out, struct lb_err **err);
void lb_state_free(struct lb_state *st);
/* lease: network "on" only, else NULL; userns: the sandbox has its own user namespace. */
int lb_state_write(const char *statedir, const char *id, pid_t pid, const struct lb_spec *spec,
		   const struct lb_cgroup *cg, const struct lb_net_lease *lease, bool userns,
		   struct lb_err **err);

/* The sandbox id a state directory is named by. */
static inline const char *lb_statedir_id(const char *statedir)
{
	const char *slash = strrchr(statedir, '/');
	return slash ? slash + 1 : statedir;
}

/* state_cgroups.c. The cgroup paths, noted before pid 1 exists (and so before state.json), with
 * name, the cgroups' own name when not lbbox-<id> (NULL otherwise). */
int lb_state_write_cgroups(const char *statedir, const char *name, const struct lb_cgroup *cg,
			   struct lb_err **err);
/* What lb_state_write_cgroups noted, NULL-terminated (*out NULL when nothing was); -1 when a
 * path is not one lbbox could have noted for the sandbox. */
int lb_state_read_cgroups(const char *statedir, char ***out, struct lb_err **err);
/* -1 unless path is a cgroup lbbox could have made for sandbox id: below
 * /sys/fs/cgroup/, no "." or "..", named lbbox-<id> or name (the recorded cgroup_name). */
int lb_state_cgroup_check(const char *id, const char *name, const char *path, struct lb_err **err);
/* Everything the state of statedir records (state.json, the early list) checked as above and
 * on disk: each path a cgroup below its hierarchy's root, or gone. The early list it read in
 * *early when early is not NULL (NULL: none). */
int lb_state_check_cgroups(const char *statedir, char ***early, struct lb_err **err);
/* The limits in state.json after lb_cgroup_update applied u (sandbox_update.c). */
int lb_state_update_limits(const char *statedir, const struct lb_cgroup_update *u,
			   struct lb_err **err);

/* A live sandbox reopened from its state (sandbox_open.c), joined by spawn.c. */
struct lb_sandbox {
	char id[13];
	char statedir[LB_PATH_BUF];
	char *root;	      /* the store root (seccomp cache) */
	pid_t pid;	      /* pid 1 */
	int pidfd;	      /* of pid 1: setns target */
	struct lb_cgroup *cg; /* the sandbox's cgroup, not owned */
	struct lb_spec spec;  /* what an exec applies: uid, gid, caps, rlimits, seccomp, env, net */
	struct lb_seccomp_prog *seccomp; /* prepared on first spawn */
	bool seccomp_ready;
	bool userns; /* rootless: its own user namespace, joined by every exec */
};

/* A sandbox id is 12 hex digits (the name of its state directory). */
int lb_sandbox_check_id(const char *id, struct lb_err **err);
/* The cgroup its state.json records (not owned), whatever else that state holds or lacks. */
int lb_sandbox_open_cgroup(const char *statedir, const char *id, struct lb_cgroup **out,
			   struct lb_err **err);
/* gc.c: removes a sandbox its destroyer has killed (its alive lock free): cgroups, pasta, state
 * directory, lease. Fails, leaving the state, while a cgroup still holds tasks. */
int lb_gc_remove_killed(const char *runroot, const char *statedir, struct lb_err **err);
/* The same for at most max sandboxes of the runroot, a random window (every one when fewer). */
#define LB_GC_PER_RUN 16
void lb_gc_some(const struct lb_paths *paths, size_t max);

#endif
