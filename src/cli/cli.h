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
/* run_volume.c: -v HOST:SANDBOX[:OPTS] (OPTS: ro, rw, z, Z), relative HOST from the current
 * directory; a bare name (podman's named volume) is refused with a hint. The host path is
 * checked later, by the engine. */
int cli_parse_volume(const char *arg, struct lb_mount *out, struct lb_err **err);
/* "nofile=1024[:2048]" -> rlimit. */
int cli_parse_rlimit(const char *arg, struct lb_rlimit *out, struct lb_err **err);
/* A signal as a number, NAME or SIGNAME (any case): its number, or -1. */
int cli_parse_signal(const char *s);
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

/* ---- help and options, as podman takes them (help_opts.c) ---- */
struct option;
/* A verb's getopt tables: shortopts starts "+:" (stop at the first operand, ':' for a missing
 * value) and has 'h', longopts has "help" -> 'h'. */
struct cli_optdef {
	const char *shortopts;
	const struct option *longopts;
};
/* `VERB [OPTIONS] NAME [OPTIONS] [--] [CMD...]` (argv[0] is the verb): the first operand is the
 * name, the next one, or whatever follows a "--", starts the command. */
struct cli_opts {
	int argc;
	char **argv;
	const struct cli_optdef *def;
	int base;	  /* argv index the current getopt scan counts from */
	const char *name; /* NULL until found */
	int cmd;	  /* argv index of the command; argc when there is none */
};
bool cli_is_help(const char *arg);
/* -h or --help among a verb's arguments (argv[0] is the verb) before a "--"; for a verb that runs
 * a command (cmd_def, its options), before the command too: an -h after it is the command's. */
bool cli_help_asked(int argc, char **argv, const struct cli_optdef *cmd_def);
void cli_opts_init(struct cli_opts *o, int argc, char **argv, const struct cli_optdef *def);
/* The next option as getopt_long returns it (optarg set), -1 after the last one (o->name and
 * o->cmd then final), or '?' with *err naming the exact bad token ("unknown option '-t' (in
 * '-it')", "option '--timeout' requires a value"). */
int cli_opts_next(struct cli_opts *o, struct lb_err **err);
/* getopt's '?' or ':' (optstring starting "+:") as that message, token the argv element getopt
 * was reading: argv[optind] as it was before the call, since in a bundle optind moves on only
 * after its last letter. Returns -1. */
int cli_opt_error(int c, const char *token, struct lb_err **err);
/* Prints the help of `GROUP VERB` (verb NULL for a group that is one verb, e.g. info) on stdout;
 * returns 0, or 125 when there is none. (help_verbs.c) */
int cli_print_help(const char *group, const char *verb);
/* A name for something new (what: "session", "process"): not empty, no leading '-', no '/', no
 * control characters, at most 200 bytes; the error names it. Lookups are not checked. (names.c)
 */
int cli_check_name(const char *what, const char *name, struct lb_err **err);
/* lbbox --version / lbbox version (version.c). */
int cli_version(void);
/* "VERSION (COMMIT)" */
const char *cli_version_string(void);
/* load, images, inspect, tag, rmi, image prune (images.c). */
int cli_images(struct cli_globals *g, int argc, char **argv);

#endif
