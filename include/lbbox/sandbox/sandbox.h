/* The engine: a checked spec -> a running sandbox -> its result. Knows nothing of images. */
#ifndef LBBOX_SANDBOX_H
#define LBBOX_SANDBOX_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/ioctl.h>

#include "lbbox/base/err.h"
#include "lbbox/base/process.h"
#include "lbbox/sandbox/spec.h"
#include "lbbox/base/util.h"

struct lb_paths {
	const char *root;    /* store: images, caches (default /var/lib/lbbox) */
	const char *runroot; /* runtime state (default /run/lbbox) */
};

/* Where lbbox keeps things when no --root / --runroot is given: $LBBOX_ROOT and $LBBOX_RUNROOT,
 * else /var/lib/lbbox and /run/lbbox for root, and for other users podman's rootless places
 * ($XDG_DATA_HOME/lbbox or ~/.local/share/lbbox; $XDG_RUNTIME_DIR/lbbox or /tmp/lbbox-run-UID). */
struct lb_default_paths {
	char root[LB_PATH_BUF], runroot[LB_PATH_BUF];
};
void lb_paths_defaults(struct lb_default_paths *d);
/* A runtime directory /tmp/lbbox-run-UID (the rootless fallback) may have been made by someone
 * else first: creates it, and refuses it unless it is a private directory of this user. */
int lb_paths_check_runroot(const char *runroot, struct lb_err **err);
/* Creates the store and the runtime directory private to this user (0700), tightens existing
 * ones that are plainly lbbox's, refuses ones that belong to someone else or are open to others
 * otherwise. Every program of lbbox calls it before using either. */
int lb_paths_secure(const struct lb_paths *p, struct lb_err **err);
/* Refuses a host path (canonical) that is, contains or lies inside the store or the runtime
 * directory, by name or by identity (another name for the same directory). */
int lb_paths_check_mount(const struct lb_paths *p, const char *canonical, const char *original,
			 struct lb_err **err);

/* Re-executes this program from a sealed form of itself (CVE-2019-5736: a process joining a
 * sandbox must not expose a writable /proc/self/exe): a read-only overlayfs view of its binary
 * when it may make one (root), else a sealed memfd copy. Returns only on failure, or at once when
 * already running sealed. Every program that puts a process in a sandbox calls it first. */
int lb_reexec_sealed(char **argv, struct lb_err **err);
/* A descriptor (close-on-exec, for execveat) of lbbox's helper program name in a form no
 * sandbox can write: opened through the view lbbox runs from, else a sealed memfd copy of the
 * file in lbbox's directory (LBBOX_SELF_DIR). -1 on failure. */
int lb_sealed_helper(const char *name, struct lb_err **err);
/* Closes this process's handle on the view (lbbox's whole directory): for a process that goes
 * into a sandbox and opens no helper (pid 1 has its lbbox-init open before the clone). */
void lb_sealed_forget(void);

struct lb_result {
	int exit_code; /* the command's status, or 128 + signal */
	int signal;    /* signal that ended the command, 0 if it exited */
	bool timed_out;
	bool oom_killed;
	uint64_t duration_ms;
	uint64_t memory_peak; /* bytes, from the cgroup; 0 when unknown */
	uint64_t cpu_usec;    /* from the cgroup; 0 when unknown */
	char id[13];
};

/*
 * True when lbbox runs without root (nor CAP_SYS_ADMIN): sandboxes then get a user namespace
 * mapping the caller to uid 0, no cgroup unless one is writable, and network "on" via pasta.
 */
bool lb_rootless(void);
/* What a rootless sandbox cannot do with spec (another --user, capabilities that reach past its
 * isolation, network "on" without pasta, /dev/net/tun or nft): one error, before anything. */
int lb_rootless_check(const struct lb_spec *spec, struct lb_err **err);

/*
 * Runs spec->argv in a new sandbox and waits for it. Returns < 0 with *err set when the
 * sandbox could not be built (then *setup_exit holds 125, 126 or 127); nothing is left behind.
 * Signals SIGINT/SIGTERM/SIGHUP/SIGQUIT/SIGUSR1/SIGUSR2 received meanwhile are forwarded.
 * Rootless with network "on", the sandbox's pasta is killed but may still be exiting (a child
 * of the caller, reaped when the caller exits or waits for its children).
 */
