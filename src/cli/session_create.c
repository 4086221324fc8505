/*
 * lbbox session create NAME [OPTIONS]: the Box fields of a session from the command line, straight
 * into a BoxSpec (LangBot's defaults and profiles apply, then its validators); every other
 * `lbbox run` option is passed through to the engine spec the session's sandbox starts from.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "lbbox/box/box.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/rpc/rpc.h"
#include "lbbox/base/util.h"

#define MAX_VOLUMES 64

struct create {
	struct lb_box_spec bs;
	unsigned given; /* lb_box_given: what the profile must not fill */
	const char *profile;
	struct lb_mount volumes[MAX_VOLUMES]; /* every -v, split once mount_path is final */
	size_t n_volumes;
	char **pass; /* lbbox run options passed through, NULL-terminated */
	int npass;
};

static const char *const box_opts[] = {
    "--memory",	 "--pids",   "--cpus", "--network",   "--mount-path", "--workspace-quota",
    "--profile", "--volume", "-v",     "--read-only", "--persistent", NULL};

static int opt_match(const char *arg, const char **name, const char **val)
{
	for (const char *const *o = box_opts; *o; o++) {
		size_t n = strlen(*o);
		if (strncmp(arg, *o, n) == 0 && (arg[n] == '\0' || arg[n] == '=')) {
			*name = *o;
			*val = arg[n] == '=' ? arg + n + 1 : NULL;
			return 1;
		}
	}
	return 0;
}

/* A whole decimal integer; its range is the Box validators' to judge (their words). */
static int parse_int(const char *name, const char *v, int64_t *out, struct lb_err **err)
{
	char *end = NULL;
	errno = 0;
	long long n = strtoll(v, &end, 10);
	if (errno || end == v || *end)
		return lb_err_set(err, 0, "invalid %s '%s': expected an integer", name, v);
	*out = n;
	return 0;
}

static int parse_cpus(const char *v, double *out, struct lb_err **err)
{
	char *end = NULL;
	errno = 0;
	double d = strtod(v, &end);
	if (errno || end == v || *end || !isfinite(d))
		return lb_err_set(err, 0, "invalid --cpus '%s': expected a number", v);
	*out = d;
	return 0;
}

static int parse_network(const char *v, enum lb_box_net *out, struct lb_err **err)
{
	if (!strcmp(v, "off"))
		*out = LB_BOX_NET_OFF;
	else if (!strcmp(v, "on"))
		*out = LB_BOX_NET_ON;
	else
		return lb_err_set(err, 0, "invalid --network '%s': a session's is off or on", v);
	return 0;
}

static int add_volume(struct create *c, const char *v, struct lb_err **err)
{
	if (c->n_volumes >= MAX_VOLUMES)
		return lb_err_set(err, 0, "too many volumes (at most %d)", MAX_VOLUMES);
	if (cli_parse_volume(v, &c->volumes[c->n_volumes], err) < 0)
		return -1;
	c->n_volumes++;
	return 0;
}

/* A Box option with its value (NULL for a bare flag). */
static int take_box_opt(struct create *c, const char *name, const char *v, struct lb_err **err)
{
	struct lb_box_spec *bs = &c->bs;
	if (!strcmp(name, "--persistent"))
		return bs->persistent = true, 0;
	if (!strcmp(name, "--read-only")) {
		c->given |= LB_BOX_GIVEN_READ_ONLY;
		return cli_parse_bool(v, &bs->read_only_rootfs, err);
	}
	if (!v)
		return lb_err_set(err, 0, "missing value for option '%s'", name);
	if (!strcmp(name, "--memory")) {
		uint64_t bytes;
		c->given |= LB_BOX_GIVEN_MEMORY;
		if (lb_parse_size(v, &bytes, err) < 0)
			return lb_err_wrap(err, "invalid --memory");
		bs->memory_mb = (int64_t)(bytes >> 20);
		return 0;
	}
	if (!strcmp(name, "--pids"))
		return c->given |= LB_BOX_GIVEN_PIDS, parse_int(name, v, &bs->pids_limit, err);
	if (!strcmp(name, "--workspace-quota"))
		return c->given |= LB_BOX_GIVEN_QUOTA,
		       parse_int(name, v, &bs->workspace_quota_mb, err);
	if (!strcmp(name, "--cpus"))
		return c->given |= LB_BOX_GIVEN_CPUS, parse_cpus(v, &bs->cpus, err);
	if (!strcmp(name, "--network"))
		return c->given |= LB_BOX_GIVEN_NETWORK, parse_network(v, &bs->network, err);
	if (!strcmp(name, "--mount-path"))
		return cli_set_string(&bs->mount_path, v, err);
	if (!strcmp(name, "--profile"))
		return c->profile = v, 0;
	return add_volume(c, v, err); /* -v, --volume */
}

static int add_extra_mount(struct lb_box_spec *bs, const struct lb_mount *m, struct lb_err **err)
{
	struct lb_box_mount *more =
	    realloc(bs->extra_mounts, (bs->n_extra_mounts + 1) * sizeof(*more));
	if (!more)
		return lb_err_set(err, ENOMEM, "mounts");
	bs->extra_mounts = more;
	struct lb_box_mount *e = &more[bs->n_extra_mounts];
	*e = (struct lb_box_mount){.host_path = strdup(m->source),
				   .mount_path = strdup(m->target),
				   .mode = m->readonly ? LB_BOX_MOUNT_RO : LB_BOX_MOUNT_RW};
	bs->n_extra_mounts++;
	return e->host_path && e->mount_path ? 0 : lb_err_set(err, ENOMEM, "mounts");
}

