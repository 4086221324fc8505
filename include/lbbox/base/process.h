/* Processes: a forked child's one-line failure report to its parent, and process identity. */
#ifndef LBBOX_PROCESS_H
#define LBBOX_PROCESS_H

#include <stdint.h>
#include <sys/types.h>

#include "lbbox/base/err.h"

/*
 * Exit codes for failures of lbbox itself, as docker/podman: 125 = lbbox could not build the
 * sandbox, 126 = the command exists but cannot be executed, 127 = the command was not found.
 */
enum {
	LB_EXIT_TIMEOUT = 124,
	LB_EXIT_SETUP = 125,
	LB_EXIT_CANNOT_EXEC = 126,
	LB_EXIT_NOT_FOUND = 127
};

/* Why a forked child failed, written once to a CLOEXEC pipe: the parent reads EOF instead when
 * the child exec'd (or exited without a word). */
struct lb_child_msg {
	int exit_code;
	char msg[500];
};

/* Reports e (and code) to the parent through fd, then _exit(code). */
__attribute__((noreturn)) void lb_child_fail(int fd, int code, const struct lb_err *e);
/* Reads the child's report: 0 on EOF (nothing to report); 1 with *msg filled, a cut-short report
 * becoming exit code LB_EXIT_SETUP and the text fallback. */
int lb_child_read_fail(int fd, struct lb_child_msg *msg, const char *fallback);

/* /proc/PID/stat start time (clock ticks since boot), 0 when the process does not exist or is a
 * zombie: with the pid, it names one process across pid reuse. */
uint64_t lb_proc_starttime(pid_t pid);

#endif
