/* The image store: an OCI image layout (ROOT/oci-layout, ROOT/index.json, ROOT/blobs/sha256/<hex>)
 * that skopeo and umoci can read, plus ROOT/.lock (flock around index updates) and ROOT/tmp/
 * (staging; stale entries removed at the next open).
 *
 * Writes go through a transaction: blobs are verified and staged under ROOT/tmp/, and only commit
 * moves them into blobs/ and updates index.json, under the lock. A failed or killed import
 * therefore leaves the visible store exactly as it was. */
#ifndef LBBOX_STORE_H
#define LBBOX_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lbbox/base/err.h"
#include "lbbox/image/manifest.h"

#define LB_STORE_DEFAULT_ROOT "/var/lib/lbbox"

struct lb_store;
struct lb_store_txn;
struct lb_blob_writer;

/* One entry of index.json: a name (NULL when untagged) for a manifest or index digest. */
struct lb_store_image {
	char *name;
	char *digest;
	char *media_type;
	uint64_t size;
};

struct lb_store_prune_stats {
	size_t blobs;
	uint64_t bytes;
};

/* Opens root, creating the layout when missing; removes temp files no live process holds. */
int lb_store_open(const char *root, struct lb_store **out, struct lb_err **err);
void lb_store_close(struct lb_store *s);
const char *lb_store_root(const struct lb_store *s);

/* Blobs. digest is "sha256:<hex>". */
bool lb_store_blob_exists(struct lb_store *s, const char *digest);
int lb_store_blob_open(struct lb_store *s, const char *digest, int *fd, uint64_t *size,
		       struct lb_err **err);
/* Reads a whole blob (at most max bytes) and checks its sha256: used for manifests and configs. */
int lb_store_blob_read(struct lb_store *s, const char *digest, size_t max, char **buf, size_t *len,
		       struct lb_err **err);
int lb_store_blob_delete(struct lb_store *s, const char *digest, struct lb_err **err);

/* Index: names -> manifest digests. */
int lb_store_list(struct lb_store *s, struct lb_store_image **out, size_t *n, struct lb_err **err);
void lb_store_images_free(struct lb_store_image *v, size_t n);
void lb_store_image_clear(struct lb_store_image *img);
/* How lb_store_lookup found an image. */
enum lb_store_match {
	LB_STORE_MATCH_NAME,   /* by one of its names: out->name is that name */
	LB_STORE_MATCH_DIGEST, /* by manifest digest or image ID: the image whatever its names */
};
/*
 * What a reference (lb_image_name's form) means in the store, in podman's order: an exact name or
 * manifest digest; an image ID (the config digest: "sha256:<64 hex>", or a unique prefix of at
 * least 3 hex digits, as podman's IMAGE ID); NAME@sha256:DIGEST (an image of that repository
 * with that manifest digest); a short name as localhost/NAME, then as docker.io's. A prefix that
 * fits several images is an error saying so; nothing found is ENOENT. how may be NULL.
 */
int lb_store_lookup(struct lb_store *s, const char *ref, struct lb_store_image *out,
		    enum lb_store_match *how, struct lb_err **err);
/* lb_store_lookup without how. */
int lb_store_resolve(struct lb_store *s, const char *name_or_digest, struct lb_store_image *out,
		     struct lb_err **err);
/* The image ID (its config's digest) of the manifest or index (the host's platform) digest. */
int lb_store_image_id(struct lb_store *s, const char *digest, char id[LB_DIGEST_BUF],
		      struct lb_err **err);
/* Removes every index entry (every name, and the untagged entry) of the digest. */
int lb_store_remove(struct lb_store *s, const char *digest, struct lb_err **err);
/* Uncompressed size of a layer by DiffID, remembered in ROOT/layer-sizes/ once measured
 * (lbbox-image measures it: that needs the decompressors). get: -1 when not known yet. */
int lb_store_layer_size_get(struct lb_store *s, const char *diff_id, uint64_t *size);
int lb_store_layer_size_set(struct lb_store *s, const char *diff_id, uint64_t size,
			    struct lb_err **err);
