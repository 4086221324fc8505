/* Shared between the files of src/box/: the on-disk layout of sessions and its locks. */
#ifndef LBBOX_BOX_INTERNAL_H
#define LBBOX_BOX_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lbbox/box/box.h"

/*
 * RUNROOT/box/
 *   lock                  flock: create, delete and reap of any session (short sections)
 *   reap.due              no session expires before this time (ns): the reaper's hint (reap.c)
 *   sessions/<key>/       one session; <key> = its id when that is a safe file name, else a hash
 *     session.json        the record: id, sandbox id, owner, spec, created
 *     exec.lock           flock: execs of the session run one at a time; mtime = last used
 *     workspace/          the writable workspace of a session without a host_path
 *     procs/              managed processes (managed.c)
 *   live/<key>            -> the session's id: it has its record (index.c)
 *   running/<key>@<proc>  -> "<keeper pid> <start>": a running managed process (index.c)
 *   exited/<ns>@<key>@<proc>  an exited managed process's record (index_exited.c)
 */
#define BOX_KEY_MAX 128

/* records.c */
void box_session_key(const char *id, char key[BOX_KEY_MAX]);
void box_session_dir(const struct lb_box *box, const char *id, char *out, size_t len);
/* Opens dir/name (creating it when create) and flocks it with op (LOCK_EX, LOCK_SH, | LOCK_NB);
 * fd in *fd. exec.lock is never created this way: it exists from the session's creation on, so
 * a late exec or reap racing a delete cannot leave a file behind for the delete's rm -rf. */
int box_flock(const char *dir, const char *name, int op, bool create, int *fd, struct lb_err **err);
/* The global lock of RUNROOT/box (created on first use). */
int box_global_lock(struct lb_box *box, int *fd, struct lb_err **err);
int box_record_read(const struct lb_box *box, const char *id, struct lb_box_session *out,
		    struct lb_err **err);
/* A record from sessions/<key>/<file> (session.json, or deleting.json mid-delete). */
int box_record_read_file(const struct lb_box *box, const char *key, const char *file,
			 struct lb_box_session *out, struct lb_err **err);
/* The same from the session's directory name under sessions/. */
int box_record_read_dir(const struct lb_box *box, const char *key, struct lb_box_session *out,
			struct lb_err **err);
int box_record_write(const char *sdir, const struct lb_box_session *s, struct lb_err **err);
/* Sets last_used to now (mtime of exec.lock). */
void box_touch(const char *sdir);
/* Calls fn for every session directory (key = its name under sessions/, sdir = its path),
 * records or not: being created, deleted, or live. */
typedef void (*box_session_fn)(struct lb_box *box, const char *key, const char *sdir, void *ctx);
void box_each_session(struct lb_box *box, box_session_fn fn, void *ctx);
size_t box_count_sessions(struct lb_box *box);

/* status.c: frees what lb_box_status kept (lb_box_fini). */
void box_status_free(struct lb_box *box);

/* index.c: the runtime-wide indexes of live sessions and running managed processes. */
#define BOX_LIVE_ID_MAX 1024 /* the bytes of a session id its live entry keeps */
/* The session key of a session directory (its last component). */
const char *box_sdir_key(const char *sdir);
int box_live_add(const struct lb_box *box, const char *key, const char *id, struct lb_err **err);
void box_live_remove(const struct lb_box *box, const char *key);
/* Under the session's procs.lock and the capacity lock (a stale namesake is replaced). */
int box_running_add(const struct lb_box *box, const char *skey, const char *process_id,
		    pid_t keeper, uint64_t start, struct lb_err **err);
/* keeper > 0: only while the entry is still that keeper's. */
void box_running_remove(const struct lb_box *box, const char *skey, const char *process_id,
			pid_t keeper, uint64_t start);
void box_running_remove_session(const struct lb_box *box, const char *skey);
/* Every index entry of one process (process_id), or of every process of the session (NULL):
 * running (whoever's) and exited; for a stop, a replace or the session's drop. */
