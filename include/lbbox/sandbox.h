/* The engine: a checked spec -> a running sandbox -> its result. Knows nothing of images. */
#ifndef LBBOX_SANDBOX_H
#define LBBOX_SANDBOX_H

#include <stdbool.h>
#include <stdint.h>

#include "lbbox/err.h"
#include "lbbox/spec.h"

struct lb_paths {
	const char *root;    /* store: images, caches (default /var/lib/lbbox) */
	const char *runroot; /* runtime state (default /run/lbbox) */
};

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
 * Exit codes for failures of lbbox itself, as docker/podman: 125 = lbbox could not build the
 * sandbox, 126 = the command exists but cannot be executed, 127 = the command was not found.
 */
enum { LB_EXIT_SETUP = 125, LB_EXIT_CANNOT_EXEC = 126, LB_EXIT_NOT_FOUND = 127 };

/*
 * Runs spec->argv in a new sandbox and waits for it. Returns < 0 with *err set when the
 * sandbox could not be built (then *setup_exit holds 125, 126 or 127); nothing is left behind.
 * Signals SIGINT/SIGTERM/SIGHUP/SIGQUIT/SIGUSR1/SIGUSR2 received meanwhile are forwarded.
 */
int lb_sandbox_run(const struct lb_spec *spec, const struct lb_paths *paths, struct lb_result *res,
		   int *setup_exit, struct lb_err **err);

/*
 * Removes the state directories and cgroups of sandboxes whose lbbox died without cleaning up
 * and whose pid 1 is gone. lb_sandbox_run calls it before starting a sandbox.
 */
int lb_sandbox_gc(const struct lb_paths *paths, struct lb_err **err);

#endif
