/*
 * The command layer of LangBot Box on lbbox's own engine: sessions (long-lived sandboxes kept on
 * disk under RUNROOT/box, so any lbbox process finds them), exec into them, managed processes.
 * Errors carry LangBot's Box error classes (lbbox/box/spec.h) and texts.
 */
#ifndef LBBOX_BOX_H
#define LBBOX_BOX_H

#include <stdbool.h>
#include <stdint.h>

#include "lbbox/box/spec.h"
#include "lbbox/base/err.h"
#include "lbbox/sandbox/sandbox.h"
#include "lbbox/sandbox/spec.h"

struct lb_box_limits {
	int64_t max_sessions;		 /* 64 */
	int64_t max_managed_processes;	 /* 64 */
	int64_t max_completed_processes; /* 256 */
	int64_t completed_retention_sec; /* 300 */
	int64_t session_ttl_sec;	 /* 300 */
};

struct box_status_cache;
struct lb_box {
	struct lb_paths paths;
	char dir[LB_PATH_BUF]; /* RUNROOT/box */
	char owner[64];	       /* instance id of the lbbox process owning new sessions, "" = none */
	struct lb_box_limits limits;
	/* §5.3: host paths must lie under one of these (canonical) roots; NULL = no restriction */
	char **allowed_roots;
	/* The operator set them (LBBOX_BOX_ALLOWED_ROOTS): a peer's config does not replace them.
	 */
	bool roots_fixed;
	/* The skill store, every Workspace's (canonical; "" = none): writable by no sandbox, so no
	 * host path may lie in it or contain it; only the runtime's read-only skill mounts reach
	 * it, each one package found by the store itself. */
	char skills_root[LB_PATH_BUF];
	/* How a session's image is found: "ref=local,ref2=local2" aliases first (not owned), then
	 * the store, then a pull when allowed. */
	const char *image_aliases;
	/* LB_BOX_DEFAULT_IMAGE's stand-in when no alias names it and it is not local itself
	 * (LB_BOX_LOCAL_IMAGE unless box.lbbox.default_image says otherwise); "" = none. */
	char default_image[256];
	bool pull;
	/* Network "on" sessions: the runtime's bridge, subnet, nameservers and allowed hosts. */
	struct lb_net_opts net;
	struct box_status_cache *status; /* lb_box_status's counts kept (status.c) */
};

/* Fills box for paths with the default limits; owner may be NULL. Creates nothing.
 * lb_box_fini frees what lb_box_set_allowed_roots added. */
int lb_box_init(struct lb_box *box, const struct lb_paths *paths, const char *owner,
		struct lb_err **err);

void lb_box_fini(struct lb_box *box);
/* lb_box_init plus the environment's settings (host.c): LBBOX_BOX_OWNER (the instance new
 * sessions belong to), LBBOX_BOX_MAX_SESSIONS / _PROCESSES / _COMPLETED, LBBOX_BOX_ALLOWED_ROOTS
 * (/a:/b), LBBOX_BOX_IMAGE_ALIASES (ref=local,...), LBBOX_BOX_PULL (0: never pull), and the
 * network of "on" sessions: LBBOX_NET_BRIDGE, LBBOX_NET_SUBNET, LBBOX_NFT (as lbbox run),
 * LBBOX_BOX_NET_DNS (A.B.C.D,...) and LBBOX_BOX_NET_ALLOW_HOSTS (A.B.C.D[:PORT],...). */
int lb_box_open_env(struct lb_box *box, const struct lb_paths *paths, struct lb_err **err);
/* The local image a session asking for LB_BOX_DEFAULT_IMAGE is given when that image is not
 * local itself: its alias, else box->default_image; NULL when neither (box_health shows it). */
const char *lb_box_default_image(const struct lb_box *box, char *buf, size_t len);
/* §3.1: the default workspace (dw under host_root hr, or hr/default; dw may be absolute) is
 * created when missing: a directory under one of roots, never a blocked directory or lbbox's
 * own state, judged by the path it will have once symlinks are resolved and created without
 * following any. BoxValidationError otherwise. */