int lb_sandbox_run(const struct lb_spec *spec, const struct lb_paths *paths, struct lb_result *res,
		   int *setup_exit, struct lb_err **err);

/* What the caller serves while lb_sandbox_run_io waits for the command (lbbox run -t's relay). */
#define LB_RUN_IO_MAX_FDS 4
struct pollfd;
struct lb_run_io {
	/* a connected stream socket (lb_tty's child end): pid 1 opens a pty on the sandbox's own
	 * devpts, sends its master there and makes the slave the command's stdio and controlling
	 * terminal; -1 = none */
	int console_fd;
	const struct winsize *console_size; /* the pty's size to start with; NULL = 0x0 */
	struct pollfd *fds; /* served meanwhile (at most LB_RUN_IO_MAX_FDS), as lb_wait_exit's */
	size_t n;
	void (*on_ready)(void *ctx, struct pollfd *fd);
	/* a signal lbbox received: true when it was taken (SIGWINCH: the pty's size), else it is
	 * forwarded as without io */
	bool (*on_signal)(void *ctx, int sig);
	void *ctx;
};
/* lb_sandbox_run with io served during the wait (NULL: the same as lb_sandbox_run). */
int lb_sandbox_run_io(const struct lb_spec *spec, const struct lb_paths *paths,
		      const struct lb_run_io *io, struct lb_result *res, int *setup_exit,
		      struct lb_err **err);

/*
 * Removes the state directories and cgroups of sandboxes whose lbbox died without cleaning up
 * and whose pid 1 is gone, examining every sandbox (a sandbox's start examines a few each
 * time).
 */
int lb_sandbox_gc(const struct lb_paths *paths, struct lb_err **err);

/* ---- long-lived sandboxes (sessions) --------------------------------------------------------- */

/*
 * Starts a sandbox whose pid 1 stays up with no command (spec->argv is ignored) and returns once
 * it is ready; it outlives lbbox. Its id (12 hex digits) goes to id. Nothing is left on failure.
 */
int lb_sandbox_start(const struct lb_spec *spec, const struct lb_paths *paths, char id[13],
		     struct lb_err **err);

/*
 * An OCI runtime's `create`: the same start as a session, but pid 1 runs spec->argv once one
 * byte arrives on spec->start_gate (required), and exits with the command's status (128 + signal
 * when killed) like a run's. Returns once the sandbox is built; pid 1 (its pid in *pid, a child
 * of the caller) outlives the caller. Nothing is left on failure.
 */
int lb_sandbox_create(const struct lb_spec *spec, const struct lb_paths *paths, char id[13],
		      pid_t *pid, struct lb_err **err);

struct lb_sandbox;
/* Opens a live sandbox by id; fails when it does not exist or its pid 1 is gone. */
int lb_sandbox_open(const struct lb_paths *paths, const char *id, struct lb_sandbox **out,
		    struct lb_err **err);
void lb_sandbox_close(struct lb_sandbox *sb);
/* True while pid 1 of the sandbox id runs. */
bool lb_sandbox_is_alive(const struct lb_paths *paths, const char *id);
/*
 * Kills every process of the sandbox (cgroup first, then pid 1) and removes its cgroups, state
 * directory and network lease. Idempotent: a sandbox already gone is not an error.
 */
int lb_sandbox_destroy(const struct lb_paths *paths, const char *id, struct lb_err **err);
/* Destroys every sandbox whose spec carried tag (lb_spec.tag): what a creator that died before
 * noting its sandbox's id left. Scans the runtime directory: for recovery, not hot paths. */
int lb_sandbox_destroy_tagged(const struct lb_paths *paths, const char *tag, struct lb_err **err);

/* Freezes (or thaws) every task of the live sandbox id with the cgroup freezer and waits until
 * the kernel says it is done (bounded); ENOTSUP where it has no freezer. */
int lb_sandbox_freeze(const struct lb_paths *paths, const char *id, bool freeze,
		      struct lb_err **err);
/* True while the live sandbox id is frozen. */
bool lb_sandbox_frozen(const struct lb_paths *paths, const char *id);
/* sig to every process of the live sandbox id, found through its cgroup (execs' included):
 * what reaches a sandbox that shares its pid namespace, and nothing else there. SIGKILL kills
 * them all through lb_cgroup_kill. */
