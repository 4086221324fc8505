/* lbbox-runc: the OCI runtime command line (runc's verbs and flags) on src/oci/. */
#ifndef LBBOX_CLI_RUNC_H
#define LBBOX_CLI_RUNC_H

#include <stdbool.h>

#include "lbbox/oci/oci.h"

struct runc_globals {
	const char *root;
	const char *log; /* --log FILE: errors are also appended there */
	bool log_json;	 /* --log-format json */
	bool debug;
	struct lb_oci_root oci; /* opened by runc_open_root */
};

/* The whole program: argv[0] is "lbbox-runc" (or "runc" for `lbbox runc ...`). */
int cli_runc(int argc, char **argv);

/* runc.c: one error line on stderr and in --log; returns 1 (runc's failure status). */
int runc_fail(const struct runc_globals *g, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int runc_fail_err(const struct runc_globals *g, struct lb_err **err);
int runc_open_root(struct runc_globals *g);
/* Writes pid to path (atomically, as conmon reads it); 1 after reporting a failure. */
int runc_write_pid_file(const struct runc_globals *g, const char *path, pid_t pid);
/* --preserve-fds N: a count up to 1024 whose fds first .. first + N - 1 are all open; 1 after
 * reporting otherwise. */
int runc_preserve_fds(const struct runc_globals *g, const char *arg, unsigned first, unsigned *out);

/* runc_verbs.c, runc_exec.c */
int runc_create(struct runc_globals *g, int argc, char **argv, bool run);
int runc_start(struct runc_globals *g, int argc, char **argv);
int runc_state(struct runc_globals *g, int argc, char **argv);
/* pause and resume */
int runc_pause(struct runc_globals *g, int argc, char **argv);
int runc_kill(struct runc_globals *g, int argc, char **argv);
int runc_delete(struct runc_globals *g, int argc, char **argv);
int runc_list(struct runc_globals *g, int argc, char **argv);
int runc_ps(struct runc_globals *g, int argc, char **argv);
int runc_exec(struct runc_globals *g, int argc, char **argv);
int runc_spec(struct runc_globals *g, int argc, char **argv);
/* runc_update.c */
int runc_update(struct runc_globals *g, int argc, char **argv);

#endif
