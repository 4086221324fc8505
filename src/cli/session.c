/* lbbox session create|exec|ls|inspect|rm|gc: LangBot Box sessions from the command line. */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "lbbox/box/box.h"
#include "lbbox/box/text.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/tty.h"
#include "lbbox/rpc/rpc.h"
#include "lbbox/base/util.h"

static const char session_usage[] =
    "usage: lbbox session create NAME [OPTIONS]      create (or reuse) a session\n"
    "       lbbox session exec [OPTIONS] NAME [OPTIONS] [--] CMD [ARG...]\n"
    "       lbbox session ls [--json] | inspect NAME | rm NAME... | gc [--ttl SECONDS]\n"
    "lbbox session VERB --help: that verb's options\n";

/* ---- exec --------------------------------------------------------------------------------- */

struct exec_opts {
	struct lb_box_exec_req req;
	struct lb_box_exec_io io;
	char *env[257];
	size_t n_env;
	int64_t output_limit;
	bool json, langbot, interactive, tty, timeout_set;
	struct lb_tty term; /* -t */
	const char *profile;
	char *cmd;
};

/* §5.3 for an exec: the profile's timeout when none was given, clamped to its maximum. */
static int profile_timeout(struct exec_opts *o, struct lb_err **err)
{
	const struct lb_box_profile *p = lb_box_profile_find(o->profile, err);
	if (!p)
		return -1;
	o->req.timeout_sec = lb_box_profile_timeout(p, o->timeout_set, o->req.timeout_sec);
	return 0;
}

static const struct option exec_longopts[] = {{"workdir", required_argument, NULL, 'w'},
					      {"env", required_argument, NULL, 'e'},
					      {"timeout", required_argument, NULL, 'T'},
					      {"output-limit", required_argument, NULL, 'o'},
					      {"tty", no_argument, NULL, 't'},
					      {"json", no_argument, NULL, 'j'},
					      {"profile", required_argument, NULL, 'p'},
					      {"langbot", no_argument, NULL, 'l'},
					      {"interactive", no_argument, NULL, 'i'},
					      {"help", no_argument, NULL, 'h'},
					      {0}};
static const struct cli_optdef exec_opts = {"+:hitw:e:", exec_longopts};

/* --timeout, --output-limit: a whole number >= 1. */
static int parse_positive(const char *opt, const char *v, int64_t *out, struct lb_err **err)
{
	uint64_t n;
	if (lb_parse_u64(v, &n, NULL) < 0 || n == 0 || n > INT64_MAX)
		return lb_err_set(err, 0, "invalid %s '%s': expected a whole number >= 1", opt, v);
	*out = (int64_t)n;
	return 0;
}

static int take_exec_opt(struct exec_opts *o, int c, struct lb_err **err)
{
	switch (c) {
	case 'w':
		return o->req.workdir = optarg, 0;
	case 'e':
		if (o->n_env >= 256)
			return lb_err_set(err, 0, "too many -e (at most 256)");
		return o->env[o->n_env++] = optarg, 0;
	case 't':
		return o->tty = true, 0;
	case 'T':
		o->timeout_set = true;
		return parse_positive("--timeout", optarg, &o->req.timeout_sec, err);
	case 'o':
		return parse_positive("--output-limit", optarg, &o->output_limit, err);
	case 'j':
		return o->json = true, 0;
	case 'l':
		return o->langbot = true, 0;
	case 'i':
		return o->interactive = true, 0;
	case 'p':
		return o->profile = optarg, 0;
	case 'h': /* the dispatcher answers help before any parsing; never here */
		return lb_err_set(err, 0, "see lbbox session exec --help");
	}
	return -1; /* '?': cli_opts_next has said why */
}

/* A terminal's exec streams its bytes as they come, as podman exec does; LangBot's (--langbot,
 * --json) collects them into its result. Either takes stdin with -i; else it is /dev/null.
 * With -t a pty of the sandbox's carries them instead (lb_tty, opened by the caller). */
static int set_io(struct exec_opts *o, struct lb_err **err)
{
	bool stream = !o->json && !o->langbot;
	if (o->tty && (!stream || o->output_limit))
		return lb_err_set(err, 0,
				  "-t does not go with --json, --langbot or --output-limit: "
				  "its output is a terminal's, passed as it comes");
	o->io = (struct lb_box_exec_io){.in_fd = o->interactive ? 0 : -1,
					.out_fd = stream ? 1 : -1,
					.err_fd = stream ? 2 : -1,
					.out_limit = stream ? (uint64_t)o->output_limit : 0};
	if (stream || o->interactive)
		o->req.io = &o->io;
	return 0;
}

