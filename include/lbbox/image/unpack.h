/* Secure unpack of one OCI / Docker layer blob (tar, tar+gzip, tar+zstd) into a directory. */
#ifndef LBBOX_UNPACK_H
#define LBBOX_UNPACK_H

#include <stdint.h>

#include "lbbox/base/err.h"

enum lb_unpack_flags {
	/* Unprivileged unpack: setuid/setgid bits dropped, ownership and xattr failures ignored,
	 * no trusted.* xattrs. (Device nodes are skipped in every mode.) */
	LB_UNPACK_ROOTLESS = 1 << 0,
	/* Apply onto an existing merged tree (the copy fallback when overlayfs is unavailable):
	 * whiteouts delete what lower layers put there instead of being converted to overlayfs
	 * markers. */
	LB_UNPACK_APPLY = 1 << 1,
	/* Overlay markers for a mount with "userxattr" (rootless overlayfs): the opaque marker is
	 * user.overlay.opaque instead of trusted.overlay.opaque. */
	LB_UNPACK_USERXATTR = 1 << 2,
};

/* Per image (all its layers unpacked in one go); users set them with LBBOX_UNPACK_MAX_ENTRIES
 * and LBBOX_UNPACK_MAX_SIZE (lbbox-image reads them). */
#define LB_UNPACK_DEFAULT_MAX_ENTRIES	 1000000ULL
#define LB_UNPACK_DEFAULT_MAX_TOTAL_SIZE (64ULL << 30) /* sum of the declared file sizes */
#define LB_UNPACK_DEFAULT_MAX_PATH	 4096

struct lb_unpack_opts {
	unsigned flags;		 /* enum lb_unpack_flags */
	const char *media_type;	 /* layer media type from the manifest; NULL: detect from content */
	uint64_t max_entries;	 /* 0: LB_UNPACK_DEFAULT_MAX_ENTRIES */
	uint64_t max_total_size; /* 0: LB_UNPACK_DEFAULT_MAX_TOTAL_SIZE */
	uint64_t max_path;	 /* bytes of a path or link target; 0: LB_UNPACK_DEFAULT_MAX_PATH */
	/* Already used by the image's lower layers, counted against the two maxima above. */
	uint64_t used_entries, used_bytes;
};

struct lb_unpack_result {
	char diff_id[72];    /* "sha256:<hex>" of the uncompressed tar stream */
	uint64_t tar_size;   /* bytes of the uncompressed tar stream */
	uint64_t entries;    /* tar entries read */
	uint64_t file_bytes; /* declared sizes of regular files written */
	uint64_t skipped;    /* entries dropped: character and block devices, sockets */
};

/* Unpacks the layer read from blob_fd (read sequentially; a pipe is fine) into the directory
 * root_fd. Every path stays inside root_fd whatever the layer contains. opts may be NULL. On
 * failure the directory may hold part of the layer: the caller unpacks into a fresh temporary
 * directory and renames it into place only on success. */
int lb_unpack_layer_fd(int blob_fd, int root_fd, const struct lb_unpack_opts *opts,
		       struct lb_unpack_result *result, struct lb_err **err);
/* Same, by paths; root_dir must exist. */
int lb_unpack_layer(const char *blob_path, const char *root_dir, const struct lb_unpack_opts *opts,
		    struct lb_unpack_result *result, struct lb_err **err);

#endif
