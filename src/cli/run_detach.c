/*
 * lbbox run -d [--name NAME] / run --name NAME: a named run is a detached run (a persistent
 * session plus its managed process "main", lbbox/box/run.h), whatever the run's options made
 * of the spec. With -d lbbox prints the name and returns; with --name alone it forwards the
 * run's output until main exits, exits with main's status and removes the run.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/box/run.h"
#include "runs_cli.h"
#include "run_internal.h"

/* One option a named run cannot take, and why. */
struct refusal {
	bool given;
	const char *opt, *why;
};

int run_named_check(const struct run_opts *o, struct lb_err **err)
{
	if (o->name && cli_check_name("run", o->name, err) < 0)
		return -1;
	const char *mode = o->detach ? "a detached run" : "a named run";
	const struct refusal r[] = {
	    {o->spec.timeout_ms > 0, "--timeout", "stop it with lbbox stop"},
	    {o->json, "--json", "-d prints the name; --json is for an unnamed foreground run"},
	    {o->json_file != NULL, "--json-file", "it is for an unnamed foreground run"},
	    {o->die_given, "--die-with-parent", "the run is not a child of lbbox"},
	    {o->allow_given, "--allow-host and --dns",
	     "its network is a session's (LBBOX_BOX_NET_ALLOW_HOSTS, LBBOX_BOX_NET_DNS)"},
	    {o->spec.net == LB_NET_HOST, "--network host", "its network is off or on"},
	    {o->spec.n_devices > 0, "--device", "a session's /dev has lbbox's devices only"},
	    {o->rm && o->detach, "--rm", "remove it with lbbox rm NAME once it has ended"},
	    {o->tty, "-t",
	     "its output is a log (lbbox logs NAME); lbbox exec -it NAME CMD has a terminal"},
	};
	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++)
		if (r[i].given)
			return lb_err_set(err, 0, "%s does not apply to %s: %s", r[i].opt, mode,
					  r[i].why);
	return 0;
}

/* podman's habit: adjective_noun. */
static int generate_name(char *out, size_t len, struct lb_err **err)
{
	static const char *const adj[] = {"brave",  "calm",  "eager", "fond",  "gentle",
					  "happy",  "jolly", "keen",  "lucid", "merry",
					  "nimble", "proud", "quiet", "swift", "witty"};
	static const char *const noun[] = {"badger", "crane", "dingo", "falcon", "gecko",
					   "heron",  "ibis",  "koala", "lemur",	 "marten",
					   "otter",  "panda", "quail", "raven",	 "tapir"};
	char hex[5];
	if (lb_random_hex(hex, 4, err) < 0)
		return -1;
	unsigned v = (unsigned)strtoul(hex, NULL, 16);
	snprintf(out, len, "%s_%s", adj[v % 15], noun[(v / 15) % 15]);
	return 0;
}

/* The session's Box fields from the run's spec; a limit not given is the session default. */
static int box_spec_of(const struct run_opts *o, const char *image, struct lb_box_spec *bs,
		       struct lb_err **err)
{
	const struct lb_cgroup_limits *l = &o->spec.limits;
	/* a session's limits are the Box's (memory, pids, cpus): nothing else is carried */
	if (l->cpu_shares || l->memory_reservation)
		return lb_err_set(
		    err, 0, "--cpu-shares and --memory-reservation are for a foreground run only");
	/* a Box session has no cpuset: refused, never dropped */
	if (l->cpus[0] || l->mems[0])
		return lb_err_set(err, 0, "--cpuset-cpus/--cpuset-mems: not with -d or --name");
	bs->network = o->spec.net == LB_NET_ON ? LB_BOX_NET_ON : LB_BOX_NET_OFF;
	bs->read_only_rootfs = o->spec.readonly_root;
	memcpy(bs->publish, o->spec.net_opts.publish, sizeof(bs->publish));
	bs->n_publish = o->spec.net_opts.n_publish;
	if (l->memory_bytes)
		bs->memory_mb = (int64_t)(l->memory_bytes >> 20);
	if (l->pids)
		bs->pids_limit = (int64_t)l->pids;
	if (l->cpu_quota_us && l->cpu_period_us)
		bs->cpus = (double)l->cpu_quota_us / (double)l->cpu_period_us;
	return cli_set_string(&bs->image, image, err);
}