/* Points dst at what src (a name or digest) resolves to; replaces any previous dst. */
int lb_store_tag(struct lb_store *s, const char *src, const char *dst, struct lb_err **err);
/* Removes the name; its blobs stay until lb_store_prune. */
int lb_store_untag(struct lb_store *s, const char *name, struct lb_err **err);
/* The image manifest behind digest (a manifest, or an index: the platform's, NULL: the host's),
 * and when asked, that manifest's own digest and size. */
int lb_store_manifest_of(struct lb_store *s, const char *digest, const struct lb_platform *platform,
			 struct lb_manifest **out, char chosen[LB_DIGEST_BUF], uint64_t *size,
			 struct lb_err **err);
/* Resolves name to an image manifest for the platform (NULL: host), reading through an index. */
int lb_store_image_manifest(struct lb_store *s, const char *name_or_digest,
			    const struct lb_platform *platform, struct lb_manifest **manifest,
			    struct lb_image_config **config, struct lb_err **err);

/* Deletes every blob no index entry reaches (through indexes, manifests, configs, layers). */
int lb_store_prune(struct lb_store *s, struct lb_store_prune_stats *stats, struct lb_err **err);

/* Transactions. */
int lb_store_txn_begin(struct lb_store *s, struct lb_store_txn **out, struct lb_err **err);
/* Removes everything staged; no effect on the store. Safe on NULL and after commit. */
void lb_store_txn_free(struct lb_store_txn *t);
/* Streams a blob into staging. want_digest NULL: computed only; want_size < 0: unknown. A write
 * past want_size fails at once; finish checks size then digest. */
int lb_blob_writer_begin(struct lb_store_txn *t, const char *want_digest, int64_t want_size,
			 struct lb_blob_writer **out, struct lb_err **err);
int lb_blob_writer_write(struct lb_blob_writer *w, const void *buf, size_t len,
			 struct lb_err **err);
/* Verifies, fsyncs and stages the blob; frees w in every case. digest may be NULL. */
/* Bytes written so far (a transfer that broke off resumes from here). */
uint64_t lb_blob_writer_size(const struct lb_blob_writer *w);
int lb_blob_writer_finish(struct lb_blob_writer *w, char digest[LB_DIGEST_BUF], uint64_t *size,
			  struct lb_err **err);
void lb_blob_writer_abort(struct lb_blob_writer *w);
int lb_store_txn_put_fd(struct lb_store_txn *t, int fd, const char *want_digest, int64_t want_size,
			char digest[LB_DIGEST_BUF], struct lb_err **err);
int lb_store_txn_put_buf(struct lb_store_txn *t, const void *buf, size_t len,
			 char digest[LB_DIGEST_BUF], struct lb_err **err);
/* Whether digest is staged in t or already in the store. */
bool lb_store_txn_has(struct lb_store_txn *t, const char *digest);
/* Reads a staged (or else stored) blob, checking its digest. */
int lb_store_txn_read(struct lb_store_txn *t, const char *digest, size_t max, char **buf,
		      size_t *len, struct lb_err **err);
int lb_store_txn_open(struct lb_store_txn *t, const char *digest, int *fd, struct lb_err **err);
/* Marks a blob as part of the image being committed: only kept blobs leave staging. A kept blob
 * that is neither staged nor stored at commit time fails the commit. */
int lb_store_txn_keep(struct lb_store_txn *t, const char *digest, struct lb_err **err);
/* Records index entry name (NULL: untagged) -> d, applied at commit. d is copied. */
int lb_store_txn_tag(struct lb_store_txn *t, const char *name, const char *media_type,
		     const char *digest, uint64_t size, struct lb_err **err);
/* Under the lock: moves kept blobs into blobs/, then rewrites index.json atomically. */
int lb_store_txn_commit(struct lb_store_txn *t, struct lb_err **err);

/*
 * tool.c: runs lbbox-image ROOT ARGS... (args NULL-terminated), the helper beside lbbox (or
 * $LBBOX_IMAGE_TOOL). With capture_err its error line becomes *err and the return is < 0 on
 * failure; otherwise it inherits stderr and its exit code is returned.
 */
int lb_image_tool(const char *root, const char *const *args, bool capture_err, struct lb_err **err);
/* Opens the store at root only when one exists (a lookup must not create it). */
int lb_store_open_existing(const char *root, struct lb_store **s, struct lb_err **err);

#endif