int lb_box_ensure_default_workspace(const struct lb_box *box, const char *hr, const char *dw,
				    char *const *roots, struct lb_err **err);
/* True when this host, as lb_host_features() found it, can build a LangBot Box session:
 * namespaces and memory, pids and cpu limits. */
bool lb_box_host_ready(const json_t *features);
/* "/a:/b" or a list: each root canonicalised (it must exist). */
int lb_box_set_allowed_roots(struct lb_box *box, char *const *roots, struct lb_err **err);

/* What a session is: the Box spec it was created with, plus where it lives. */
struct lb_box_session {
	char *session_id;
	char sandbox[13];
	char *owner;
	struct lb_box_spec spec; /* session fields only (cmd, env, workdir unused) */
	uint64_t created_ns, last_used_ns;
	bool alive; /* set by lb_box_session_list (and get-or-create); false elsewhere */
};
void lb_box_session_free(struct lb_box_session *s);

/*
 * §3.3 get-or-create: reuse, conflict, extra-mount recreate, dead -> recreate, capacity. A new
 * session's sandbox starts from base when given (an engine spec the caller built, its root
 * already set: the CLI's run options), else from bs->image (aliases, store, pull); the Box
 * fields (mounts, limits, network, read-only root) go on top. base's contents are taken over
 * (it is left empty).
 */
int lb_box_session_get_or_create(struct lb_box *box, const struct lb_box_spec *bs,
				 struct lb_spec *base, struct lb_box_session *out, bool *created,
				 struct lb_err **err);
/* The reuse half of get-or-create, creating and dropping nothing: 1 with the session in *out
 * when it exists, fits bs and is alive; 0 when get-or-create would have to (re)create it; -1 on a
 * conflict. Lets a caller build a new session's base spec only when one is needed. */
int lb_box_session_reuse(struct lb_box *box, const struct lb_box_spec *bs,
			 struct lb_box_session *out, struct lb_err **err);
/* BoxSessionNotFoundError "session <id> not found" when unknown. */
int lb_box_session_get(struct lb_box *box, const char *id, struct lb_box_session *out,
		       struct lb_err **err);
/* The writable workspace directory of a session created without a host_path. */
void lb_box_session_workspace(const struct lb_box *box, const char *id, char *out, size_t len);
/* Terminates its managed processes and destroys the sandbox; waits for the cleanup. */
int lb_box_session_delete(struct lb_box *box, const char *id, struct lb_err **err);
/* Every session, sorted by id. */
int lb_box_session_list(struct lb_box *box, struct lb_box_session **out, size_t *n,
			struct lb_err **err);
void lb_box_session_list_free(struct lb_box_session *v, size_t n);
/*
 * §3.5: removes non-persistent sessions idle for longer than the TTL with no exec in flight and
 * no running managed process, and sessions whose owner instance is gone (§3.8). now_ns 0 =
 * the current time (a test may pass a later one).
 */
int lb_box_session_reap(struct lb_box *box, uint64_t now_ns, size_t *removed, struct lb_err **err);

/* Drops every session whose owner is box->owner (a server's shutdown). */
void lb_box_drop_owned(struct lb_box *box);
/* A server's instance: held (flock) for its lifetime so reapers know its sessions are owned. */
int lb_box_instance_hold(struct lb_box *box, int *fd, struct lb_err **err);
/* At the server's exit, its sessions dropped: the lock file goes, then the lock (fd) itself. */
void lb_box_instance_release(struct lb_box *box, int fd);

/*
 * A terminal user's exec rather than LangBot's: in_fd is relayed into the command's stdin (-1:
 * /dev/null, as with LangBot), and its stdout and stderr go to out_fd and err_fd as they come,
 * byte for byte (-1: captured into the result as LangBot's text). A reader that goes away
 * (EPIPE) closes the command's pipe, so the command sees EPIPE as in a shell pipeline.
 */