void box_index_forget(const struct lb_box *box, const char *skey, const char *process_id);
/* Entries whose keeper lives; with heal (under the capacity lock) the others are removed. */
size_t box_running_count(const struct lb_box *box, bool heal);
/* box_running_count(heal) under the capacity lock. */
void box_running_heal(const struct lb_box *box);
/* The pieces index_exited.c shares: RUNROOT/box/dir/name, a symlink made there (an existing one
 * kept), and fn on every name of the directory. */
void box_index_path(const struct lb_box *box, const char *dir, const char *name, char *out,
		    size_t len);
int box_index_add(const struct lb_box *box, const char *dir, const char *name, const char *target,
		  struct lb_err **err);
typedef void (*box_index_fn)(const struct lb_box *box, int dfd, const char *name, void *ctx);
/* A list of names read from an index; oom once an add failed (the list is then short). */
struct box_names {
	char **v;
	size_t n;
	bool oom;
};
void box_names_add(struct box_names *s, const char *name);
void box_names_free(struct box_names *s);
void box_index_each(const struct lb_box *box, const char *dir, box_index_fn fn, void *ctx);

/* index_exited.c: RUNROOT/box/exited/<exited ns>@<key>@<proc key>, one per exited record, so
 * the retention (§3.5) reads names, not every session. */
int box_exited_add(const struct lb_box *box, const char *skey, const char *process_id,
		   uint64_t exited_ns, struct lb_err **err);
/* The entries of one process (process_id), or of every process of the session (NULL). */
void box_exited_remove(const struct lb_box *box, const char *skey, const char *process_id);
/* Records past the retention time or beyond the runtime's maximum go, oldest first. */
void box_exited_prune(struct lb_box *box);
/* Entries for the session's exited records that have none (a keeper killed between its record
 * and its entry, or records older than the index): the reaper's round. */
void box_exited_reindex(const struct lb_box *box, const char *skey, const char *sdir);

/* box_spec_record.c: BoxSpec from a session record or a copy: LangBot's rules only, so a
 * session stored before lbbox's own rules tightened can still be read, listed and removed. */
int lb_box_spec_from_record(const json_t *obj, struct lb_box_spec *out, struct lb_err **err);
/* box_spec.c: every validator, LangBot's rules only. */
int box_spec_validate_record(struct lb_box_spec *spec, struct lb_err **err);
/* session.c */
int box_spec_copy(const struct lb_box_spec *src, struct lb_box_spec *dst, struct lb_err **err);
/* drop.c: destroys the session's sandbox and record; the caller holds the global lock. */
int box_session_drop(struct lb_box *box, const char *id, struct lb_err **err);
/* The two steps of box_session_drop: begin (under the global lock), finish (without it). */
int box_session_drop_begin(struct lb_box *box, const char *id, struct lb_err **err);
int box_session_drop_finish(struct lb_box *box, const char *id, struct lb_err **err);
/* The same, releasing the global lock *lock (held by the caller) after the first step. */
int box_session_drop_unlocking(struct lb_box *box, const char *id, int *lock, struct lb_err **err);
/* Another live process is deleting the session in sdir (its second step, unlocked). */
bool box_deleting_elsewhere(const char *sdir);
/* No live process is creating the session in sdir (its creator died, or there is none). */
bool box_creator_gone(const char *sdir);
/* Removes what a create whose process died left in sdir: its sandbox (found by its tag), the
 * directory. Under the global lock. */
int box_drop_leftover(struct lb_box *box, const char *sdir);
/* Marks sdir as being created by this process (with the deleter marker's room, taken now while
 * there is some); the live process creating it: 1 = this one, 2 = another, 0 = none. */
int box_mark_creating(const char *sdir, struct lb_err **err);
int box_creator(const char *sdir);
/* The session in sdir is made: its creating marker goes. */
void box_unmark_creating(const char *sdir);

/* Sessions whose drop began under the global lock (their record is deleting.json, their
 * deleter this process): the slow second step (managed processes' grace, the sandbox, the
 * files) is finished after the lock is released, so a big workspace stalls no one. */
