/* lbbox command line: global options and one entry point per verb. */
#ifndef LBBOX_CLI_H
#define LBBOX_CLI_H

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

#include "lbbox/sandbox.h"

struct cli_globals {
	struct lb_paths paths;
	char **argv; /* lbbox's own argv, to re-execute it */
};

/* Prints "lbbox: <msg>" on stderr: the one place lbbox's own messages are written; control
 * characters in msg are escaped (lb_escape_ctl), so it stays one line. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

int cli_run(struct cli_globals *g, int argc, char **argv);
/* lbbox run's options (argv[0] is skipped) -> an engine spec: image resolved, env finished. */
int cli_build_spec(struct cli_globals *g, int argc, char **argv, struct lb_spec *out,
		   struct lb_err **err);
/* Prints "lbbox: <Class>: <message>" (the class when there is one); returns 125. */
int cli_box_error(const struct lb_err *err);
struct lb_box;
/* The Box runtime of this lbbox invocation, capacities from the environment. */
int cli_open_box(struct cli_globals *g, struct lb_box *box, struct lb_err **err);
/* lbbox run --profile (run_profile.c): the profile's defaults and locked fields on spec. */
int cli_run_profile(const char *name, struct lb_spec *spec, bool network_given,
		    struct lb_err **err);
/* lbbox session create (session_create.c). */
int cli_session_create(struct cli_globals *g, struct lb_box *box, int argc, char **argv);
/* lbbox info (info.c). */
int cli_info(struct cli_globals *g, int argc, char **argv);
int cli_session(struct cli_globals *g, int argc, char **argv);
int cli_proc(struct cli_globals *g, int argc, char **argv);
/* Re-executes lbbox from a sealed memfd copy of itself (sealed.c); returns only on failure, or
 * at once when already running sealed. */
int cli_reexec_sealed(char **argv, struct lb_err **err);
/* lbbox box -s: LangBot's Box runtime over stdio (box.c). */
int cli_box(struct cli_globals *g, int argc, char **argv);
int cli_serve(struct cli_globals *g, int argc, char **argv);
/* Prints s escaped for a terminal (lb_escape_ctl), in a field of at least width columns
 * (printf's %-*s). */
void cli_print_escaped(const char *s, int width);
/* Prints one JSON value on a line. */
void cli_print_json(json_t *j);

/*
 * Runs lbbox-image ROOT ARGS... (args NULL-terminated). With capture_err its error line becomes
 * *err and the return is < 0 on failure; otherwise it inherits stderr and its exit code is
 * returned.
 */
int cli_image_tool(const struct cli_globals *g, const char *const *args, bool capture_err,
		   struct lb_err **err);
int cli_network(struct cli_globals *g, int argc, char **argv);
/* load, images, inspect, tag, rmi, image prune (images.c). */
int cli_images(struct cli_globals *g, int argc, char **argv);
/* A reference as the store names it ("alpine" -> "docker.io/library/alpine:latest"). */
int cli_image_name(const char *arg, char **out, struct lb_err **err);
struct lb_store;
struct lb_image_config;
/* The image's User ("name", "uid", "name:group" ...) through its own /etc/passwd and /etc/group,
 * looked up in the layers of lowerdir (image_user.c). */
int cli_image_user(const char *lowerdir, const char *user, uid_t *uid, gid_t *gid,
		   struct lb_err **err);
/*
 * Image REF as a root: the overlay lowerdir of its layers in *layers, or, where the kernel has
 * no overlayfs, its flattened tree in *flat (exactly one is set); missing layers are unpacked
 * first (run_image.c).
 */
/* overlayfs in this kernel? (LBBOX_NO_OVERLAY=1 pretends it is not, to test the fallback.) */
bool cli_overlay_available(void);
int cli_image_layers(const struct cli_globals *g, const char *ref, char **layers, char **flat,
		     struct lb_image_config **cfg, struct lb_err **err);
int cli_store_open(const struct cli_globals *g, struct lb_store **s, struct lb_err **err);

/* The network chosen by LBBOX_NET_BRIDGE, LBBOX_NET_SUBNET and LBBOX_NFT (network.c). */
struct lb_net_opts;
struct lb_err;
int cli_net_env(struct lb_net_opts *n, struct lb_err **err);

#endif