/* exec [OPTIONS] NAME [OPTIONS] [--] CMD...: options into o, the session's name into *id. */
static int parse_exec(struct exec_opts *o, int argc, char **argv, const char **id,
		      struct lb_err **err)
{
	struct cli_opts p;
	int c;
	cli_opts_init(&p, argc, argv, &exec_opts);
	o->req.timeout_sec = 30;
	while ((c = cli_opts_next(&p, err)) != -1)
		if (take_exec_opt(o, c, err) < 0)
			return -1;
	if (!p.name)
		return lb_err_set(err, 0, "missing session name (see lbbox session exec --help)");
	*id = p.name;
	if (p.cmd >= argc)
		return lb_err_box(err, LB_BOX_EVALIDATION, "cmd must not be empty");
	if (!o->profile)
		o->profile = getenv("LBBOX_BOX_PROFILE");
	if (o->profile && profile_timeout(o, err) < 0)
		return -1;
	o->cmd = lb_box_shell_join(argv + p.cmd);
	o->req.cmd = o->cmd;
	o->req.env = o->env;
	if (!o->cmd)
		return lb_err_set(err, ENOMEM, "command");
	return set_io(o, err);
}

static void print_stream(FILE *f, const char *text, int64_t limit)
{
	_cleanup_free_ char *cut = NULL;
	bool truncated;
	if (limit > 0 && lb_box_truncate(text, (size_t)limit, &cut, &truncated, NULL) == 0)
		text = cut;
	if (text && *text)
		fprintf(f, "%s\n", text);
	fflush(f);
}

/* §5.6 on the session's workspace (host_path, or its own directory); none needed where the quota
 * is hard (its own workspace is then a tmpfs of that size in the sandbox). */
static int quota_check(struct lb_box *box, const struct lb_box_session *s, const char *phase,
		       struct lb_err **err)
{
	char ws[LB_PATH_BUF];
	if (s->spec.workspace_quota_mb <= 0 || lb_box_workspace_quota_hard(&s->spec))
		return 0;
	if (s->spec.host_path)
		snprintf(ws, sizeof(ws), "%s", s->spec.host_path);
	else
		lb_box_session_workspace(box, s->session_id, ws, sizeof(ws));
	return lb_box_quota_check(ws, s->spec.workspace_quota_mb, 100000, phase, s->session_id,
				  err);
}

static void report_exec(const struct exec_opts *o, const char *id,
			const struct lb_box_exec_result *res)
{
	if (o->json) {
		cli_print_json(lb_rpc_exec_result_json(id, res));
		return;
	}
	if (o->langbot) { /* a stream's output has gone out already */
		print_stream(stdout, res->out, o->output_limit);
		print_stream(stderr, res->err, o->output_limit);
	}
	if (res->timed_out)
		cli_error("command timed out after %lld seconds; session %s was destroyed",
			  (long long)o->req.timeout_sec, id);
}

static int session_exec(struct cli_globals *g, struct lb_box *box, int argc, char **argv)
{
	_cleanup_err_ struct lb_err *err = NULL;
	struct exec_opts o = {.n_env = 0};
	struct lb_box_exec_result res;
	struct lb_box_session s = {0};
	const char *id = NULL;
	int r = parse_exec(&o, argc, argv, &id, &err);
	if (r == 0)
		r = lb_box_session_get(box, id, &s, &err);
	if (r == 0)
		r = quota_check(box, &s, "before execution", &err);
	if (r == 0 && o.tty && (r = lb_tty_open(&o.term, o.interactive, &err)) == 0)
		o.io.tty = &o.term;
	if (r == 0)
		r = lb_box_exec(box, id, &o.req, &res, &err);
	if (o.io.tty) {
		lb_tty_finish(&o.term, r == 0 && !res.timed_out);
		lb_tty_close(&o.term);
	}
	if (r == 0 && !res.timed_out && quota_check(box, &s, "after execution", &err) < 0) {
		lb_box_session_delete(box, id, NULL); /* as LangBot does after a violation */
		lb_box_exec_result_free(&res);
		r = -1;
	}
	free(o.cmd);
	lb_box_session_free(&s);
	if (r < 0)
		return cli_box_error(err);
	int code = res.timed_out ? 124 : res.exit_code;
	report_exec(&o, id, &res);
	lb_box_exec_result_free(&res);
	return code;
}

/* ---- ls, inspect, rm, gc ------------------------------------------------------------------ */

/* One row of `session ls`: the id and the image came from a request, escaped. */
static void print_session(const struct lb_box_session *s)
{
	cli_print_escaped(s->session_id, 32);
	printf(" %-14s %-8s %-8s %-10s ", s->sandbox, lb_box_net_name(s->spec.network),
	       s->alive ? "running" : "dead", s->spec.persistent ? "yes" : "no");
	cli_print_escaped(s->spec.image, 0);
	putchar('\n');
}