struct lb_tty;
struct lb_box_exec_io {
	int in_fd, out_fd, err_fd;
	uint64_t
	    out_limit; /* bytes passed to each of out_fd and err_fd, the rest dropped; 0: all */
	/* a pty (lbbox/base/tty.h) instead: the command's stdio is the slave, the relay serves
	 * in_fd and out_fd meanwhile; err_fd only says why the command could not start */
	struct lb_tty *tty;
};

/* One exec (§3.4): sh -lc "mkdir -p W && cd W && CMD", output captured. */
struct lb_box_exec_req {
	const char *cmd;
	const char *workdir; /* NULL = the session's mount_path */
	char *const *env;    /* NULL-terminated KEY=VALUE, may be NULL */
	int64_t timeout_sec;
	uint64_t fsize_limit; /* RLIMIT_FSIZE bytes for the command (workspace quota), 0 = none */
	const struct lb_box_exec_io *io; /* NULL: LangBot's exec (no stdin, output captured) */
};
struct lb_box_exec_result {
	bool timed_out;
	bool has_exit_code; /* false = JSON null */
	int exit_code;
	char *out, *err; /* LangBot's text: capped, decoded, stripped */
	uint64_t duration_ms;
};
void lb_box_exec_result_free(struct lb_box_exec_result *r);
/* Runs in an existing session (BoxSessionNotFoundError otherwise); serialised per session. A
 * timeout kills the exec's process tree and destroys the session before returning. */
int lb_box_exec(struct lb_box *box, const char *session_id, const struct lb_box_exec_req *req,
		struct lb_box_exec_result *res, struct lb_err **err);

/* ---- managed processes (§3.6) -----------------------------------------------------------------
 */

/* BoxManagedProcessInfo, plus the keeper that holds its pipes. */
struct lb_box_proc_info {
	char *session_id, *process_id, *command, *cwd;
	char **args;	 /* NULL-terminated */
	char **env_keys; /* NULL-terminated, sorted */
	bool running, attached;
	uint64_t started_ns, exited_ns; /* exited_ns 0 = null */
	bool has_exit_code;
	int exit_code;
	char *stderr_preview;
	char *cgroup; /* its child cgroup in the session's sandbox (lbbox-internal) */
	/* lbbox-internal: a detached run's process (lb_box_proc_spec.history), kept after its
	 * exit until its session goes; the process itself, as the keeper's child */
	bool history;
	pid_t pid;
	uint64_t pid_start;
};
void lb_box_proc_info_free(struct lb_box_proc_info *p);

/*
 * Starts spec in the session, its stdin/stdout/stderr held by a small keeper process that
 * outlives the caller: stderr feeds the preview, stdout is read only while a client is attached.
 * A running process with the same process_id is terminated and replaced.
 */
int lb_box_proc_start(struct lb_box *box, const char *session_id,
		      const struct lb_box_proc_spec *spec, struct lb_box_proc_info *out,
		      struct lb_err **err);
int lb_box_proc_get(struct lb_box *box, const char *session_id, const char *process_id,
		    struct lb_box_proc_info *out, struct lb_err **err);
/* The session's managed processes (running and recently exited), sorted by process_id. */
int lb_box_proc_list(struct lb_box *box, const char *session_id, struct lb_box_proc_info **out,
		     size_t *n, struct lb_err **err);
void lb_box_proc_list_free(struct lb_box_proc_info *v, size_t n);
/* close stdin, SIGTERM, 5 s, SIGKILL of its cgroup; then removed from the registry. */
int lb_box_proc_stop(struct lb_box *box, const char *session_id, const char *process_id,
		     struct lb_err **err);
/* Drops the record of an exited process; a running one is a BoxManagedProcessConflictError,
 * unless force: it is then stopped first (as lb_box_proc_stop). */
int lb_box_proc_remove(struct lb_box *box, const char *session_id, const char *process_id,
		       bool force, struct lb_err **err);
