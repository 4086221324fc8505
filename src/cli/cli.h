/* lbbox command line: global options and one entry point per verb. */
#ifndef LBBOX_CLI_H
#define LBBOX_CLI_H

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

#include "lbbox/sandbox/sandbox.h"

struct cli_globals {
	struct lb_paths paths;
	char **argv; /* lbbox's own argv, to re-execute it */
};

/* Prints "lbbox: <msg>" on stderr: the one place lbbox's own messages are written; control
 * characters in msg are escaped (lb_escape_ctl), so it stays one line. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

int cli_run(struct cli_globals *g, int argc, char **argv);
/* lbbox run's options (argv[0] is skipped) -> an engine spec: image resolved, env finished. */
int cli_build_spec(struct cli_globals *g, int argc, char **argv, struct lb_spec *out,
		   struct lb_err **err);
/* parse.c: *dst becomes a copy of an option's value (the old one freed). */
int cli_set_string(char **dst, const char *v, struct lb_err **err);
/* An option's boolean: true/1/yes (or no value at all), false/0/no. */
int cli_parse_bool(const char *s, bool *out, struct lb_err **err);
/* "HOST:SANDBOX[:ro|rw]" -> mount (host path not yet checked). */
int cli_parse_mount(const char *arg, struct lb_mount *out, struct lb_err **err);
/* "nofile=1024[:2048]" -> rlimit. */
int cli_parse_rlimit(const char *arg, struct lb_rlimit *out, struct lb_err **err);
/* "0.5" cpus -> quota/period in microseconds. */
int cli_parse_cpus(const char *arg, uint64_t *quota_us, uint64_t *period_us, struct lb_err **err);
/* "cap_net_raw" / "NET_RAW" / "ALL" -> bitmask. */
int cli_parse_cap(const char *name, uint64_t *mask, struct lb_err **err);

/* Prints "lbbox: <Class>: <message>" (the class when there is one); returns 125. */
int cli_box_error(const struct lb_err *err);
/* lbbox run --profile (run_profile.c): the profile's defaults and locked fields on spec. */
int cli_run_profile(const char *name, struct lb_spec *spec, bool network_given,
		    struct lb_err **err);
struct lb_box;
/* lbbox session create (session_create.c). */
int cli_session_create(struct cli_globals *g, struct lb_box *box, int argc, char **argv);
/* lbbox info (info.c). */
int cli_info(struct cli_globals *g, int argc, char **argv);
int cli_session(struct cli_globals *g, int argc, char **argv);
int cli_proc(struct cli_globals *g, int argc, char **argv);
/* lbbox box -s / serve: exec lbbox-server beside lbbox, same argv (box_launch.c). */
int cli_box(struct cli_globals *g, int argc, char **argv);
int cli_serve(struct cli_globals *g, int argc, char **argv);
/* Prints s escaped for a terminal (lb_escape_ctl), in a field of at least width columns
 * (printf's %-*s). */
void cli_print_escaped(const char *s, int width);
/* Prints one JSON value on a line. */
void cli_print_json(json_t *j);

int cli_network(struct cli_globals *g, int argc, char **argv);
/* load, images, inspect, tag, rmi, image prune (images.c). */
int cli_images(struct cli_globals *g, int argc, char **argv);

#endif