static int session_ls(struct cli_globals *g, struct lb_box *box, int argc, char **argv)
{
	_cleanup_err_ struct lb_err *err = NULL;
	struct lb_box_session *v = NULL;
	size_t n = 0;
	bool json = argc == 2 && !strcmp(argv[1], "--json");
	if (argc > 2 || (argc == 2 && !json)) {
		cli_error("unknown option '%s' (see lbbox session ls --help)", argv[argc - 1]);
		return LB_EXIT_SETUP;
	}
	if (lb_box_session_list(box, &v, &n, &err) < 0)
		return cli_box_error(err);
	if (!json)
		printf("%-32s %-14s %-8s %-8s %-10s %s\n", "SESSION", "SANDBOX", "NETWORK",
		       "STATUS", "PERSISTENT", "IMAGE");
	for (size_t i = 0; i < n; i++) {
		if (json)
			cli_print_json(lb_rpc_session_json(&v[i]));
		else
			print_session(&v[i]);
	}
	lb_box_session_list_free(v, n);
	return 0;
}

static int session_inspect(struct cli_globals *g, struct lb_box *box, int argc, char **argv)
{
	_cleanup_err_ struct lb_err *err = NULL;
	if (argc < 2)
		return cli_error("usage: lbbox session inspect NAME"), LB_EXIT_SETUP;
	json_t *j = lb_rpc_session_details_json(box, argv[1], &err);
	if (!j)
		return cli_box_error(err);
	cli_print_json(j);
	return 0;
}

static int session_rm(struct cli_globals *g, struct lb_box *box, int argc, char **argv)
{
	int code = 0;
	if (argc < 2)
		return cli_error("usage: lbbox session rm NAME..."), LB_EXIT_SETUP;
	for (int i = 1; i < argc; i++) {
		_cleanup_err_ struct lb_err *err = NULL;
		if (lb_box_session_delete(box, argv[i], &err) < 0) {
			code = cli_box_error(err);
			continue;
		}
		cli_print_escaped(argv[i], 0);
		putchar('\n');
	}
	return code;
}

static int session_gc(struct cli_globals *g, struct lb_box *box, int argc, char **argv)
{
	_cleanup_err_ struct lb_err *err = NULL;
	uint64_t ttl;
	size_t removed = 0;
	if (argc == 3 && !strcmp(argv[1], "--ttl") && lb_parse_u64(argv[2], &ttl, NULL) == 0 &&
	    ttl > 0)
		box->limits.session_ttl_sec = (int64_t)ttl;
	else if (argc != 1)
		return cli_error("usage: lbbox session gc [--ttl SECONDS] (SECONDS >= 1)"),
		       LB_EXIT_SETUP;
	if (lb_box_session_reap(box, 0, &removed, &err) < 0)
		return cli_box_error(err);
	lb_sandbox_gc(&box->paths, NULL); /* every sandbox (a start examines only a few) */
	printf("%zu\n", removed);
	return 0;
}

static const struct session_verb {
	const char *name;
	int (*fn)(struct cli_globals *, struct lb_box *, int, char **);
	const struct cli_optdef *cmd_opts; /* a verb that runs a command: where its help ends */
} session_verbs[] = {{"create", cli_session_create, NULL},
		     {"exec", session_exec, &exec_opts},
		     {"ls", session_ls, NULL},
		     {"inspect", session_inspect, NULL},
		     {"rm", session_rm, NULL},
		     {"gc", session_gc, NULL}};

int cli_session(struct cli_globals *g, int argc, char **argv)
{
	if (argc < 2 || cli_is_help(argv[1])) {
		fputs(session_usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? LB_EXIT_SETUP : 0;
	}
	for (size_t i = 0; i < sizeof(session_verbs) / sizeof(session_verbs[0]); i++) {
		const struct session_verb *v = &session_verbs[i];
		if (strcmp(argv[1], v->name) != 0)
			continue;
		/* help and nothing else: before the Box store is opened */
		if (cli_help_asked(argc - 1, argv + 1, v->cmd_opts))
			return cli_print_help("session", v->name);
		_cleanup_err_ struct lb_err *err = NULL;
		struct lb_box box;
		if (lb_box_open_env(&box, &g->paths, &err) < 0)
			return cli_box_error(err);
		int code = v->fn(g, &box, argc - 1, argv + 1);
		lb_box_fini(&box);
		return code;
	}
	cli_error("unknown session command '%s' (see lbbox session --help)", argv[1]);
	return LB_EXIT_SETUP;
}
