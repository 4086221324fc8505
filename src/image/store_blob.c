/* Content-addressed blobs: sha256 streaming, verified staging writes, stored-blob access. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store_internal.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/hash.h"
#include "lbbox/base/util.h"

struct lb_blob_writer {
	struct lb_store_txn *t;
	int fd;
	char name[STORE_TMP_NAME]; /* partial file inside the transaction's directory */
	struct lb_sha256 *md;
	uint64_t size;
	int64_t want_size;
	char want_digest[LB_DIGEST_BUF];
};

/* "sha256:<hex>" of what went through h; frees h. */
void store_sha256_digest(struct lb_sha256 *h, char digest[LB_DIGEST_BUF])
{
	memcpy(digest, "sha256:", 7);
	lb_sha256_final_hex(h, digest + 7);
}

/* Without EVP: this runs on every `run --image` (see src/base/hash.c). */
int store_sha256_buf(const void *buf, size_t len, char digest[LB_DIGEST_BUF], struct lb_err **err)
{
	(void)err;
	memcpy(digest, "sha256:", 7);
	lb_sha256_hex(buf, len, digest + 7);
	return 0;
}

int store_digest_hex(const char *digest, const char **hex, struct lb_err **err)
{
	if (lb_oci_digest_check(digest, err) < 0)
		return -1;
	*hex = digest + 7;
	return 0;
}

int store_read_verified(int dirfd, const char *digest, size_t max, char **buf, size_t *len,
			struct lb_err **err)
{
	const char *hex;
	char got[LB_DIGEST_BUF];
	_cleanup_free_ char *b = NULL;
	size_t n = 0;

	if (store_digest_hex(digest, &hex, err) < 0)
		return -1;
	if (lb_read_fileat(dirfd, hex, max, &b, &n, err) < 0)
		return lb_err_wrap(err, "blob %s", digest);
	if (store_sha256_buf(b, n, got, err) < 0)
		return -1;
	if (strcmp(got, digest) != 0)
		return lb_err_set(err, 0, "blob %s is corrupt: content hashes to %s", digest, got);
	*buf = LB_TAKE_PTR(b);
	if (len)
		*len = n;
	return 0;
}

bool lb_store_blob_exists(struct lb_store *s, const char *digest)
{
	const char *hex;
	struct stat st;

	if (store_digest_hex(digest, &hex, NULL) < 0)
		return false;
	return fstatat(s->blobs_fd, hex, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode);
}

int lb_store_blob_open(struct lb_store *s, const char *digest, int *fd, uint64_t *size,
		       struct lb_err **err)
{
	const char *hex;
	struct stat st;

	if (store_digest_hex(digest, &hex, err) < 0)
		return -1;
	_cleanup_close_ int f = openat(s->blobs_fd, hex, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (f < 0)
		return lb_err_set(err, errno, "open blob %s", digest);
	if (fstat(f, &st) < 0 || !S_ISREG(st.st_mode))
		return lb_err_set(err, EINVAL, "blob %s is not a regular file", digest);
	if (size)
		*size = (uint64_t)st.st_size;
	*fd = LB_TAKE_FD(f);
	return 0;
}

int lb_store_blob_read(struct lb_store *s, const char *digest, size_t max, char **buf, size_t *len,
		       struct lb_err **err)
{
	return store_read_verified(s->blobs_fd, digest, max, buf, len, err);
}

int lb_store_blob_delete(struct lb_store *s, const char *digest, struct lb_err **err)
{
	const char *hex;

	if (store_digest_hex(digest, &hex, err) < 0)
		return -1;
	if (unlinkat(s->blobs_fd, hex, 0) < 0)
		return lb_err_set(err, errno, "delete blob %s", digest);
	return 0;
}

void lb_blob_writer_abort(struct lb_blob_writer *w)
{
	if (!w)
		return;
	if (w->fd >= 0) {
		close(w->fd);
		unlinkat(w->t->dir_fd, w->name, 0);
	}
	lb_sha256_free(w->md);
	free(w);
}

static void writer_abortp(struct lb_blob_writer **w)
{
	lb_blob_writer_abort(*w);
}

int lb_blob_writer_begin(struct lb_store_txn *t, const char *want_digest, int64_t want_size,
			 struct lb_blob_writer **out, struct lb_err **err)
{
	_cleanup_(writer_abortp) struct lb_blob_writer *w = calloc(1, sizeof(*w));
	char rnd[17];

