/*
 * lbbox session create NAME [OPTIONS]: the Box fields of a session from the command line
 * (LangBot's defaults and profiles apply), every other `lbbox run` option passed through to the
 * engine spec of the sandbox.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "lbbox/box.h"
#include "lbbox/cleanup.h"
#include "lbbox/util.h"

struct create {
	json_t *payload;
	json_t *mounts; /* [host, path, mode] of every -v, split once mount_path is known */
	const char *profile;
	char **pass; /* lbbox run options passed through */
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

static int set_size_mb(json_t *p, const char *v, struct lb_err **err)
{
	uint64_t bytes;
	if (lb_parse_size(v, &bytes, err) < 0)
		return lb_err_wrap(err, "invalid --memory");
	json_object_set_new(p, "memory_mb", json_integer((json_int_t)(bytes >> 20)));
	return 0;
}

static int take_box_opt(struct create *c, const char *name, const char *v, struct lb_err **err)
{
	json_t *p = c->payload;
	if (!strcmp(name, "--persistent"))
		return json_object_set_new(p, "persistent", json_true()), 0;
	if (!strcmp(name, "--read-only"))
		return json_object_set_new(p, "read_only_rootfs", json_string(v ? v : "true")), 0;
	if (!v)
		return lb_err_set(err, 0, "missing value for option '%s'", name);
	if (!strcmp(name, "--memory"))
		return set_size_mb(p, v, err);
	if (!strcmp(name, "--profile"))
		return c->profile = v, 0;
	if (!strcmp(name, "-v") || !strcmp(name, "--volume")) {
		struct lb_mount m = {0};
		if (lb_parse_mount(v, &m, err) < 0)
			return -1;
		json_array_append_new(c->mounts, json_pack("[s, s, s]", m.source, m.target,
							   m.readonly ? "ro" : "rw"));
		free(m.source), free(m.target);
		return 0;
	}
	static const char *const keys[][2] = {{"--pids", "pids_limit"},
					      {"--cpus", "cpus"},
					      {"--network", "network"},
					      {"--mount-path", "mount_path"},
					      {"--workspace-quota", "workspace_quota_mb"}};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcmp(name, keys[i][0]))
			json_object_set_new(p, keys[i][1], json_string(v));
	return 0;
}

/* The -v whose target is the workspace becomes host_path; the others extra mounts. */
static void split_mounts(struct create *c)
{
	const char *mp = json_string_value(json_object_get(c->payload, "mount_path"));
	json_t *extra = json_array(), *m;
	size_t i;
	json_array_foreach(c->mounts, i, m)
	{
		const char *host = json_string_value(json_array_get(m, 0));
		const char *path = json_string_value(json_array_get(m, 1));
		json_t *mode = json_array_get(m, 2);
		if (!strcmp(path, mp ? mp : LB_BOX_DEFAULT_MOUNT_PATH) &&
		    !json_object_get(c->payload, "host_path")) {
			json_object_set_new(c->payload, "host_path", json_string(host));
			json_object_set(c->payload, "host_path_mode", mode);
		} else {
			json_array_append_new(extra, json_pack("{s:s, s:s, s:O}", "host_path", host,
							       "mount_path", path, "mode", mode));
		}
	}
	json_object_set_new(c->payload, "extra_mounts", extra);
}

static int parse_create(struct create *c, int argc, char **argv, struct lb_err **err)
{
	c->pass = calloc((size_t)argc + 1, sizeof(char *));
	if (!c->pass)
		return lb_err_set(err, ENOMEM, "options");
	c->pass[c->npass++] = argv[0];
	for (int i = 1; i < argc; i++) {
		const char *name, *val;
		if (!strcmp(argv[i], "--"))
			return lb_err_set(err, 0, "session create takes no command");
		if (!opt_match(argv[i], &name, &val)) {
			if (!strcmp(argv[i], "--image") && i + 1 < argc)
				json_object_set_new(c->payload, "image", json_string(argv[i + 1]));
			if (!strcmp(argv[i], "--rootfs") && i + 1 < argc)
				json_object_set_new(c->payload, "image", json_string(argv[i + 1]));
			c->pass[c->npass++] = argv[i];
			continue;
		}
		bool flag = !strcmp(name, "--persistent") || !strcmp(name, "--read-only");
		if (!val && !flag && i + 1 < argc)
			val = argv[++i];
		if (take_box_opt(c, name, val, err) < 0)
			return -1;
	}
	if (!json_object_get(c->payload, "image"))
		json_object_set_new(c->payload, "image", json_string("host"));
	split_mounts(c);
	return 0;
}

struct build_ctx {
	struct cli_globals *g;
	struct create *c;
};

static int build_spec(void *ctx, const struct lb_box_spec *bs, struct lb_spec *out,
		      struct lb_err **err)
{
	struct build_ctx *b = ctx;
	lb_spec_free(out);
	return cli_build_spec(b->g, b->c->npass, b->c->pass, out, err);
}

static int spec_from_payload(struct create *c, struct lb_box_spec *bs, struct lb_err **err)
{
	if (c->profile) {
		const struct lb_box_profile *p = lb_box_profile_find(c->profile, err);
		if (!p || lb_box_profile_apply(p, c->payload, err) < 0)
			return -1;
	}
	return lb_box_spec_from_json(c->payload, bs, err);
}

int cli_session_create(struct cli_globals *g, struct lb_box *box, int argc, char **argv)
{
	_cleanup_err_ struct lb_err *err = NULL;
	struct lb_box_spec bs = {0}; /* filled by lb_box_spec_from_json */
	struct lb_box_session s;
	bool created;
	int code = 0;
	if (argc < 2) {
		cli_error("usage: lbbox session create NAME [OPTIONS] (see lbbox session --help)");
		return LB_EXIT_SETUP;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		puts("usage: lbbox session create NAME [OPTIONS] (options: lbbox session --help)");
		return 0;
	}
	/* an option where the name goes is a mistake, not a session named "--image" */
	if (argv[1][0] == '-') {
		cli_error("invalid session name '%s': a name cannot start with '-'", argv[1]);
		return LB_EXIT_SETUP;
	}
	struct create c = {.payload = json_object(), .mounts = json_array()};
	json_object_set_new(c.payload, "session_id", json_string(argv[1]));
	struct build_ctx b = {.g = g, .c = &c};
	if (parse_create(&c, argc - 1, argv + 1, &err) < 0 ||
	    spec_from_payload(&c, &bs, &err) < 0 ||
	    lb_box_session_get_or_create(box, &bs, build_spec, &b, &s, &created, &err) < 0) {
		code = cli_box_error(err);
	} else {
		cli_print_json(lb_box_session_json(&s));
		lb_box_session_free(&s);
	}
	lb_box_spec_free(&bs);
	json_decref(c.payload);
	json_decref(c.mounts);
	free(c.pass);
	return code;
}
