/* lbbox proc start|attach|ls|inspect|stop|rm: managed processes (MCP servers) in a session. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli.h"
#include "runs_cli.h"
#include "lbbox/box/box.h"
#include "lbbox/box/spec.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/rpc/rpc.h"
#include "lbbox/base/util.h"

static const char proc_usage[] =
    "usage: lbbox proc start [OPTIONS] SESSION [OPTIONS] [--] CMD [ARG...]\n"
    "       lbbox proc attach [-t] SESSION ID   relay this terminal's stdin/stdout (stdin EOF\n"
    "                                      detaches; -t: the process's pty, ^P^Q detaches)\n"
    "       lbbox proc ls [--json] SESSION | inspect SESSION ID | stop SESSION ID\n"
    "       lbbox proc rm [-f] SESSION ID\n"
    "lbbox proc VERB --help: that verb's options\n";

/* -e KEY=VALUE into a NULL-terminated list; a later KEY replaces an earlier one. */
static int set_env(char ***env, const char *kv, struct lb_err **err)
{
	size_t klen = strcspn(kv, "="), n = 0;
	if (!kv[klen])
		return lb_err_set(err, 0, "invalid -e '%s': expected KEY=VALUE", kv);
	for (; (*env)[n]; n++)
		if (!strncmp((*env)[n], kv, klen) && (*env)[n][klen] == '=')
			return cli_set_string(&(*env)[n], kv, err);
	char **more = realloc(*env, (n + 2) * sizeof(char *));
	if (!more)
		return lb_err_set(err, ENOMEM, "environment");
	*env = more;
	more[n + 1] = NULL;
	return (more[n] = strdup(kv)) ? 0 : lb_err_set(err, ENOMEM, "environment");
}

static int take_command(struct lb_box_proc_spec *spec, int argc, char **argv, int at,
			struct lb_err **err)
{
	if (at >= argc)
		return 0; /* "command: Field required" from the validators */
	char **args = calloc((size_t)(argc - at), sizeof(char *));
	if (!args)
		return lb_err_set(err, ENOMEM, "args");
	if (cli_set_string(&spec->command, argv[at], err) < 0) {
		free(args);
		return -1;
	}
	lb_box_strv_free(spec->args);
	spec->args = args;
	for (int i = at + 1; i < argc; i++)
		if (!(args[i - at - 1] = strdup(argv[i])))
			return lb_err_set(err, ENOMEM, "args");
	return 0;
}

static const struct option start_longopts[] = {{"id", required_argument, NULL, 'i'},
					       {"workdir", required_argument, NULL, 'w'},
					       {"env", required_argument, NULL, 'e'},
					       {"memory", required_argument, NULL, 'm'},
					       {"tty", no_argument, NULL, 't'},
					       {"help", no_argument, NULL, 'h'},
					       {0}};
static const struct cli_optdef start_opts = {"+:htw:e:m:", start_longopts};

/* --memory SIZE, as session create takes it ("64m"): whole MiB, the RPC's memory_mb (checked
 * against the session's at start). */
static int parse_memory(const char *v, int64_t *out, struct lb_err **err)
{
	uint64_t bytes;
	if (lb_parse_size(v, &bytes, err) < 0)
		return lb_err_wrap(err, "invalid --memory");
	if (bytes >> 20 == 0)
		return lb_err_set(err, 0, "invalid --memory '%s': at least 1m", v);
	*out = (int64_t)(bytes >> 20);
	return 0;
}

static int take_start_opt(struct lb_box_proc_spec *spec, int c, struct lb_err **err)
{
	switch (c) {
	case 'i':
		if (cli_check_name("process", optarg, err) < 0)
			return -1;
		return cli_set_string(&spec->process_id, optarg, err);
	case 'w':
		return cli_set_string(&spec->cwd, optarg, err);
	case 'e':
		return set_env(&spec->env, optarg, err);
	case 'm':
		return parse_memory(optarg, &spec->memory_mb, err);
	case 't':
		return spec->tty = true, 0;
	case 'h': /* the dispatcher answers help before any parsing; never here */
		return lb_err_set(err, 0, "see lbbox proc start --help");
	}
	return -1; /* '?': cli_opts_next has said why */
}

/* start [OPTIONS] SESSION [OPTIONS] [--] CMD...: flags straight into a BoxManagedProcessSpec,
 * then LangBot's validators; the session's name into *session. */