int lb_sandbox_signal(const struct lb_paths *paths, const char *id, int sig, struct lb_err **err);
/* The processes of the live sandbox id, through its cgroup (malloc'ed array). */
int lb_sandbox_pids(const struct lb_paths *paths, const char *id, pid_t **pids, size_t *n,
		    struct lb_err **err);

/* Changes the limits of the live sandbox id (an OCI runtime's update: lb_cgroup_update's rules)
 * and records them in its state; refused, nothing changed, when its pid 1 is gone. */
int lb_sandbox_update(const struct lb_paths *paths, const char *id,
		      const struct lb_cgroup_update *u, struct lb_err **err);

/* A command to run inside a live sandbox. */
struct lb_exec_opts {
	char *const *argv;
	char *const *env;   /* added to (and overriding) the sandbox's environment; may be NULL */
	const char *cwd;    /* NULL = "/" */
	int fds[3];	    /* its stdin, stdout, stderr; -1 = /dev/null */
	const char *cgroup; /* name of its own child cgroup below the sandbox's */
	uint64_t fsize;	    /* RLIMIT_FSIZE in bytes for this command, 0 = the sandbox's */
	uint64_t memory_bytes; /* its own cgroup's memory limit, 0 = the sandbox's alone */
	int fd3; /* passed to the command as its fd 3 (a script to source); 0 = none */
	/* another identity than the sandbox's command has (an OCI exec's process.user); the
	 * capabilities still follow lbbox's rule: kept for uid 0 only */
	bool set_user;
	uid_t uid;
	gid_t gid;
	/* its umask (an OCI exec's process.user.umask); unset: the sandbox's command's when its
	 * spec set one (recorded in state.json, as its oom_score_adj), else the caller's */
	bool set_umask;
	mode_t umask;
	/* a connected console socket (OCI exec --tty): the command opens a pty on the sandbox's
	 * devpts, sends its master there and takes the slave as stdio and controlling terminal
	 * (fds are then unused); 0 = none */
	int console_sock;
	const struct winsize *console_size; /* the pty's size to start with; NULL = 0x0 */
	/* capabilities added to the sandbox's for this command alone (OCI exec --cap; the caller
	 * keeps them within what the sandbox may have); uid 0 only, as the sandbox's own */
	uint64_t add_caps;
	/* the caller's descriptors 3 .. 3 + N - 1 passed on at the same numbers (OCI exec
	 * --preserve-fds); not with fd3 */
	unsigned preserve_fds;
	/* lb_now_ns() by which the command must have started (its execve); past it the command's
	 * cgroup is killed and the spawn fails with ETIMEDOUT. A process of the sandbox may stop a
	 * new command before its execve (same uid, same pid namespace): without a deadline the
	 * caller would wait for ever. 0 = no deadline */
	uint64_t start_deadline;
};

/* A process started by lb_sandbox_spawn: a child of the caller, alone in its cgroup. */
struct lb_proc {
	pid_t pid;
	int pidfd; /* readable once it exited */
	struct lb_cgroup *cg;
};

/*
 * Runs o->argv inside sb: joins its namespaces, enters a new child cgroup, applies the same
 * rlimits, identity, capabilities, no_new_privs and seccomp filter as the sandbox's own command.
 * On failure *setup_exit holds 125, 126 (cannot execute) or 127 (not found) and nothing is left;
 * (*err)->errnum is ETIMEDOUT when o->start_deadline passed first.
 */
int lb_sandbox_spawn(struct lb_sandbox *sb, const struct lb_exec_opts *o, struct lb_proc *p,
		     int *setup_exit, struct lb_err **err);
/* Kills every process of the child cgroup CHILD of sandbox id and removes it (a managed
 * process whose keeper died). A sandbox that is gone has nothing left to kill: 0. */
int lb_sandbox_kill_child(const struct lb_paths *paths, const char *id, const char *child,
			  struct lb_err **err);
/* Removes the child cgroup CHILD of sandbox id if no process is left in it; false when busy. */
bool lb_sandbox_remove_child_if_empty(const struct lb_paths *paths, const char *id,
				      const char *child);
/* Kills every process of p's cgroup (its whole tree) and waits until it is empty. */
int lb_proc_kill(struct lb_proc *p, struct lb_err **err);
/* Waits for p (blocking) and returns its wait status. */
int lb_proc_wait(struct lb_proc *p);
/* Kills what is left, removes the cgroup, closes the pidfd. */
void lb_proc_release(struct lb_proc *p);

#endif