/* The first -v whose target is the workspace becomes host_path; the others extra mounts. */
static int split_volumes(struct create *c, struct lb_err **err)
{
	struct lb_box_spec *bs = &c->bs;
	for (size_t i = 0; i < c->n_volumes; i++) {
		const struct lb_mount *m = &c->volumes[i];
		if (!bs->host_path && !strcmp(m->target, bs->mount_path)) {
			if (cli_set_string(&bs->host_path, m->source, err) < 0)
				return -1;
			bs->host_path_mode = m->readonly ? LB_BOX_MOUNT_RO : LB_BOX_MOUNT_RW;
			c->given |= LB_BOX_GIVEN_HOST_PATH_MODE;
		} else if (add_extra_mount(bs, m, err) < 0) {
			return -1;
		}
	}
	return 0;
}

/* --image / --rootfs name the session's image (and go on to the engine spec too). */
static int take_run_opt(struct create *c, char **argv, int i, int argc, struct lb_err **err)
{
	c->pass[c->npass++] = argv[i];
	if ((!strcmp(argv[i], "--image") || !strcmp(argv[i], "--rootfs")) && i + 1 < argc) {
		c->given |= LB_BOX_GIVEN_IMAGE;
		return cli_set_string(&c->bs.image, argv[i + 1], err);
	}
	return 0;
}

static int parse_create(struct create *c, int argc, char **argv, struct lb_err **err)
{
	/* room for every argument and the --read-only=BOOL added for the engine */
	c->pass = calloc((size_t)argc + 2, sizeof(char *));
	if (!c->pass)
		return lb_err_set(err, ENOMEM, "options");
	c->pass[c->npass++] = argv[0];
	for (int i = 1; i < argc; i++) {
		const char *name, *val;
		if (!strcmp(argv[i], "--"))
			return lb_err_set(err, 0, "session create takes no command");
		if (!opt_match(argv[i], &name, &val)) {
			if (take_run_opt(c, argv, i, argc, err) < 0)
				return -1;
			continue;
		}
		bool flag = !strcmp(name, "--persistent") || !strcmp(name, "--read-only");
		if (!val && !flag && i + 1 < argc)
			val = argv[++i];
		if (take_box_opt(c, name, val, err) < 0)
			return -1;
	}
	return 0;
}

/* Flags -> BoxSpec: the profile fills what was not given, then LangBot's validators. */
static int finish_spec(struct create *c, const char *name, struct lb_err **err)
{
	struct lb_box_spec *bs = &c->bs;
	if (!(c->given & LB_BOX_GIVEN_IMAGE) && cli_set_string(&bs->image, "host", err) < 0)
		return -1;
	c->given |= LB_BOX_GIVEN_IMAGE; /* the host's userland unless one is named */
	if (cli_set_string(&bs->session_id, name, err) < 0 || split_volumes(c, err) < 0)
		return -1;
	if (c->profile) {
		const struct lb_box_profile *p = lb_box_profile_find(c->profile, err);
		if (!p || lb_box_profile_fill(p, bs, c->given, err) < 0)
			return -1;
	}
	return lb_box_spec_validate(bs, err);
}

/* The engine spec the session starts from: the passed-through run options, its root final. */
static int base_spec(struct cli_globals *g, struct create *c, struct lb_spec *out,
		     struct lb_err **err)
{
	c->pass[c->npass] = c->bs.read_only_rootfs ? "--read-only=true" : "--read-only=false";
	return cli_build_spec(g, c->npass + 1, c->pass, out, err);
}

static void create_free(struct create *c)
{
	lb_box_spec_free(&c->bs);
	for (size_t i = 0; i < c->n_volumes; i++)
		free(c->volumes[i].source), free(c->volumes[i].target);
	free(c->pass);
}

/* -1 to go on; else the exit code (help is answered by the dispatcher, before this). */
static int usage_or_name(int argc, char **argv)
{
	_cleanup_err_ struct lb_err *err = NULL;
	if (argc < 2) {
		cli_error(
		    "usage: lbbox session create NAME [OPTIONS] (see lbbox session create --help)");
		return LB_EXIT_SETUP;
	}
	if (cli_check_name("session", argv[1], &err) < 0)
		return cli_box_error(err);
	return -1;
}

int cli_session_create(struct cli_globals *g, struct lb_box *box, int argc, char **argv)
{
	_cleanup_err_ struct lb_err *err = NULL;
	struct create c = {.npass = 0};
	struct lb_spec base;
	struct lb_box_session s;
	bool created;
	int code = usage_or_name(argc, argv);
	if (code >= 0)
		return code;
	code = 0;
	lb_box_spec_init(&c.bs);
	lb_spec_init(&base);
	int r = parse_create(&c, argc - 1, argv + 1, &err) < 0 || finish_spec(&c, argv[1], &err) < 0
		    ? -1
		    : lb_box_session_reuse(box, &c.bs, &s, &err);
	/* the engine spec (an image's layers resolved) only when a sandbox has to be made */
	if (r == 0 && (base_spec(g, &c, &base, &err) < 0 ||
		       lb_box_session_get_or_create(box, &c.bs, &base, &s, &created, &err) < 0))
		r = -1;
	if (r < 0) {
		code = cli_box_error(err);
	} else {
		cli_print_json(lb_rpc_session_json(&s));
		lb_box_session_free(&s);
	}
	lb_spec_free(&base);
	create_free(&c);
	return code;
}