struct box_dropping {
	char **ids;
	size_t n;
};
/* Ends every drop of d (no lock held); how many went; frees d's contents. */
size_t box_dropping_finish(struct lb_box *box, struct box_dropping *d);

/* quota.c: the session's workspace quota as the largest file any of its commands (execs and managed
 * processes) may write (RLIMIT_FSIZE), beyond LangBot: one write cannot fill the disk. 0: none,
 * also when the quota is hard (lb_box_workspace_quota_hard). */
uint64_t box_quota_fsize(const struct lb_box_spec *spec);

/* exec_io.c: the caller's stdin pumped into an exec's command, one buffer at a time. */
struct box_pump {
	int src; /* the caller's stdin, never closed by us */
	int dst; /* our end of the command's stdin pipe (non-blocking); -1 once it has ended */
	char buf[16384];
	size_t len, off; /* what of buf is still to be written */
};
/* src -1: no pump (the command's stdin is /dev/null, *child_end -1); else *child_end is the pipe's
 * read end, for the command. */
int box_pump_open(struct box_pump *p, int src, int *child_end, struct lb_err **err);
/* What the pump waits for next into pfd (fd -1: it has ended). */
struct pollfd;
void box_pump_arm(const struct box_pump *p, struct pollfd *pfd);
/* One read of src or one write to the command, whichever box_pump_arm asked for. */
void box_pump_step(struct box_pump *p);
void box_pump_close(struct box_pump *p);
/* At most limit bytes in all (0: no limit, *written counts them) of an exec's output to fd;
 * false when fd takes no more (its reader has gone). */
bool box_pass_output(int fd, const char *buf, size_t n, uint64_t *written, uint64_t limit);
/* SIGPIPE ignored while output is passed on (EPIPE instead), then restored. */
struct sigaction;
void box_sigpipe_ignore(struct sigaction *old);
void box_sigpipe_restore(const struct sigaction *old);

/* reap.c: the TTL and orphan rules; the caller holds the global lock and finishes d after. A
 * full reap (every session), which also sets the hint RUNROOT/box/reap.due. */
void box_reap_locked(struct lb_box *box, uint64_t now_ns, struct box_dropping *d);
/* The same only once the hint says a session may have expired; true when it ran. */
bool box_reap_if_due(struct lb_box *box, uint64_t now_ns, struct box_dropping *d);
/* A session made or touched: the hint no later than its expiry. Under the global lock. */
void box_reap_due_lower(struct lb_box *box, const struct lb_box_session *s);

/* image.c: bs->image as spec's root (spec->readonly_root already final). */
int box_image_spec(const struct lb_box *box, const struct lb_box_spec *bs, struct lb_spec *spec,
		   struct lb_err **err);

/* engine_spec.c: the Box fields on top of the caller's engine spec. */
int box_engine_spec(const struct lb_box *box, const struct lb_box_spec *bs, const char *workspace,
		    struct lb_spec *spec, struct lb_err **err);

/* managed_record.c: procs/<hash>.json records and socket names. */
#define BOX_PROC_STOP_GRACE_SEC 5
/* How long a managed process may take to start (its execve): a session process can stop it
 * before, and the caller of box_start_managed_process waits for the start */
#define BOX_PROC_START_TIMEOUT_SEC 10
void box_proc_key(const char *process_id, char key[32]);
void box_proc_paths(const char *sdir, const char *process_id, char *json, char *sock, size_t len);
/* The follower's socket beside the attach socket sock (lb_box_proc_follow). */
void box_proc_follow_path(const char *sock, char *out, size_t len);
/* The window-size socket of a process with a terminal (lb_box_proc_resize). */
void box_proc_tty_path(const char *sock, char *out, size_t len);
int box_proc_record_read(const char *path, struct lb_box_proc_info *out, pid_t *keeper,
			 uint64_t *keeper_start, struct lb_err **err);
int box_proc_record_write(const char *path, const struct lb_box_proc_info *p, pid_t keeper,
			  uint64_t keeper_start, struct lb_err **err);

