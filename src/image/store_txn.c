/* Import transactions: a private staging directory, and a commit that publishes the kept blobs
 * and the index entries under the store lock. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store_internal.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"

int lb_store_txn_begin(struct lb_store *s, struct lb_store_txn **out, struct lb_err **err)
{
	struct lb_store_txn *t = calloc(1, sizeof(*t));

	if (!t)
		return lb_err_set(err, ENOMEM, "begin import");
	t->s = s;
	if (store_tmp_create(s, "txn-", true, &t->dir_fd, t->dir, err) < 0) {
		free(t);
		return lb_err_wrap(err, "begin import");
	}
	*out = t;
	return 0;
}

void lb_store_txn_free(struct lb_store_txn *t)
{
	_cleanup_free_ char *path = NULL;
	struct lb_err *e = NULL;

	if (!t)
		return;
	/* Remove while still holding the directory's flock, so no cleaner races us. */
	if (asprintf(&path, "%s/tmp/%s", t->s->root, t->dir) >= 0)
		lb_rm_rf(path, &e);
	lb_err_free(&e);
	close(t->dir_fd);
	for (size_t i = 0; i < t->n_kept; i++)
		free(t->kept[i]);
	free(t->kept);
	for (size_t i = 0; i < t->n_tags; i++) {
		free(t->tags[i].name);
		free(t->tags[i].media_type);
		free(t->tags[i].digest);
	}
	free(t->tags);
	free(t);
}

static bool staged(struct lb_store_txn *t, const char *hex)
{
	struct stat st;
	return fstatat(t->dir_fd, hex, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

bool lb_store_txn_has(struct lb_store_txn *t, const char *digest)
{
	const char *hex;

	if (store_digest_hex(digest, &hex, NULL) < 0)
		return false;
	return staged(t, hex) || lb_store_blob_exists(t->s, digest);
}

int lb_store_txn_read(struct lb_store_txn *t, const char *digest, size_t max, char **buf,
		      size_t *len, struct lb_err **err)
{
	const char *hex;

	if (store_digest_hex(digest, &hex, err) < 0)
		return -1;
	return store_read_verified(staged(t, hex) ? t->dir_fd : t->s->blobs_fd, digest, max, buf,
				   len, err);
}

int lb_store_txn_open(struct lb_store_txn *t, const char *digest, int *fd, struct lb_err **err)
{
	const char *hex;

	if (store_digest_hex(digest, &hex, err) < 0)
		return -1;
	if (!staged(t, hex))
		return lb_store_blob_open(t->s, digest, fd, NULL, err);
	*fd = openat(t->dir_fd, hex, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (*fd < 0)
		return lb_err_set(err, errno, "open staged blob %s", digest);
	return 0;
}

int lb_store_txn_keep(struct lb_store_txn *t, const char *digest, struct lb_err **err)
{
	if (lb_oci_digest_check(digest, err) < 0)
		return -1;
	for (size_t i = 0; i < t->n_kept; i++)
		if (strcmp(t->kept[i], digest) == 0)
			return 0;
	char **k = realloc(t->kept, (t->n_kept + 1) * sizeof(*k));
	if (!k)
		return lb_err_set(err, ENOMEM, "keep blob");
	t->kept = k;
	if (!(k[t->n_kept] = strdup(digest)))
		return lb_err_set(err, ENOMEM, "keep blob");
	t->n_kept++;
	return 0;
}

int lb_store_txn_tag(struct lb_store_txn *t, const char *name, const char *media_type,
		     const char *digest, uint64_t size, struct lb_err **err)
{
	if (lb_oci_digest_check(digest, err) < 0)
		return -1;
	struct store_txn_tag *v = realloc(t->tags, (t->n_tags + 1) * sizeof(*v));
	if (!v)
		return lb_err_set(err, ENOMEM, "tag");
	t->tags = v;
	struct store_txn_tag *g = &v[t->n_tags];
	*g = (struct store_txn_tag){.size = size};
	g->name = name ? strdup(name) : NULL;
	g->media_type = strdup(media_type);
	g->digest = strdup(digest);
	t->n_tags++;
	if ((name && !g->name) || !g->media_type || !g->digest)
		return lb_err_set(err, ENOMEM, "tag");
	return 0;
}

/* Moves one kept blob into blobs/ unless an identical one is there already. */
static int publish_blob(struct lb_store_txn *t, const char *digest, struct lb_err **err)
{
	const char *hex = digest + 7;

	if (!staged(t, hex)) {
		if (lb_store_blob_exists(t->s, digest))
			return 0;
		return lb_err_set(err, ENOENT, "blob %s is neither staged nor stored", digest);
	}
	if (renameat2(t->dir_fd, hex, t->s->blobs_fd, hex, RENAME_NOREPLACE) == 0 ||
	    errno == EEXIST)
		return 0;
	if (errno == EINVAL && renameat(t->dir_fd, hex, t->s->blobs_fd, hex) == 0)
		return 0;
	return lb_err_set(err, errno, "publish blob %s", digest);
}

static int commit_locked(struct lb_store_txn *t, struct lb_err **err)
{
	_cleanup_json_ json_t *index = NULL;

	for (size_t i = 0; i < t->n_kept; i++)
		if (publish_blob(t, t->kept[i], err) < 0)
			return -1;
	if (t->n_kept && store_fsync_dir(t->s->blobs_fd, "blobs/sha256", err) < 0)
		return -1;
	if (!t->n_tags)
		return 0;
	if (store_index_load(t->s, &index, err) < 0)
		return -1;
	for (size_t i = 0; i < t->n_tags; i++) {
		struct store_txn_tag *g = &t->tags[i];
		if (store_index_set(index, g->name, g->media_type, g->digest, g->size, err) < 0)
			return -1;
	}
	return store_index_save(t->s, index, err);
}

int lb_store_txn_commit(struct lb_store_txn *t, struct lb_err **err)
{
	_cleanup_close_ int lock = -1;

	for (size_t i = 0; i < t->n_tags; i++)
		if (lb_store_txn_keep(t, t->tags[i].digest, err) < 0)
			return -1;
	if (store_lock(t->s, &lock, err) < 0)
		return -1;
	if (commit_locked(t, err) < 0)
		return lb_err_wrap(err, "commit import");
	return 0;
}