	if (!w)
		return lb_err_set(err, ENOMEM, "blob writer");
	w->fd = -1;
	w->t = t;
	w->want_size = want_size;
	if (want_digest) {
		if (lb_oci_digest_check(want_digest, err) < 0)
			return -1;
		snprintf(w->want_digest, sizeof(w->want_digest), "%s", want_digest);
	}
	if (!(w->md = lb_sha256_new()))
		return lb_err_set(err, ENOMEM, "sha256");
	if (lb_random_hex(rnd, 16, err) < 0)
		return -1;
	snprintf(w->name, sizeof(w->name), "partial-%s", rnd);
	w->fd = openat(t->dir_fd, w->name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (w->fd < 0)
		return lb_err_set(err, errno, "create %s/tmp/%s/%s", t->s->root, t->dir, w->name);
	*out = LB_TAKE_PTR(w);
	return 0;
}

int lb_blob_writer_write(struct lb_blob_writer *w, const void *buf, size_t len, struct lb_err **err)
{
	if (w->want_size >= 0 && w->size + len > (uint64_t)w->want_size)
		return lb_err_set(err, 0, "blob %s: more data than its declared size %lld",
				  w->want_digest[0] ? w->want_digest : "", (long long)w->want_size);
	lb_sha256_update(w->md, buf, len);
	if (lb_write_all(w->fd, buf, len) < 0)
		return lb_err_set(err, errno, "write blob");
	w->size += len;
	return 0;
}

uint64_t lb_blob_writer_size(const struct lb_blob_writer *w)
{
	return w->size;
}

static int writer_verify(struct lb_blob_writer *w, char got[LB_DIGEST_BUF], struct lb_err **err)
{
	if (w->want_size >= 0 && w->size != (uint64_t)w->want_size)
		return lb_err_set(err, 0, "blob %s: size %llu, expected %lld (truncated?)",
				  w->want_digest[0] ? w->want_digest : "",
				  (unsigned long long)w->size, (long long)w->want_size);
	store_sha256_digest(w->md, got);
	w->md = NULL;
	if (w->want_digest[0] && strcmp(got, w->want_digest) != 0)
		return lb_err_set(err, 0, "blob %s: digest mismatch, content hashes to %s",
				  w->want_digest, got);
	return 0;
}

int lb_blob_writer_finish(struct lb_blob_writer *w, char digest[LB_DIGEST_BUF], uint64_t *size,
			  struct lb_err **err)
{
	/* only its cleanup reads it (clang 14 would call it unused) */
	__attribute__((unused)) _cleanup_(writer_abortp) struct lb_blob_writer *wp = w;
	char got[LB_DIGEST_BUF];

	if (writer_verify(w, got, err) < 0)
		return -1;
	if (fsync(w->fd) < 0)
		return lb_err_set(err, errno, "fsync blob %s", got);
	if (renameat(w->t->dir_fd, w->name, w->t->dir_fd, got + 7) < 0)
		return lb_err_set(err, errno, "stage blob %s", got);
	close(w->fd);
	w->fd = -1;
	if (digest)
		memcpy(digest, got, LB_DIGEST_BUF);
	if (size)
		*size = w->size;
	return 0;
}

int lb_store_txn_put_fd(struct lb_store_txn *t, int fd, const char *want_digest, int64_t want_size,
			char digest[LB_DIGEST_BUF], struct lb_err **err)
{
	_cleanup_(writer_abortp) struct lb_blob_writer *w = NULL;
	_cleanup_free_ char *buf = malloc(1 << 16);

	if (!buf)
		return lb_err_set(err, ENOMEM, "copy blob");
	if (lb_blob_writer_begin(t, want_digest, want_size, &w, err) < 0)
		return -1;
	for (;;) {
		ssize_t r = read(fd, buf, 1 << 16);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return lb_err_set(err, errno, "read blob %s",
					  want_digest ? want_digest : "");
		if (r == 0)
			break;
		if (lb_blob_writer_write(w, buf, (size_t)r, err) < 0)
			return -1;
	}
	return lb_blob_writer_finish(LB_TAKE_PTR(w), digest, NULL, err);
}

int lb_store_txn_put_buf(struct lb_store_txn *t, const void *buf, size_t len,
			 char digest[LB_DIGEST_BUF], struct lb_err **err)
{
	_cleanup_(writer_abortp) struct lb_blob_writer *w = NULL;

	if (lb_blob_writer_begin(t, NULL, (int64_t)len, &w, err) < 0 ||
	    lb_blob_writer_write(w, buf, len, err) < 0)
		return -1;
	return lb_blob_writer_finish(LB_TAKE_PTR(w), digest, NULL, err);
}
