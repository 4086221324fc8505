/* lbbox run: options -> spec -> engine -> exit status (or one JSON result object). */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/json_util.h"
#include "lbbox/base/tty.h"
#include "lbbox/base/util.h"
#include "lbbox/sandbox/net.h"
#include "run_internal.h"

/* The -e entries become the spec's environment (the image's and the defaults come after). */
static int finish_env(struct run_opts *o, struct lb_err **err)
{
	char **env = calloc(o->n_env + 1, sizeof(char *));
	if (!env)
		return lb_err_set(err, ENOMEM, "environment");
	for (size_t i = 0; i < o->n_env; i++) {
		env[i] = o->env[i];
		o->env[i] = NULL;
	}
	o->spec.env = env;
	return 0;
}

/* Network options that only make sense with "on", and the network chosen by the environment. */
static int finish_network(struct run_opts *o, struct lb_err **err)
{
	struct lb_net_opts *n = &o->spec.net_opts;
	if (o->spec.net != LB_NET_ON) {
		if (n->n_allow || n->n_dns || n->n_publish)
			return lb_err_set(err, 0, "--allow-host, --dns and -p need --network on");
		return 0;
	}
	return lb_net_opts_env(n, err);
}

static json_t *result_json(const struct lb_result *res)
{
	return json_pack("{s:s, s:i, s:i, s:b, s:b, s:I, s:I, s:I}", "id", res->id, "exit_code",
			 res->exit_code, "signal", res->signal, "timed_out", res->timed_out,
			 "oom_killed", res->oom_killed, "duration_ms", (json_int_t)res->duration_ms,
			 "memory_peak_bytes", (json_int_t)res->memory_peak, "cpu_usec",
			 (json_int_t)res->cpu_usec);
}

/* --json-file: written whole then renamed, so a reader never sees half an object. */
static int write_json_file(const char *path, json_t *j)
{
	_cleanup_err_ struct lb_err *err = NULL;
	_cleanup_free_ char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	if (!text || lb_write_file_atomic(path, text, strlen(text), 0644, &err) < 0) {
		cli_error("cannot write --json-file %s: %s", path,
			  err ? err->msg : "out of memory");
		return -1;
	}
	return 0;
}

/* Before anything runs: the result can be written where --json-file says (a file made in its
 * directory), and an older result there goes, so the file is absent unless this run's result
 * is in it. Only once the options are valid: a refused command leaves the file alone. */
static int claim_json_file(const char *path, struct lb_err **err)
{
	char tmp[LB_PATH_BUF];
	const char *slash = strrchr(path, '/');
	int dlen = slash ? (int)(slash - path) : 1;
	snprintf(tmp, sizeof(tmp), "%.*s/.lbbox-json-XXXXXX", dlen, slash ? path : ".");
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return lb_err_set(err, errno, "cannot write --json-file %s", path);
	close(fd);
	unlink(tmp);
	if (unlink(path) < 0 && errno != ENOENT)
		return lb_err_set(err, errno, "cannot write --json-file %s", path);
	return 0;
}

static int report(const struct run_opts *o, const struct lb_result *res)
{
	int code = res->timed_out ? LB_EXIT_TIMEOUT : res->exit_code;
	if (o->json_file) {
		_cleanup_json_ json_t *j = result_json(res);
		if (write_json_file(o->json_file, j) < 0)
			return LB_EXIT_SETUP;
	}
	if (o->json) {
		cli_print_json(result_json(res));
		return code;
	}
	if (res->timed_out)
		cli_error("command timed out after %.3gs; every process of the sandbox was killed",
			  (double)o->spec.timeout_ms / 1000.0);
	else if (res->oom_killed)
		cli_error("command was killed by the OOM killer (memory limit %llu MiB reached)",
			  (unsigned long long)(o->spec.limits.memory_bytes >> 20));
	return code;
}

static void run_opts_free(struct run_opts *o)
{
	for (size_t i = 0; i < o->n_env; i++)
		free(o->env[i]);
	lb_strvfreep(&o->img.entrypoint);
	lb_spec_free(&o->spec);
}

/* The first use of an image unpacks its layers (seconds for a large one): on a terminal, say so
 * before the wait. */
static void say_first_unpack(struct cli_globals *g, const struct run_opts *o)
{
	bool unpacked = true;
	if (!o->img.image || o->spec.rootfs || o->json || !isatty(STDERR_FILENO))
		return;
	if (lb_spec_image_unpacked(&g->paths, o->img.image, &unpacked, NULL) == 0 && !unpacked)
		cli_error("unpacking %s (its first use)...", o->img.image);
}

