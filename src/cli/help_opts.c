/*
 * A verb's options as podman takes them: `VERB [OPTIONS] NAME [OPTIONS] [--] [CMD...]`, -h and
 * --help anywhere before the command, and errors that name the exact token a user typed
 * ("unknown option '-t' (in '-it')"), which getopt's own messages (and argv[optind - 1]) do not.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "lbbox/base/util.h"

bool cli_is_help(const char *arg)
{
	return !strcmp(arg, "-h") || !strcmp(arg, "--help");
}

void cli_opts_init(struct cli_opts *o, int argc, char **argv, const struct cli_optdef *def)
{
	*o = (struct cli_opts){.argc = argc, .argv = argv, .def = def, .cmd = argc};
	optind = 0; /* glibc: start afresh, whatever an earlier scan left behind */
	opterr = 0;
}

/* "--name=value" -> "--name", for a message about the option rather than its value. */
static int long_name_len(const char *token)
{
	return (int)strcspn(token, "=");
}

int cli_opt_error(int c, const char *token, struct lb_err **err)
{
	bool is_long = !strncmp(token, "--", 2);
	if (is_long && c == ':')
		return lb_err_set(err, 0, "option '%.*s' requires a value", long_name_len(token),
				  token);
	if (is_long && optopt && strchr(token, '='))
		return lb_err_set(err, 0, "option '%.*s' takes no value", long_name_len(token),
				  token);
	if (is_long)
		return lb_err_set(err, 0, "unknown option '%.*s'", long_name_len(token), token);
	bool bundle = strlen(token) > 2;
	if (c == ':')
		return bundle ? lb_err_set(err, 0, "option '-%c' (in '%s') requires a value",
					   optopt, token)
			      : lb_err_set(err, 0, "option '-%c' requires a value", optopt);
	return bundle ? lb_err_set(err, 0, "unknown option '-%c' (in '%s')", optopt, token)
		      : lb_err_set(err, 0, "unknown option '-%c'", optopt);
}

/* getopt stopped at an operand: the first is the name, and options may follow it again. */
static bool take_operand(struct cli_opts *o, bool after_dashes)
{
	int at = o->base + optind;
	if (o->name || after_dashes || at >= o->argc) {
		o->cmd = o->name || at >= o->argc ? at : at + 1;
		if (!o->name && at < o->argc)
			o->name = o->argv[at];
		return false;
	}
	o->name = o->argv[at];
	o->base = at; /* the name stands in for argv[0] of the next scan */
	optind = 0;
	return true;
}

int cli_opts_next(struct cli_opts *o, struct lb_err **err)
{
	for (;;) {
		char **av = o->argv + o->base;
		int before = optind ? optind : 1;
		int c =
		    getopt_long(o->argc - o->base, av, o->def->shortopts, o->def->longopts, NULL);
		if (c == '?' || c == ':')
			return cli_opt_error(c, av[before], err), '?';
		if (c != -1)
			return c;
		/* getopt steps over a "--" it stops at: that ends the options (and the name) */
		bool dashes = optind == before + 1 && !strcmp(av[before], "--");
		if (!take_operand(o, dashes))
			return -1;
	}
}

/* A verb that runs a command: its own getopt scan tells where the command starts. */
static bool help_before_command(int argc, char **argv, const struct cli_optdef *def)
{
	struct cli_opts o;
	int c;
	cli_opts_init(&o, argc, argv, def);
	if (argc > 1 && cli_is_help(argv[1]))
		return true; /* where the name goes */
	while ((c = cli_opts_next(&o, NULL)) != -1)
		if (c == 'h')
			return true;
	return false;
}

bool cli_help_asked(int argc, char **argv, const struct cli_optdef *cmd_def)
{
	if (cmd_def)
		return help_before_command(argc, argv, cmd_def);
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (cli_is_help(argv[i]))
			return true;
	return false;
}