/* A stream socket to the running process: bytes written go to its stdin, its stdout comes back.
 * One client at a time (a second waits in the keeper's short queue; nonblock: a non-blocking
 * socket, and a full queue fails with EAGAIN instead of waiting). BoxManagedProcessConflictError
 * when not running. */
int lb_box_proc_attach(struct lb_box *box, const char *session_id, const char *process_id,
		       bool nonblock, int *fd, struct lb_err **err);
/* A process started with a terminal (lb_box_proc_spec.tty): a socket taking its window size, a
 * struct winsize (8 bytes) per change. BoxValidationError when it has no terminal. */
int lb_box_proc_tty(struct lb_box *box, const char *session_id, const char *process_id, int *fd,
		    struct lb_err **err);
/* A history process's output as its keeper reads it, as chunks of the history's format (8-byte
 * header, lb_box_log_header_parse), stdout and stderr in the order read, to one follower at a
 * time: the keeper reads no faster than the follower takes it (back-pressure), and with
 * lb_box_proc_spec.hold nothing before the first follower came. The socket ends once the
 * process's exit is recorded. BoxManagedProcessConflictError when not running. */
int lb_box_proc_follow(struct lb_box *box, const char *session_id, const char *process_id, int *fd,
		       struct lb_err **err);
/* A managed process's output history (lb_box_proc_spec.history): chunks of stdout and stderr
 * in the order the keeper read them, from a bounded ring of two halves (the latest 128 to
 * 256 KiB). */
#define LB_BOX_LOG_CHUNK_MAX 65536
#define LB_BOX_LOG_HALF_KIB  128
struct lb_box_log_reader {
	int fd;	      /* the half being read (-1 until there is one) */
	uint64_t seq; /* its number */
	uint64_t off; /* where its next chunk starts */
	bool damaged; /* a header in it is none: the rest of it is skipped */
	bool bounded; /* stop where the history ended when it was opened (clear to follow) */
	uint64_t end_seq, end_off;
	uint64_t skipped; /* halves dropped before they were read, in all (a slow follower) */
	uint64_t damaged_halves;
	char path[LB_PATH_BUF];
};
/* Opens the history from its oldest chunk, bounded to what it holds now; an error when the
 * process keeps none. */
int lb_box_proc_log_open(struct lb_box *box, const char *session_id, const char *process_id,
			 struct lb_box_log_reader *r, struct lb_err **err);
/* 1: the next chunk in buf (cap >= LB_BOX_LOG_CHUNK_MAX), *n bytes of *stream (1 stdout,
 * 2 stderr); 0: none yet (a follower polls again). */
int lb_box_log_next(struct lb_box_log_reader *r, int *stream, char *buf, size_t cap, size_t *n);
/* A chunk header (8 bytes: stream, 0, 0, 0, length big-endian): 0 with its stream (1 or 2) and
 * length (at most LB_BOX_LOG_CHUNK_MAX); -1 when it is none. */
int lb_box_log_header_parse(const unsigned char h[8], int *stream, size_t *n);
void lb_box_log_close(struct lb_box_log_reader *r);

/* Running managed processes of one session. */
size_t lb_box_session_running_procs(struct lb_box *box, const char *session_id);
/* In a child forked from the process that owns box (a runtime's job): lets go of what that
 * process keeps for itself (box_status's watch), so that nothing the child leaves running (a
 * keeper) holds it. */
void lb_box_forked(struct lb_box *box);
/* status.c: the sessions (with a record) whose ids begin with "<prefix>-" (every one: prefix
 * NULL) and their running managed processes, without reading the records. */
void lb_box_status(struct lb_box *box, const char *prefix, size_t *sessions, size_t *running);
/* Running managed processes of the whole runtime. */
size_t lb_box_proc_count_running(struct lb_box *box);
/* Sessions, running and exited managed processes, read without pruning anything. */
void lb_box_count(struct lb_box *box, size_t *sessions, size_t *running, size_t *exited);

#endif
