/*
 * Unpacked layers, one directory per ChainID (ROOT/snapshots/<hex>/fs), stacked with overlayfs
 * into a sandbox's root. Unpacked once, shared by every image and sandbox that uses them.
 */
#ifndef LBBOX_SNAPSHOT_H
#define LBBOX_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>

#include "lbbox/base/err.h"
#include "lbbox/image/manifest.h"
#include "lbbox/image/store.h"

/*
 * The overlayfs lowerdir option of the image ("top:...:bottom", absolute paths) in *lowerdir,
 * and in *missing how many of its layers are not unpacked yet (then *lowerdir is NULL).
 * Needs no libarchive: this is the `run --image` fast path.
 */
int lb_snapshot_lowerdir(const char *root, const struct lb_image_config *cfg, char **lowerdir,
			 size_t *missing, struct lb_err **err);

struct lb_unpack_opts;
/* Unpacks every missing layer of the image (lbbox-image only: links libarchive). limits (may be
 * NULL: the defaults): max_entries and max_total_size bound what this image's layers unpack in
 * all. */
int lb_snapshot_prepare(struct lb_store *s, const struct lb_manifest *m,
			const struct lb_image_config *cfg, const struct lb_unpack_opts *limits,
			struct lb_err **err);

/* Where overlayfs is missing: all layers applied onto one tree (lbbox-image only). */
int lb_snapshot_prepare_flat(struct lb_store *s, const struct lb_manifest *m,
			     const struct lb_image_config *cfg, const struct lb_unpack_opts *limits,
			     struct lb_err **err);
/* Its path ROOT/snapshots/<top chain id>.flat/fs in *dir, and whether it exists yet. */
int lb_snapshot_flat_dir(const char *root, const struct lb_image_config *cfg, char **dir,
			 bool *exists, struct lb_err **err);

/*
 * Removes the snapshots no image in the store uses and no sandbox of runroot (NULL: none) has
 * mounted; *removed counts them.
 */
int lb_snapshot_prune(struct lb_store *s, const char *runroot, size_t *removed,
		      struct lb_err **err);

/* ChainID of layer i given the previous one (NULL for the bottom layer), as 64 hex digits. */
int lb_snapshot_chain_id(const char *prev_hex, const char *diff_id, char out[65],
			 struct lb_err **err);

#endif
