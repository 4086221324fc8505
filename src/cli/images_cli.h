/* The image verbs' shared pieces (images*.c): one image's facts as `images` and `inspect` show
 * them, in podman's units. */
#ifndef LBBOX_CLI_IMAGES_H
#define LBBOX_CLI_IMAGES_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "cli.h"
#include "lbbox/image/manifest.h"
#include "lbbox/image/store.h"

struct cli_image {
	char digest[LB_DIGEST_BUF]; /* the index entry's: manifest (or index) digest */
	char id[LB_DIGEST_BUF];	    /* config digest: podman's image ID */
	struct lb_manifest *m;
	struct lb_image_config *cfg;
	time_t created; /* 0: the config has no (valid) created */
	uint64_t size;	/* uncompressed layers */
	bool size_known;
};

/* Reads the manifest and config behind digest; sizes from the layer-size cache only. */
int cli_image_read(struct lb_store *s, const char *digest, struct cli_image *out,
		   struct lb_err **err);
void cli_image_clear(struct cli_image *img);
/* Runs `lbbox-image ROOT sizes` (measures layers not measured yet), then fills img->size; a
 * size it could not measure stays unknown (size_known false). */
int cli_image_sizes(struct cli_globals *g, struct lb_store *s, struct cli_image *v, size_t n,
		    struct lb_err **err);

/* "repo:tag", "repo@sha256:..", "repo:tag@sha256:.." -> length of "repo"; *tag points at the tag
 * (length *tag_len), or NULL when there is none. */
size_t cli_image_repo(const char *name, const char **tag, size_t *tag_len);
/* podman's units: "4.86 MB" (decimal, 3 significant digits). */
void cli_human_size(uint64_t size, char *buf, size_t len);
/* "3 days ago", as podman's CREATED column; "unknown" for 0. */
void cli_human_ago(time_t t, time_t now, char *buf, size_t len);
/* RFC 3339 -> seconds since the epoch; 0 when it does not parse. */
time_t cli_parse_rfc3339(const char *s);
/* The first sandbox of runroot whose root is the image's (its state names the image's top layer
 * under root/snapshots as its top), in *id (its state directory's name); false when none. */
bool cli_image_in_use(const char *root, const char *runroot, const struct lb_image_config *cfg,
		      char *id, size_t len);

/* images_list.c, images_inspect.c, images_rmi.c: argv[0] is the verb; < 0 fills err, 1 means
 * failed with the messages already printed. */
int cli_images_list(struct cli_globals *g, int argc, char **argv, struct lb_err **err);
int cli_images_inspect(struct cli_globals *g, int argc, char **argv, struct lb_err **err);
int cli_images_rmi(struct cli_globals *g, int argc, char **argv, struct lb_err **err);

#endif
