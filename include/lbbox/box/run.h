/*
 * Detached runs (`lbbox run -d`, ps, logs, stop, kill, rm, exec), on the Box's own objects: a
 * run named NAME is the persistent session NAME plus its managed process "main" (the run's
 * command, with an output history), and a run.json in the session's directory saying what the
 * user asked for. `lbbox session` and `lbbox proc` see the same session and process.
 */
#ifndef LBBOX_BOX_RUN_H
#define LBBOX_BOX_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "lbbox/box/box.h"

#define LB_BOX_RUN_PROC "main"

struct lb_box_run {
	char *name, *image, *workdir;
	char **argv; /* the command as given (NULL-terminated) */
	uint64_t created_ns;
	bool has_main; /* false while main is being started (or it failed to) */
	struct lb_box_proc_info main;
};
void lb_box_run_free(struct lb_box_run *r);
void lb_box_run_list_free(struct lb_box_run *v, size_t n);

/* What a run is made of. base and bs describe the session, proc its main (history and direct
 * are set here); image is the name shown by ps. */
struct lb_box_run_req {
	const char *image;
	struct lb_box_spec *bs; /* bs->session_id is the run's name */
	struct lb_spec *base;	/* taken over */
	struct lb_box_proc_spec *proc;
};
/*
 * Creates the run: its session (persistent, no owner), run.json, main started. A name in use by
 * any session is refused (errnum EEXIST) before anything is made; on any failure nothing is left.
 */
int lb_box_run_create(struct lb_box *box, const struct lb_box_run_req *req, struct lb_err **err);
/* "no run named NAME" when NAME is not a run (a plain session is not). */
int lb_box_run_get(struct lb_box *box, const char *name, struct lb_box_run *out,
		   struct lb_err **err);
/* Every run, newest first. */
int lb_box_run_list(struct lb_box *box, struct lb_box_run **out, size_t *n, struct lb_err **err);
/* Sends sig to main; an error when it is not running. */
int lb_box_run_kill(struct lb_box *box, const char *name, int sig, struct lb_err **err);
/* SIGTERM to main, then after grace_sec SIGKILL to its whole cgroup; waits until it exited. A
 * run already exited is not an error. The run stays (exited). */
int lb_box_run_stop(struct lb_box *box, const char *name, unsigned grace_sec, struct lb_err **err);
/* Removes the run (its session, processes, history, state); a running one only with force
 * (killed first). */
int lb_box_run_remove(struct lb_box *box, const char *name, bool force, struct lb_err **err);

/* A command in a running run's session, on the caller's descriptors. */
struct lb_tty;
struct lb_box_run_exec {
	char *const *argv;
	char *const *env;   /* KEY=VALUE added to the run's, may be NULL */
	const char *cwd;    /* NULL = the run's workdir */
	int fds[3];	    /* -1 = /dev/null */
	struct lb_tty *tty; /* a pty instead (lbbox/base/tty.h): fds[1] and fds[2] unused */
};
/* Runs it, waits, its exit status as a shell reports it in *code. */
int lb_box_run_exec(struct lb_box *box, const char *name, const struct lb_box_run_exec *x,
		    int *code, struct lb_err **err);

#endif
