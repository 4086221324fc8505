/*
 * lbbox logs, stop, kill, rm and exec on detached runs, as podman spells them. Each is a thin
 * shell over lbbox/box/run.h; the help of each is printed by `VERB --help` and nothing else.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/tty.h"
#include "lbbox/base/util.h"
#include "lbbox/box/run.h"
#include "runs_cli.h"

static const char logs_help[] =
    "usage: lbbox logs [-f] [--tail N] NAME\n"
    "Prints the output history of run NAME (stdout to stdout, stderr to stderr), read by the\n"
    "run's keeper whether anyone watches or not. It keeps two halves of 128 KiB: the latest\n"
    "128 to 256 KiB of output. A follower that falls further behind says what it lost.\n"
    "  -f, --follow   then what comes, until the run's command exits\n"
    "  --tail N       only the last N lines of the history (-1: all)\n"
    "  -h, --help     this help\n";

static const char stop_help[] =
    "usage: lbbox stop [-t SECONDS] NAME...\n"
    "Stops runs: SIGTERM to the command, SIGKILL to everything it started after SECONDS\n"
    "(default 10). A stopped run stays listed (lbbox ps -a) until lbbox rm.\n"
    "  -t, --time SECONDS   the grace period (0: SIGKILL at once)\n"
    "  -h, --help           this help\n";

static const char kill_help[] = "usage: lbbox kill [-s SIGNAL] NAME...\n"
				"Sends SIGNAL (default KILL; a name, SIGNAME or number) to the\n"
				"command of each run.\n"
				"  -s, --signal SIGNAL  the signal\n"
				"  -h, --help           this help\n";

static const char rm_help[] =
    "usage: lbbox rm [-f] NAME...\n"
    "Removes runs: their session, command, output history and state. A running one only\n"
    "with -f (it is killed first).\n"
    "  -f, --force    remove running runs too\n"
    "  -h, --help     this help\n";

static const char exec_help[] =
    "usage: lbbox exec [OPTIONS] NAME CMD [ARG...]\n"
    "Runs CMD in running run NAME (its session: same root, user, environment, limits);\n"
    "its output comes as it is written, its exit code is lbbox's. What CMD leaves running\n"
    "in the background is killed when it exits.\n"
    "  -i, --interactive     pass stdin to CMD (default: /dev/null)\n"
    "  -t, --tty             a pseudo-terminal (the sandbox's own) as CMD's stdio, relayed\n"
    "                        here, as lbbox run -t\n"
    "  -e, --env KEY=VALUE   environment variable (repeatable)\n"
    "  -w, --workdir DIR     working directory (default the run's)\n"
    "  -h, --help            this help\n";

/* -t SECONDS, -s SIGNAL, -f: the options of the verbs over many names. */
struct many_opts {
	unsigned grace;
	int sig;
	bool force;
};

static int take_many_opt(struct many_opts *o, int c, struct lb_err **err)
{
	uint64_t n;
	switch (c) {
	case 't':
		if (lb_parse_u64(optarg, &n, NULL) < 0 || n > 86400)
			return lb_err_set(err, 0, "invalid -t '%s': expected seconds", optarg);
		return o->grace = (unsigned)n, 0;
	case 's':
		if ((o->sig = cli_parse_signal(optarg)) < 0)
			return lb_err_set(err, 0, "invalid signal '%s'", optarg);
		return 0;
	case 'f':
		return o->force = true, 0;
	}
	return -1;
}