static int parse_start(struct lb_box_proc_spec *spec, int argc, char **argv, const char **session,
		       struct lb_err **err)
{
	struct cli_opts p;
	int c;
	cli_opts_init(&p, argc, argv, &start_opts);
	lb_box_proc_spec_init(spec);
	if (!spec->process_id || !spec->args || !spec->env || !spec->cwd)
		return lb_err_set(err, ENOMEM, "managed process spec");
	while ((c = cli_opts_next(&p, err)) != -1)
		if (take_start_opt(spec, c, err) < 0)
			return -1;
	if (!p.name)
		return lb_err_set(err, 0, "missing session name (see lbbox proc start --help)");
	*session = p.name;
	if (take_command(spec, argc, argv, p.cmd, err) < 0)
		return -1;
	return lb_box_proc_spec_validate(spec, err);
}

static int proc_start(struct lb_box *box, int argc, char **argv)
{
	_cleanup_err_ struct lb_err *err = NULL;
	struct lb_box_proc_spec spec = {0}; /* filled by parse_start */
	struct lb_box_proc_info info;
	const char *session = NULL;
	int r = parse_start(&spec, argc, argv, &session, &err);
	/* (the keeper forks from us: main.c has re-executed lbbox sealed) */
	if (r == 0)
		r = lb_box_proc_start(box, session, &spec, &info, &err);
	lb_box_proc_spec_free(&spec);
	if (r < 0)
		return cli_box_error(err);
	cli_print_json(lb_rpc_proc_json(&info));
	lb_box_proc_info_free(&info);
	return 0;
}

/*
 * After stdin's end, how long the process may stay quiet before attach detaches: the answer to
 * what was just sent is still on its way, and no EOF will say it is complete (the process runs
 * on, its stdin is not closed for the next client).
 */
#define LINGER_MS 1000

/* The process's stdout -> ours: 1 = more may come, 0 = it exited, -1 = our stdout failed. */
static int relay_out(int sock)
{
	char buf[65536];
	ssize_t n = read(sock, buf, sizeof(buf));
	if (n < 0 && errno == EINTR)
		return 1;
	if (n <= 0)
		return 0;
	return lb_write_all(1, buf, (size_t)n) < 0 ? -1 : 1;
}

/* Our stdin -> the process: 1 = more may come, 0 = stdin ended, -1 = the process is gone. */
static int relay_in(int sock)
{
	char buf[65536];
	ssize_t n = read(0, buf, sizeof(buf));
	if (n < 0 && errno == EINTR)
		return 1;
	if (n <= 0)
		return 0;
	return lb_write_all(sock, buf, (size_t)n) < 0 ? -1 : 1;
}

/* stdin -> process, process stdout -> stdout, until the process exits, or stdin has ended and
 * the process has said nothing for LINGER_MS. */
static int relay(int sock)
{
	bool in_open = true;
	for (;;) {
		struct pollfd p[2] = {{.fd = in_open ? 0 : -1, .events = POLLIN},
				      {.fd = sock, .events = POLLIN}};
		int n = poll(p, 2, in_open ? -1 : LINGER_MS);
		if (n < 0 && errno != EINTR)
			return -1;
		if (n == 0)
			return 0; /* detach; the process keeps running */
		int r = n > 0 && p[1].revents ? relay_out(sock) : 1;
		if (r <= 0)
			return r;
		if (n > 0 && p[0].revents && (r = relay_in(sock)) <= 0) {
			if (r < 0)
				return 0; /* it exited meanwhile */
			in_open = false;
		}
	}
}

static int proc_attach(struct lb_box *box, int argc, char **argv)
{
	_cleanup_err_ struct lb_err *err = NULL;
	_cleanup_close_ int sock = -1;
	if (argc == 4 && (!strcmp(argv[1], "-t") || !strcmp(argv[1], "--tty")))
		return cli_proc_attach_tty(box, argv[2], argv[3]);
	if (argc != 3)
		return fputs(proc_usage, stderr), LB_EXIT_SETUP;
	if (lb_box_proc_attach(box, argv[1], argv[2], false, &sock, &err) < 0)
		return cli_box_error(err);
	return relay(sock) < 0 ? 1 : 0;
}

static int proc_inspect(struct lb_box *box, int argc, char **argv)
{
	_cleanup_err_ struct lb_err *err = NULL;
	struct lb_box_proc_info info;
	if (argc != 3)
		return fputs(proc_usage, stderr), LB_EXIT_SETUP;
	if (lb_box_proc_get(box, argv[1], argv[2], &info, &err) < 0)
		return cli_box_error(err);
	cli_print_json(lb_rpc_proc_json(&info));
	lb_box_proc_info_free(&info);
	return 0;
}