/* proc_log.c: the history of a managed process with lb_box_proc_spec.history, as the keeper
 * writes it: procs/<hash>.log and, the previous half, .log.1; each at most BOX_LOG_HALF bytes
 * of chunks (8-byte header as docker's multiplexed streams: stream, 0, 0, 0, size big-endian),
 * the first of each its header (stream 0, 8 bytes: the half's number, big-endian). */
#define BOX_LOG_HALF (LB_BOX_LOG_HALF_KIB * 1024)
struct box_log {
	int fd;
	uint64_t size, seq; /* of the current half, and its number (from 1) */
	char path[LB_PATH_BUF];
};
/* The log path of a record path (procs/<hash>.json -> procs/<hash>.log). */
void box_proc_log_path(const char *json, char *out, size_t len);
/* a chunk's 8-byte header: stream (1 stdout, 2 stderr; 0 a half's own), 3 zero bytes, length
 * big-endian (docker's format) */
void box_log_put_header(unsigned char h[8], int stream, size_t n);
/* the history file's name with suffix (".1", ".new" ...) */
void box_log_sibling(const char *path, const char *suffix, char *out, size_t len);
#define BOX_LOG_HALF_HEADER 16 /* a half's first chunk: 8 bytes of header, 8 of its number */
int box_log_open(struct box_log *l, const char *json, struct lb_err **err);
/* Appends one chunk; a write error loses the chunk, never the process. */
void box_log_write(struct box_log *l, int stream, const char *buf, size_t n);
/* Removes a record and its history. */
void box_proc_files_unlink(const char *json);

/* keeper_follow.c: a listening unix socket at path; the follower of a history process. */
int box_keeper_listen(const char *path, int *fd, struct lb_err **err);
struct box_follower {
	int lfd, fd; /* its listening socket, the follower (-1: none) */
	bool came;   /* one has come: a held process's output is read from then on */
	char buf[8 + LB_BOX_LOG_CHUNK_MAX];
	size_t len, off; /* a chunk being sent: the keeper reads no output until it is */
};
void box_follower_accept(struct box_follower *f);
bool box_follower_busy(const struct box_follower *f);
/* Sends a chunk (or starts to; the rest at the follower's POLLOUT). */
void box_follower_send(struct box_follower *f, int stream, const char *buf, size_t n);
/* What poll said of f->fd: the rest of the chunk sent, or the follower gone. */
void box_follower_event(struct box_follower *f, short revents);
/* Waits until the chunk is sent; a signal on sigfd drops the follower instead. */
void box_follower_drain(struct box_follower *f, int sigfd);
void box_follower_close(struct box_follower *f);

/* keeper.c: forks the keeper of one managed process; returns once it runs (or failed). */
int box_keeper_spawn(struct lb_box *box, const struct lb_box_session *s, const char *sdir,
		     const struct lb_box_proc_spec *spec, struct lb_err **err);

/* The keeper alive and still the same process; its pidfd in *pidfd when asked. */
bool box_keeper_alive(pid_t keeper, uint64_t start, int *pidfd);
/* Reads a record; a keeper that died without recording the exit (SIGKILL) reads as exited. */
int box_proc_read(const char *path, struct lb_box_proc_info *out, pid_t *keeper, uint64_t *kstart,
		  struct lb_err **err);
/* Calls fn on every managed-process record of the session directory. */
typedef void (*box_each_proc_fn)(const char *json, struct lb_box_proc_info *info, pid_t keeper,
				 uint64_t kstart, void *ctx);
void box_each_proc(const char *sdir, box_each_proc_fn fn, void *ctx);

/* managed.c */
/* Terminates every managed process of the session (close stdin, SIGTERM, 5 s, SIGKILL). */
void box_procs_terminate_all(struct lb_box *box, const char *sdir);
/* True when a managed process of the session is running. */
bool box_procs_any_running(const char *sdir);
/* Running processes of the session (only: just that process_id, 0 or 1). */
size_t box_procs_running(const char *sdir, const char *only);

#endif