/* OPTIONS NAME...: *first is the index of the first name. */
static int parse_many(struct many_opts *o, const char *shortopts, int argc, char **argv, int *first,
		      struct lb_err **err)
{
	static const struct option longopts[] = {{"time", required_argument, NULL, 't'},
						 {"timeout", required_argument, NULL, 't'},
						 {"signal", required_argument, NULL, 's'},
						 {"force", no_argument, NULL, 'f'},
						 {0}};
	int c;
	optind = 0;
	opterr = 0;
	for (int before = 1; (c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1;
	     before = optind) {
		if (c == '?' || c == ':')
			return cli_opt_error(c, argv[before], err);
		if (take_many_opt(o, c, err) < 0)
			return -1;
	}
	if (optind >= argc)
		return lb_err_set(err, 0, "missing run name (see lbbox %s --help)", argv[0]);
	*first = optind;
	return 0;
}

static int do_one(struct lb_box *box, const char *verb, const struct many_opts *o, const char *name,
		  struct lb_err **err)
{
	if (!strcmp(verb, "stop"))
		return lb_box_run_stop(box, name, o->grace, err);
	if (!strcmp(verb, "kill"))
		return lb_box_run_kill(box, name, o->sig, err);
	return lb_box_run_remove(box, name, o->force, err);
}

/* stop, kill, rm: each name in turn, printed once done; the last failure is the exit code. */
static int many(struct lb_box *box, int argc, char **argv)
{
	struct many_opts o = {.grace = 10, .sig = SIGKILL};
	const char *shortopts = !strcmp(argv[0], "stop")   ? "+:t:"
				: !strcmp(argv[0], "kill") ? "+:s:"
							   : "+:f";
	int first = 0, code = 0;
	_cleanup_err_ struct lb_err *perr = NULL;
	if (parse_many(&o, shortopts, argc, argv, &first, &perr) < 0)
		return cli_box_error(perr);
	for (int i = first; i < argc; i++) {
		_cleanup_err_ struct lb_err *err = NULL;
		if (do_one(box, argv[0], &o, argv[i], &err) < 0) {
			code = cli_box_error(err);
			continue;
		}
		cli_print_escaped(argv[i], 0);
		putchar('\n');
		fflush(stdout);
	}
	return code;
}

static int logs(struct lb_box *box, int argc, char **argv)
{
	_cleanup_err_ struct lb_err *err = NULL;
	struct cli_opts p;
	struct lb_box_run r;
	bool follow;
	long tail;
	if (cli_logs_parse(&p, argc, argv, &follow, &tail, &err) < 0)
		return cli_box_error(err);
	if (!p.name || p.cmd != argc)
		return cli_error("usage: lbbox logs [-f] [--tail N] NAME (see lbbox logs --help)"),
		       LB_EXIT_SETUP;
	if (lb_box_run_get(box, p.name, &r, &err) < 0)
		return cli_box_error(err);
	lb_box_run_free(&r);
	return cli_logs_show(box, p.name, LB_BOX_RUN_PROC, follow, tail, -1);
}

struct exec_opts {
	bool interactive, tty;
	const char *workdir;
	char *env[257];
	size_t n_env;
};

static const struct option exec_longopts[] = {
    {"interactive", no_argument, NULL, 'i'}, {"tty", no_argument, NULL, 't'},
    {"env", required_argument, NULL, 'e'},   {"workdir", required_argument, NULL, 'w'},
    {"help", no_argument, NULL, 'h'},	     {0}};
static const struct cli_optdef exec_def = {"+:hite:w:", exec_longopts};

static int parse_exec(struct exec_opts *o, struct cli_opts *p, int argc, char **argv,
		      struct lb_err **err)
{
	int c;
	cli_opts_init(p, argc, argv, &exec_def);
	while ((c = cli_opts_next(p, err)) != -1) {
		if (c == 'i')
			o->interactive = true;
		else if (c == 't')
			o->tty = true;
		else if (c == 'w')
			o->workdir = optarg;
		else if (c == 'e' && o->n_env < 256 && strchr(optarg, '='))
			o->env[o->n_env++] = optarg;
		else if (c == 'e')
			return lb_err_set(err, 0, "invalid -e '%s': expected KEY=VALUE", optarg);
		else
			return -1;
	}
	if (!p->name || p->cmd >= argc)
		return lb_err_set(err, 0, "usage: lbbox exec [OPTIONS] NAME CMD [ARG...]");
	return 0;
}

static int exec_in(struct lb_box *box, int argc, char **argv)
{
	_cleanup_err_ struct lb_err *err = NULL;
	struct exec_opts o = {.n_env = 0};
	struct cli_opts p;
	struct lb_box_run r;
	int code = LB_EXIT_SETUP;
	if (parse_exec(&o, &p, argc, argv, &err) < 0 || lb_box_run_get(box, p.name, &r, &err) < 0)
		return cli_box_error(err);
	lb_box_run_free(&r);
	struct lb_box_run_exec x = {.argv = argv + p.cmd,
				    .env = o.env,
				    .cwd = o.workdir,
				    .fds = {o.interactive ? 0 : -1, 1, 2}};
	struct lb_tty tty;
	if (o.tty && lb_tty_open(&tty, o.interactive, &err) < 0)
		return cli_box_error(err);
	x.tty = o.tty ? &tty : NULL;
	fflush(stdout);
	int rc = lb_box_run_exec(box, p.name, &x, &code, &err);
	if (x.tty) {
		lb_tty_finish(&tty, rc == 0);
		lb_tty_close(&tty);
	}
	if (rc < 0)
		cli_box_error(err);
	return code;
}

static const struct run_verb {
	const char *name, *help;
	const struct cli_optdef *cmd_opts; /* a verb that runs a command: where its help ends */
} run_verbs[] = {{"logs", logs_help, NULL},
		 {"stop", stop_help, NULL},
		 {"kill", kill_help, NULL},
		 {"rm", rm_help, NULL},
		 {"exec", exec_help, &exec_def}};

int cli_run_verb(struct cli_globals *g, int argc, char **argv)
{
	const struct run_verb *v = NULL;
	for (size_t i = 0; i < sizeof(run_verbs) / sizeof(run_verbs[0]); i++)
		if (!strcmp(argv[0], run_verbs[i].name))
			v = &run_verbs[i];
	if (!v)
		return cli_error("unknown command '%s'", argv[0]), LB_EXIT_SETUP;
	if (cli_help_asked(argc, argv, v->cmd_opts))
		return fputs(v->help, stdout), 0;
	_cleanup_err_ struct lb_err *err = NULL;
	struct lb_box box;
	if (lb_box_open_env(&box, &g->paths, &err) < 0)
		return cli_box_error(err);
	int code = !strcmp(v->name, "logs")   ? logs(&box, argc, argv)
		   : !strcmp(v->name, "exec") ? exec_in(&box, argc, argv)
					      : many(&box, argc, argv);
	lb_box_fini(&box);
	return code;
}