/* main: the run's argv as it is, in its working directory. */
static int proc_spec_of(const struct run_opts *o, struct lb_box_proc_spec *ps, struct lb_err **err)
{
	char *const *argv = o->spec.argv;
	if (!argv || !argv[0])
		return lb_err_set(err, 0, "no command given, and the image has none");
	if (cli_set_string(&ps->command, argv[0], err) < 0 ||
	    cli_set_string(&ps->cwd, o->spec.cwd ? o->spec.cwd : "/", err) < 0)
		return -1;
	size_t n = 0;
	while (argv[n])
		n++;
	char **args = calloc(n, sizeof(char *));
	if (!args)
		return lb_err_set(err, ENOMEM, "args");
	lb_box_strv_free(ps->args);
	ps->args = args;
	for (size_t i = 1; i < n; i++)
		if (!(args[i - 1] = strdup(argv[i])))
			return lb_err_set(err, ENOMEM, "args");
	return lb_box_proc_spec_validate(ps, err);
}

/* The run made under name (generated ones retried on a clash); its name in out. */
static int create(struct lb_box *box, struct run_opts *o, char *out, size_t len,
		  struct lb_err **err)
{
	const char *image = o->img.image ? o->img.image : o->spec.rootfs ? o->spec.rootfs : "host";
	struct lb_box_spec bs;
	struct lb_box_proc_spec ps;
	lb_box_spec_init(&bs);
	lb_box_proc_spec_init(&ps);
	ps.hold = !o->detach;	/* the foreground follows main from its first byte */
	o->spec.timeout_ms = 0; /* a profile's timeout is for one command, not a run */
	int r = box_spec_of(o, image, &bs, err) < 0 || proc_spec_of(o, &ps, err) < 0 ? -1 : 1;
	for (int tries = 0; r > 0 && tries < 8; tries++) {
		if (o->name)
			snprintf(out, len, "%s", o->name);
		else if (generate_name(out, len, err) < 0)
			break;
		r = cli_set_string(&bs.session_id, out, err) < 0 ? -1
								 : lb_box_spec_validate(&bs, err);
		/* bs's copy of the image's name: the base spec (rootfs) is taken over */
		struct lb_box_run_req req = {
		    .image = bs.image, .bs = &bs, .base = &o->spec, .proc = &ps};
		if (r == 0)
			r = lb_box_run_create(box, &req, err);
		if (r < 0 && !o->name && (*err)->errnum == EEXIST) {
			lb_err_free(err);
			r = 1; /* another generated name */
		}
	}
	lb_box_spec_free(&bs);
	lb_box_proc_spec_free(&ps);
	return r == 0 ? 0 : -1;
}

/* Foreground: the output until main exits; signals to lbbox go to main. */
static int foreground(struct lb_box *box, const char *name)
{
	_cleanup_err_ struct lb_err *err = NULL;
	struct lb_box_run r;
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	_cleanup_close_ int sigfd = signalfd(-1, &set, SFD_CLOEXEC);
	int code = cli_run_follow(box, name, sigfd);
	if (code == 0 && lb_box_run_get(box, name, &r, &err) == 0) {
		code = r.has_main && r.main.has_exit_code ? r.main.exit_code : LB_EXIT_SETUP;
		lb_box_run_free(&r);
	}
	if (lb_box_run_remove(box, name, true, &err) < 0)
		return cli_box_error(err);
	return code;
}

int run_named(struct cli_globals *g, struct run_opts *o)
{
	_cleanup_err_ struct lb_err *err = NULL;
	struct lb_box box;
	char name[256];
	/* (the keeper forks from us: main.c has re-executed lbbox sealed) */
	if (lb_rootless() && lb_rootless_check(&o->spec, &err) < 0)
		return cli_box_error(err);
	if (lb_box_open_env(&box, &g->paths, &err) < 0)
		return cli_box_error(err);
	box.owner[0] = '\0'; /* a run is the user's, never a server instance's to drop */
	int code = 0;
	if (create(&box, o, name, sizeof(name), &err) < 0)
		code = cli_box_error(err);
	else if (o->detach)
		cli_print_escaped(name, 0), putchar('\n');
	else
		code = foreground(&box, name);
	lb_box_fini(&box);
	return code;
}
