/* lbbox run's parsed options, shared by its files (run.c, run_opts.c, run_env.c, run_volume.c,
 * run_pull.c). */
#ifndef LBBOX_CLI_RUN_INTERNAL_H
#define LBBOX_CLI_RUN_INTERNAL_H

#include <stdbool.h>

#include "cli.h"
#include "lbbox/spec/image.h"

#define RUN_MAX_ENV 256

/* --pull: when a store image is fetched from its registry first (podman's default: missing). */
enum run_pull { RUN_PULL_MISSING = 0, RUN_PULL_ALWAYS, RUN_PULL_NEVER };

struct run_opts {
	struct lb_spec spec;
	struct lb_image_opts img; /* image, --user NAME, --entrypoint */
	char *env[RUN_MAX_ENV + 1];
	size_t n_env;
	bool json;
	bool network_set;
	bool tty, interactive; /* -t: a pty for the command; -i: stdin relayed to it */
	const char *profile;   /* --profile: a LangBot Box profile (run_profile.c) */
	enum run_pull pull;
	const char *insecure_registry; /* --tls-verify=false: the reference's registry */
	bool tls_verify_off;
	/* run_detach.c: -d runs it as a detached run; --name names it (in the foreground too) */
	bool detach, rm, allow_given, die_given;
	const char *name;
	const char *json_file; /* --json-file PATH: the result object written there */
};

/* run_opts.c: argv (argv[0] is "run") -> o: options, then IMAGE and CMD as podman takes them. */
int run_parse_args(struct run_opts *o, int argc, char **argv, struct lb_err **err);

/* run_env.c: -e KEY=VALUE (KEY alone copies lbbox's own value; a later KEY wins). */
int run_add_env(struct run_opts *o, const char *kv, struct lb_err **err);
/* --env-file FILE: a KEY=VALUE line each; blank lines and # comments skipped. */
int run_env_file(struct run_opts *o, const char *path, struct lb_err **err);

/* --mount type=bind,src=H,dst=S[,ro] | type=tmpfs,dst=S[,tmpfs-size=SIZE][,tmpfs-mode=OCTAL]. */
int cli_parse_mount_spec(const char *arg, struct lb_mount *out, struct lb_err **err);

/* run_device.c: --device HOST[:CONTAINER][:PERMS] added to spec->devices. */
int run_add_device(struct lb_spec *spec, const char *arg, struct lb_err **err);

/* run_pull.c: --pull's policy applied to o->img.image before it is resolved. */
int run_pull_image(const struct cli_globals *g, const struct run_opts *o, struct lb_err **err);

/* run_detach.c: the options a named run (-d or --name) cannot take, refused before anything. */
int run_named_check(const struct run_opts *o, struct lb_err **err);
/* lbbox run -d / --name NAME: the prepared spec becomes a run's session and its main. */
int run_named(struct cli_globals *g, struct run_opts *o);

#endif
