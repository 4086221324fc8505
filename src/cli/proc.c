/* lbbox proc start|attach|ls|inspect|stop: managed processes (MCP servers) in a session. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli.h"
#include "lbbox/box/box.h"
#include "lbbox/box/spec.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/rpc/rpc.h"
#include "lbbox/base/util.h"

static const char proc_usage[] =
    "usage: lbbox proc start SESSION [--id ID] [-w CWD] [-e K=V] [--] CMD [ARG...]\n"
    "       lbbox proc attach SESSION ID   relay this terminal's stdin/stdout (stdin EOF detaches)\n"
    "       lbbox proc ls SESSION | inspect SESSION ID | stop SESSION ID\n";

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

static int take_command(struct lb_box_proc_spec *spec, int argc, char **argv, struct lb_err **err)
{
	if (optind >= argc)
		return 0; /* "command: Field required" from the validators */
	char **args = calloc((size_t)(argc - optind), sizeof(char *));
	if (!args)
		return lb_err_set(err, ENOMEM, "args");
	if (cli_set_string(&spec->command, argv[optind], err) < 0) {
		free(args);
		return -1;
	}
	lb_box_strv_free(spec->args);
	spec->args = args;
	for (int i = optind + 1; i < argc; i++)
		if (!(args[i - optind - 1] = strdup(argv[i])))
			return lb_err_set(err, ENOMEM, "args");
	return 0;
}

/* Flags straight into a BoxManagedProcessSpec, then LangBot's validators. */
static int parse_start(struct lb_box_proc_spec *spec, int argc, char **argv, struct lb_err **err)
{
	static const struct option opts[] = {{"id", required_argument, NULL, 'i'},
					     {"workdir", required_argument, NULL, 'w'},
					     {"env", required_argument, NULL, 'e'},
					     {0}};
	int c, r = 0;
	optind = 1;
	opterr = 0;
	lb_box_proc_spec_init(spec);
	if (!spec->process_id || !spec->args || !spec->env || !spec->cwd)
		return lb_err_set(err, ENOMEM, "managed process spec");
	while (r == 0 && (c = getopt_long(argc, argv, "+w:e:", opts, NULL)) != -1) {
		if (c == 'i')
			r = cli_set_string(&spec->process_id, optarg, err);
		else if (c == 'w')
			r = cli_set_string(&spec->cwd, optarg, err);
		else if (c == 'e')
			r = set_env(&spec->env, optarg, err);
		else
			r = lb_err_set(err, 0, "invalid option '%s' (see lbbox proc --help)",
				       argv[optind - 1]);
	}
	if (r < 0 || take_command(spec, argc, argv, err) < 0)
		return -1;
	return lb_box_proc_spec_validate(spec, err);
}

static char **g_argv; /* lbbox's own argv (cli_proc), to re-execute it sealed */

static int proc_start(struct lb_box *box, int argc, char **argv)
{
	_cleanup_err_ struct lb_err *err = NULL;
	struct lb_box_proc_spec spec = {0}; /* filled by parse_start */
	struct lb_box_proc_info info;
	if (argc < 2)
		return fputs(proc_usage, stderr), LB_EXIT_SETUP;
	int r = parse_start(&spec, argc - 1, argv + 1, &err);
	struct lb_box_session s;
	if (r == 0 && (r = lb_box_session_get(box, argv[1], &s, &err)) == 0) {
		/* the keeper forks from us: sealed when the root is writable (see sealed.c) */
		if (!s.spec.read_only_rootfs)
			r = lb_reexec_sealed(g_argv, &err);
		lb_box_session_free(&s);
	}
	if (r == 0)
		r = lb_box_proc_start(box, argv[1], &spec, &info, &err);
	lb_box_proc_spec_free(&spec);
	if (r < 0)
		return cli_box_error(err);
	cli_print_json(lb_rpc_proc_json(&info));
	lb_box_proc_info_free(&info);
	return 0;
}

/* stdin -> process, process stdout -> stdout, until the process exits or stdin ends. */
static int relay(int sock)
{
	char buf[65536];
	for (;;) {
		struct pollfd p[2] = {{.fd = 0, .events = POLLIN}, {.fd = sock, .events = POLLIN}};
		if (poll(p, 2, -1) < 0)
			return errno == EINTR ? 0 : -1;
		if (p[1].revents) {
			ssize_t n = read(sock, buf, sizeof(buf));
			if (n <= 0)
				return 0; /* the process exited */
			if (lb_write_all(1, buf, (size_t)n) < 0)
				return -1;
		}
		if (p[0].revents) {
			ssize_t n = read(0, buf, sizeof(buf));
			if (n <= 0)
				return 0; /* detach; the process keeps running */
			if (lb_write_all(sock, buf, (size_t)n) < 0)
				return 0;
		}
	}
}

static int proc_attach(struct lb_box *box, int argc, char **argv)
{
	_cleanup_err_ struct lb_err *err = NULL;
	_cleanup_close_ int sock = -1;
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

static int proc_ls(struct lb_box *box, int argc, char **argv)
{
	_cleanup_err_ struct lb_err *err = NULL;
	struct lb_box_proc_info *v = NULL;
	size_t n = 0;
	if (argc != 2)
		return fputs(proc_usage, stderr), LB_EXIT_SETUP;
	if (lb_box_proc_list(box, argv[1], &v, &n, &err) < 0)
		return cli_box_error(err);
	printf("%-24s %-8s %-9s %-8s %s\n", "PROCESS", "STATUS", "EXIT CODE", "ATTACHED",
	       "COMMAND");
	for (size_t i = 0; i < n; i++) {
		char code[16] = "-";
		if (v[i].has_exit_code)
			snprintf(code, sizeof(code), "%d", v[i].exit_code);
		cli_print_escaped(v[i].process_id, 24); /* from the request, as is the command */
		printf(" %-8s %-9s %-8s ", v[i].running ? "running" : "exited", code,
		       v[i].attached ? "yes" : "no");
		cli_print_escaped(v[i].command, 0);
		putchar('\n');
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

int cli_proc(struct cli_globals *g, int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(struct lb_box *, int, char **);
	} verbs[] = {{"start", proc_start},
		     {"attach", proc_attach},
		     {"ls", proc_ls},
		     {"inspect", proc_inspect},
		     {"stop", proc_stop}};
	struct lb_box box;
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fputs(proc_usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? LB_EXIT_SETUP : 0;
	}
	_cleanup_err_ struct lb_err *err = NULL;
	g_argv = g->argv;
	if (lb_box_open_env(&box, &g->paths, &err) < 0)
		return cli_box_error(err);
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
		if (strcmp(argv[1], verbs[i].name) != 0)
			continue;
		int code = verbs[i].fn(&box, argc - 1, argv + 1);
		lb_box_fini(&box);
		return code;
	}
	lb_box_fini(&box);
	cli_error("unknown proc command '%s' (see lbbox proc --help)", argv[1]);
	return LB_EXIT_SETUP;
}
