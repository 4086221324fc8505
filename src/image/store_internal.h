/* Shared between the store's files: the handle, the lock, temp files and the index document. */
#ifndef LBBOX_STORE_INTERNAL_H
#define LBBOX_STORE_INTERNAL_H

#include <jansson.h>

#include "lbbox/base/json_util.h"
#include "lbbox/image/store.h"

struct lb_store {
	char *root;
	int root_fd;
	int blobs_fd; /* ROOT/blobs/sha256 */
	int tmp_fd;   /* ROOT/tmp */
};

#define STORE_TMP_NAME 64

struct store_txn_tag {
	char *name; /* NULL: untagged */
	char *media_type;
	char *digest;
	uint64_t size;
};

struct lb_store_txn {
	struct lb_store *s;
	int dir_fd; /* ROOT/tmp/txn-<random>, flocked for the transaction's lifetime */
	char dir[STORE_TMP_NAME];
	char **kept; /* digests */
	size_t n_kept;
	struct store_txn_tag *tags;
	size_t n_tags;
};

/* Exclusive flock on ROOT/.lock; *fd is closed by the caller to release it. */
int store_lock(struct lb_store *s, int *fd, struct lb_err **err);
/* Creates ROOT/tmp/<prefix><random> (a directory when dir), flocked so a concurrent open does not
 * clean it up while this process lives. */
int store_tmp_create(struct lb_store *s, const char *prefix, bool dir, int *fd,
		     char name[STORE_TMP_NAME], struct lb_err **err);
/* Writes buf to dirfd/name through a flocked temp file: write, fsync, rename, fsync dir. */
int store_write_atomic(struct lb_store *s, int dirfd, const char *name, const void *buf, size_t len,
		       struct lb_err **err);
int store_fsync_dir(int dirfd, const char *what, struct lb_err **err);

/* sha256 of everything fed, as "sha256:<hex>". */
struct lb_sha256;
void store_sha256_digest(struct lb_sha256 *h, char digest[LB_DIGEST_BUF]);
int store_sha256_buf(const void *buf, size_t len, char digest[LB_DIGEST_BUF], struct lb_err **err);
/* "sha256:<hex>" -> "<hex>" after checking it. */
int store_digest_hex(const char *digest, const char **hex, struct lb_err **err);
/* Reads dirfd/hex whole and checks it hashes to digest. */
int store_read_verified(int dirfd, const char *digest, size_t max, char **buf, size_t *len,
			struct lb_err **err);

/* index.json as a jansson document, read and written under the lock. */
int store_index_load(struct lb_store *s, json_t **out, struct lb_err **err);
int store_index_save(struct lb_store *s, json_t *index, struct lb_err **err);
/* Sets name (NULL: untagged entry, added once per digest) -> descriptor in the document. */
int store_index_set(json_t *index, const char *name, const char *media_type, const char *digest,
		    uint64_t size, struct lb_err **err);

const char *store_entry_str(json_t *e, const char *key);
/* An entry's org.opencontainers.image.ref.name; NULL when untagged. */
const char *store_entry_name(json_t *e);
/* The entry named what, or (what being a digest) the first entry with that digest. */
json_t *store_index_find(json_t *index, const char *what);
int store_image_from_entry(json_t *e, struct lb_store_image *img, struct lb_err **err);
/* lb_store_lookup on an index document already loaded (store_lookup.c). */
int store_lookup(struct lb_store *s, json_t *index, const char *ref, struct lb_store_image *out,
		 enum lb_store_match *how, struct lb_err **err);

#endif