/* argv -> o->spec: options, profile, environment. */
static int prepare_opts(struct run_opts *o, int argc, char **argv, struct lb_err **err)
{
	lb_spec_init(&o->spec);
	if (run_parse_args(o, argc, argv, err) < 0 ||
	    ((o->detach || o->name) && run_named_check(o, err) < 0) ||
	    (o->profile && cli_run_profile(o->profile, &o->spec, o->network_set, err) < 0) ||
	    finish_env(o, err) < 0)
		return -1;
	return 0;
}

/* The image (pulled first when pull) and the network, into o->spec. */
static int prepare_image(struct run_opts *o, struct cli_globals *g, bool pull, struct lb_err **err)
{
	if (pull) {
		if (run_pull_image(g, o, err) < 0)
			return -1;
		say_first_unpack(g, o);
	}
	if (lb_spec_image(&g->paths, &o->img, &o->spec, err) < 0 || finish_network(o, err) < 0)
		return -1;
	return 0;
}

int cli_build_spec(struct cli_globals *g, int argc, char **argv, struct lb_spec *out,
		   struct lb_err **err)
{
	struct run_opts o = {.n_env = 0};
	if (prepare_opts(&o, argc, argv, err) < 0 || prepare_image(&o, g, false, err) < 0 ||
	    ((o.detach || o.name || o.json_file || o.tty) &&
	     lb_err_set(err, 0, "-d, --name, --json-file and -t are lbbox run's alone") < 0)) {
		run_opts_free(&o);
		return -1;
	}
	*out = o.spec;
	lb_spec_init(&o.spec);
	run_opts_free(&o);
	return 0;
}

/* The sandbox, with -t its pty relayed to this terminal while it runs. */
static int run_sandbox(struct run_opts *o, struct cli_globals *g, struct lb_result *res,
		       int *setup_exit, struct lb_err **err)
{
	struct lb_tty tty;
	if (!o->tty)
		return lb_sandbox_run(&o->spec, &g->paths, res, setup_exit, err);
	if (lb_tty_open(&tty, o->interactive, err) < 0)
		return -1;
	const struct lb_run_io io = {.console_fd = tty.child_sock,
				     .console_size = lb_tty_size(&tty),
				     .fds = tty.pfd,
				     .n = LB_TTY_NFDS,
				     .on_ready = lb_tty_on_ready,
				     .on_signal = lb_tty_on_signal,
				     .ctx = &tty};
	int r = lb_sandbox_run_io(&o->spec, &g->paths, &io, res, setup_exit, err);
	lb_tty_finish(&tty, r == 0 && !res->timed_out);
	lb_tty_close(&tty);
	return r;
}

int cli_run(struct cli_globals *g, int argc, char **argv)
{
	struct run_opts o = {.n_env = 0};
	_cleanup_err_ struct lb_err *err = NULL;
	struct lb_result res;
	int setup_exit = LB_EXIT_SETUP, code;

	int prepared = prepare_opts(&o, argc, argv, &err);
	if (prepared == 0 && o.json_file)
		prepared = claim_json_file(o.json_file, &err);
	if (prepared == 0)
		prepared = prepare_image(&o, g, true, &err);
	if (prepared < 0 || (!o.detach && !o.name && lb_spec_check(&o.spec, &g->paths, &err) < 0)) {
		cli_error("%s", err->msg);
		run_opts_free(&o);
		return LB_EXIT_SETUP;
	}
	if (o.detach || o.name) { /* a run's session checks the spec once it is complete */
		code = run_named(g, &o);
		run_opts_free(&o);
		return code;
	}
	if (o.spec.net == LB_NET_HOST && !o.json)
		cli_error(
		    "warning: --network host is unsafe: the sandbox shares the host's network "
		    "and reaches every service on it and on the local network");
	if (lb_rootless()) {
		if (lb_rootless_check(&o.spec, &err) < 0) {
			cli_error("%s", err->msg);
			run_opts_free(&o);
			return LB_EXIT_SETUP;
		}
		if (o.spec.net == LB_NET_ON && !o.json)
			cli_error("note: rootless --network on goes through pasta (user-mode "
				  "networking, IPv4 only) behind lbbox's egress filter");
	}
	if (run_sandbox(&o, g, &res, &setup_exit, &err) < 0) {
		cli_error("%s", err->msg);
		code = setup_exit;
	} else {
		code = report(&o, &res);
	}
	run_opts_free(&o);
	return code;
}
