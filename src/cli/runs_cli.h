/* The verbs of detached runs (ps, logs, stop, kill, rm, exec) and the output-history printing
 * they share with `proc logs` and `run --name` (proc_logs.c). */
#ifndef LBBOX_CLI_RUNS_H
#define LBBOX_CLI_RUNS_H

#include <stdbool.h>

#include "cli.h"

struct lb_box;

/* ps.c */
int cli_ps(struct cli_globals *g, int argc, char **argv);
/* detach_verbs.c: logs, stop, kill, rm, exec (argv[0] is the verb). */
int cli_run_verb(struct cli_globals *g, int argc, char **argv);

/* proc_logs.c: prints the history of proc in session (tail lines of it, -1 all) and, when
 * follow, what comes until it exits; a signal read from sigfd (-1: none) is sent to the run
 * named session. 0, or the exit code of an error it printed. */
int cli_logs_show(struct lb_box *box, const char *session, const char *proc, bool follow, long tail,
		  int sigfd);
/* [-f|--follow] [--tail N] and the operands, into p. */
extern const struct cli_optdef cli_logs_opts;
int cli_logs_parse(struct cli_opts *p, int argc, char **argv, bool *follow, long *tail,
		   struct lb_err **err);
/* run_follow.c: a foreground named run's output, all of it, until main exits; a signal read
 * from sigfd is sent to main. 0, or the exit code of an error it printed. */
int cli_run_follow(struct lb_box *box, const char *name, int sigfd);
/* lbbox proc logs (a proc verb: argv[0] is "logs"). */
/* proc_tty.c: lbbox proc attach -t SESSION ID. */
struct lb_box;
int cli_proc_attach_tty(struct lb_box *box, const char *session, const char *id);
int cli_proc_logs(struct lb_box *box, int argc, char **argv);

#endif
