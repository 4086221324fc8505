/* `lbbox-image ROOT save`: images from the store written as a docker-archive or an oci-archive
 * tar (save.c: options, references, output file; save_tar.c: the tar; save_formats.c: the two
 * layouts). */
#ifndef LBBOX_IMAGETOOL_SAVE_H
#define LBBOX_IMAGETOOL_SAVE_H

#include <stdbool.h>
#include <stddef.h>

#include "lbbox/base/err.h"
#include "lbbox/image/manifest.h"
#include "lbbox/image/store.h"

struct archive;

/* One image to save: the host platform's manifest (through an index) with its config. */
struct save_image {
	char *name; /* the store name it was asked for by; NULL (by ID or digest): saved untagged */
	char digest[LB_DIGEST_BUF]; /* of the manifest */
	char *media_type;	    /* of the manifest */
	uint64_t size;		    /* of the manifest */
	struct lb_manifest *m;
	struct lb_image_config *cfg;
};

struct save_tar {
	struct archive *a;
	struct lb_store *s;
	char **paths; /* entries written so far: a blob two images share is written once */
	size_t n_paths;
};

int save_tar_open(struct save_tar *t, struct lb_store *s, int fd, struct lb_err **err);
/* Writes the tar's end; the output is complete only when this succeeded. */
int save_tar_finish(struct save_tar *t, struct lb_err **err);
void save_tar_free(struct save_tar *t);
int save_tar_buf(struct save_tar *t, const char *path, const void *buf, size_t len,
		 struct lb_err **err);
/* A stored blob as it is, under path; nothing when path was written already. */
int save_tar_blob(struct save_tar *t, const char *path, const char *digest, struct lb_err **err);
/* A layer blob decompressed (docker-archive layers are plain tars), under path. */
int save_tar_layer(struct save_tar *t, const char *path, const struct lb_descriptor *layer,
		   const char *diff_id, struct lb_err **err);

int save_docker(struct save_tar *t, struct save_image *v, size_t n, struct lb_err **err);
int save_oci(struct save_tar *t, struct save_image *v, size_t n, struct lb_err **err);

#endif
