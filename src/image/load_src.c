/* The input the importers read through: an archive's staged files or an OCI layout directory
 * (reads that never leave it), its blobs verified into the store transaction, and the images
 * found. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "load_internal.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"

void lb_load_result_clear(struct lb_load_result *r)
{
	lb_store_images_free(r->images, r->n);
	r->images = NULL;
	r->n = 0;
}

/* Opens path inside the layout directory: symlinks may not lead out of it. */
static int dir_open(struct load_src *src, const char *path, int *fd, struct lb_err **err)
{
	/* O_NONBLOCK: a FIFO in a layout must not hang the load */
	struct open_how how = {.flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC,
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS};
	int f = (int)syscall(SYS_openat2, src->dir_fd, path, &how, sizeof(how));
	struct stat st;

	if (f < 0 && errno == ENOSYS)
		f = openat(src->dir_fd, path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
	if (f < 0)
		return lb_err_set(err, errno, "open %s in the layout", path);
	if (fstat(f, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(f);
		return lb_err_set(err, 0, "%s in the layout is not a regular file", path);
	}
	if (fcntl(f, F_SETFL, 0) < 0) { /* blocking again: a regular file anyway */
		close(f);
		return lb_err_set(err, errno, "open %s in the layout", path);
	}
	*fd = f;
	return 0;
}

static int fd_read_small(int fd, const char *path, size_t max, char **buf, size_t *len,
			 struct lb_err **err)
{
	struct stat st;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return lb_err_set(err, EINVAL, "%s is not a regular file", path);
	if ((uint64_t)st.st_size > max)
		return lb_err_set(err, EFBIG, "%s too large: %lld bytes (limit %zu MiB)", path,
				  (long long)st.st_size, max >> 20);
	_cleanup_free_ char *b = malloc((size_t)st.st_size + 1);
	if (!b)
		return lb_err_set(err, ENOMEM, "read %s", path);
	ssize_t n = lb_read_all(fd, b, (size_t)st.st_size);
	if (n != st.st_size)
		return lb_err_set(err, n < 0 ? errno : 0, "read %s", path);
	b[n] = '\0';
	*buf = LB_TAKE_PTR(b);
	*len = (size_t)n;
	return 0;
}

int load_src_read(struct load_src *src, const char *path, size_t max, char **buf, size_t *len,
		  struct lb_err **err)
{
	if (src->dir_fd >= 0) {
		_cleanup_close_ int fd = -1;
		if (dir_open(src, path, &fd, err) < 0)
			return -1;
		return fd_read_small(fd, path, max, buf, len, err);
	}
	const struct load_file *f = load_src_lookup(src, path);
	if (!f)
		return lb_err_set(err, ENOENT, "%s missing from the archive", path);
	if (f->size > max)
		return lb_err_set(err, EFBIG, "%s too large: %llu bytes (limit %zu MiB)", path,
				  (unsigned long long)f->size, max >> 20);
	return lb_store_txn_read(src->t, f->digest, max, buf, len, err);
}

static int blob_from_archive(struct load_src *src, const char *digest, uint64_t size,
			     struct lb_err **err)
{
	char path[96];

	snprintf(path, sizeof(path), "blobs/sha256/%s", digest + 7);
	const struct load_file *f = load_src_lookup(src, path);
	if (!f)
		return lb_err_set(err, ENOENT, "blob %s missing from the archive", digest);
	if (f->size != size)
		return lb_err_set(err, 0, "blob %s: size %llu, expected %llu (truncated?)", digest,
				  (unsigned long long)f->size, (unsigned long long)size);
	if (strcmp(f->digest, digest) != 0)
		return lb_err_set(err, 0, "blob %s: digest mismatch, content hashes to %s", digest,
				  f->digest);
	return 0;
}

/* A directory's blob is copied in one call: its start and its end. */
static void progress(struct load_src *src, const char *digest, uint64_t size, uint64_t done)
{
	struct lb_image_progress p = {
	    .what = "blob", .digest = digest, .done = done, .total = size};
	if (src->opts->progress)
		src->opts->progress(&p, src->opts->progress_ctx);
}

static int blob_from_dir(struct load_src *src, const char *digest, uint64_t size,
			 struct lb_err **err)
{
	char path[96];
	_cleanup_close_ int fd = -1;
	uint64_t have = 0;

	/* Already verified into the store (or staged by this import): only the size is left. */
	if (lb_store_txn_has(src->t, digest)) {
		if (lb_store_txn_open(src->t, digest, &fd, err) < 0)
			return -1;
		struct stat st;
		have = fstat(fd, &st) == 0 ? (uint64_t)st.st_size : UINT64_MAX;
		if (have != size)
			return lb_err_set(err, 0, "blob %s: size %llu, expected %llu", digest,
					  (unsigned long long)have, (unsigned long long)size);
		return 0;
	}
	snprintf(path, sizeof(path), "blobs/sha256/%s", digest + 7);
	if (dir_open(src, path, &fd, err) < 0)
		return lb_err_wrap(err, "blob %s missing", digest);
	progress(src, digest, size, 0);
	if (lb_store_txn_put_fd(src->t, fd, digest, (int64_t)size, NULL, err) < 0)
		return -1;
	progress(src, digest, size, size);
	return 0;
}

int load_src_blob(struct load_src *src, const char *digest, uint64_t size, bool keep,
		  struct lb_err **err)
{
	if (lb_oci_digest_check(digest, err) < 0)
		return -1;
	int r = src->dir_fd >= 0 ? blob_from_dir(src, digest, size, err)
				 : blob_from_archive(src, digest, size, err);
	if (r < 0)
		return -1;
	return keep ? lb_store_txn_keep(src->t, digest, err) : 0;
}

static int result_add(struct lb_load_result *res, const char *name, const char *media_type,
		      const char *digest, uint64_t size, struct lb_err **err)
{
	struct lb_store_image *v = realloc(res->images, (res->n + 1) * sizeof(*v));

	if (!v)
		return lb_err_set(err, ENOMEM, "load");
	res->images = v;
	struct lb_store_image *img = &v[res->n++];
	*img = (struct lb_store_image){.size = size};
	img->name = name ? strdup(name) : NULL;
	img->digest = strdup(digest);
	img->media_type = strdup(media_type);
	if ((name && !img->name) || !img->digest || !img->media_type)
		return lb_err_set(err, ENOMEM, "load");
	return 0;
}

int load_src_tag(struct load_src *src, const char *found_name, const char *media_type,
		 const char *digest, uint64_t size, struct lb_err **err)
{
	const struct lb_load_opts *o = src->opts;
	_cleanup_free_ char *norm = NULL;
	const char *name = found_name;

	if (o->name) {
		if (src->result.n > 0)
			return lb_err_set(
			    err, EINVAL,
			    "a name for the image was given, but the input holds several images: select one by tag");
		name = o->name;
	} else if (name && o->normalize) {
		if (o->normalize(name, &norm, o->normalize_ctx, err) < 0)
			return lb_err_wrap(err, "image name '%s'", found_name);
		name = norm;
	}
	if (lb_store_txn_tag(src->t, name, media_type, digest, size, err) < 0)
		return -1;
	return result_add(&src->result, name, media_type, digest, size, err);
}

void load_src_clear(struct load_src *src)
{
	for (size_t i = 0; i < src->n_files; i++) {
		free(src->files[i].path);
		free(src->files[i].link);
	}
	free(src->files);
	lb_load_result_clear(&src->result);
	lb_store_txn_free(src->t);
	lb_closep(&src->dir_fd);
}