static void print_proc(const struct lb_box_proc_info *p)
{
	char code[16] = "-";
	if (p->has_exit_code)
		snprintf(code, sizeof(code), "%d", p->exit_code);
	cli_print_escaped(p->process_id, 24); /* from the request, as is the command */
	printf(" %-8s %-9s %-8s ", p->running ? "running" : "exited", code,
	       p->attached ? "yes" : "no");
	cli_print_escaped(p->command, 0);
	putchar('\n');
}

/* ls [--json] SESSION, the flag on either side. */
static const char *ls_session(int argc, char **argv, bool *json)
{
	const char *session = NULL;
	*json = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json") && !*json)
			*json = true;
		else if (!session && argv[i][0] != '-')
			session = argv[i];
		else
			return cli_error("unknown argument '%s' (see lbbox proc ls --help)",
					 argv[i]),
			       NULL;
	}
	if (!session)
		cli_error("missing session name (see lbbox proc ls --help)");
	return session;
}

static int proc_ls(struct lb_box *box, int argc, char **argv)
{
	_cleanup_err_ struct lb_err *err = NULL;
	struct lb_box_proc_info *v = NULL;
	size_t n = 0;
	bool json;
	const char *session = ls_session(argc, argv, &json);
	if (!session)
		return LB_EXIT_SETUP;
	if (lb_box_proc_list(box, session, &v, &n, &err) < 0)
		return cli_box_error(err);
	if (!json)
		printf("%-24s %-8s %-9s %-8s %s\n", "PROCESS", "STATUS", "EXIT CODE", "ATTACHED",
		       "COMMAND");
	for (size_t i = 0; i < n; i++) {
		if (json)
			cli_print_json(lb_rpc_proc_json(&v[i]));
		else
			print_proc(&v[i]);
	}
	lb_box_proc_list_free(v, n);
	return 0;
}

static int proc_stop(struct lb_box *box, int argc, char **argv)
{
	_cleanup_err_ struct lb_err *err = NULL;
	if (argc != 3)
		return fputs(proc_usage, stderr), LB_EXIT_SETUP;
	if (lb_box_proc_stop(box, argv[1], argv[2], &err) < 0)
		return cli_box_error(err);
	cli_print_escaped(argv[2], 0);
	putchar('\n');
	return 0;
}

/* rm [-f] SESSION ID: -f stops a running process first, as podman rm -f. */
static int proc_rm(struct lb_box *box, int argc, char **argv)
{
	_cleanup_err_ struct lb_err *err = NULL;
	bool force = argc == 4 && (!strcmp(argv[1], "-f") || !strcmp(argv[1], "--force"));
	if (argc != 3 + force)
		return fputs(proc_usage, stderr), LB_EXIT_SETUP;
	if (lb_box_proc_remove(box, argv[1 + force], argv[2 + force], force, &err) < 0)
		return cli_box_error(err);
	cli_print_escaped(argv[2 + force], 0);
	putchar('\n');
	return 0;
}

static const struct proc_verb {
	const char *name;
	int (*fn)(struct lb_box *, int, char **);
	const struct cli_optdef *cmd_opts; /* a verb that runs a command: where its help ends */
} proc_verbs[] = {{"start", proc_start, &start_opts},
		  {"attach", proc_attach, NULL},
		  {"ls", proc_ls, NULL},
		  {"rm", proc_rm, NULL},
		  {"inspect", proc_inspect, NULL},
		  {"stop", proc_stop, NULL},
		  {"logs", cli_proc_logs, NULL}};

int cli_proc(struct cli_globals *g, int argc, char **argv)
{
	if (argc < 2 || cli_is_help(argv[1])) {
		fputs(proc_usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? LB_EXIT_SETUP : 0;
	}
	for (size_t i = 0; i < sizeof(proc_verbs) / sizeof(proc_verbs[0]); i++) {
		const struct proc_verb *v = &proc_verbs[i];
		if (strcmp(argv[1], v->name) != 0)
			continue;
		/* help and nothing else: before the Box store is opened */
		if (cli_help_asked(argc - 1, argv + 1, v->cmd_opts))
			return cli_print_help("proc", v->name);
		_cleanup_err_ struct lb_err *err = NULL;
		struct lb_box box;
		if (lb_box_open_env(&box, &g->paths, &err) < 0)
			return cli_box_error(err);
		int code = v->fn(&box, argc - 1, argv + 1);
		lb_box_fini(&box);
		return code;
	}
	cli_error("unknown proc command '%s' (see lbbox proc --help)", argv[1]);
	return LB_EXIT_SETUP;
}
