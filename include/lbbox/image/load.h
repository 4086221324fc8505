/* `lbbox load`: imports a docker-save archive, an OCI archive or an OCI layout directory into the
 * store. Every digest and size is verified; the import is one store transaction, so any failure
 * leaves the store as it was. */
#ifndef LBBOX_LOAD_H
#define LBBOX_LOAD_H

#include "lbbox/base/err.h"
#include "lbbox/image/manifest.h"
#include "lbbox/image/progress.h"
#include "lbbox/image/store.h"

/* Maps a name found in the input (a docker RepoTag, an OCI ref.name) to the store's name, e.g.
 * "alpine:3.20" -> "docker.io/library/alpine:3.20". */
typedef int (*lb_load_name_fn)(const char *in, char **out, void *ctx, struct lb_err **err);

struct lb_load_opts {
	/* Import only the image(s) named tag (OCI ref.name, or a docker RepoTag); NULL: all. */
	const char *tag;
	/* Store the imported image under this name instead of the name(s) in the input. */
	const char *name;
	/* Platform chosen from multi-platform indexes; NULL: the host's. */
	const struct lb_platform *platform;
	lb_load_name_fn normalize; /* NULL: names are stored as found */
	void *normalize_ctx;
	/* Each blob as it is copied in ("blob" or "config"); may be NULL. */
	lb_image_progress_fn progress;
	void *progress_ctx;
};

struct lb_load_result {
	size_t n;
	struct lb_store_image *images; /* name (NULL when untagged) -> manifest digest */
};

/* A tar (optionally compressed) holding either `docker save` output or an OCI layout. */
int lb_load_archive(struct lb_store *s, const char *path, const struct lb_load_opts *opts,
		    struct lb_load_result *out, struct lb_err **err);
int lb_load_archive_fd(struct lb_store *s, int fd, const struct lb_load_opts *opts,
		       struct lb_load_result *out, struct lb_err **err);
/* An OCI layout directory. */
int lb_load_oci_dir(struct lb_store *s, const char *dir, const struct lb_load_opts *opts,
		    struct lb_load_result *out, struct lb_err **err);
/* "DIR[:TAG]" as `lbbox load --oci-dir` takes it: TAG is split off only when DIR:TAG is not
 * itself a directory. Fills *dir (allocated) and *tag (allocated or NULL). */
int lb_load_split_oci_dir(const char *arg, char **dir, char **tag, struct lb_err **err);
void lb_load_result_clear(struct lb_load_result *r);

/* The DiffID (sha256 of the uncompressed tar) of a layer blob staged or stored in t. */
int lb_layer_diff_id(struct lb_store_txn *t, const char *digest, char diff_id[LB_DIGEST_BUF],
		     struct lb_err **err);

#endif
