/* The tar `save` writes, with libarchive: ustar entries, mode 0644, mtime 0, so the same images
 * always give the same bytes. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "imagetool.h"
#include "save_internal.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"

int save_tar_open(struct save_tar *t, struct lb_store *s, int fd, struct lb_err **err)
{
	*t = (struct save_tar){.a = archive_write_new(), .s = s};
	if (!t->a)
		return lb_err_set(err, ENOMEM, "save");
	/* pax for names beyond ustar's 100 bytes; restricted: plain ustar when they fit */
	if (archive_write_set_format_pax_restricted(t->a) != ARCHIVE_OK ||
	    archive_write_set_bytes_in_last_block(t->a, 1) != ARCHIVE_OK ||
	    archive_write_open_fd(t->a, fd) != ARCHIVE_OK)
		return lb_err_set(err, 0, "save: %s", archive_error_string(t->a));
	return 0;
}

int save_tar_finish(struct save_tar *t, struct lb_err **err)
{
	if (archive_write_close(t->a) != ARCHIVE_OK)
		return lb_err_set(err, errno, "save: write: %s", archive_error_string(t->a));
	return 0;
}

void save_tar_free(struct save_tar *t)
{
	if (t->a)
		archive_write_free(t->a);
	for (size_t i = 0; i < t->n_paths; i++)
		free(t->paths[i]);
	free(t->paths);
	*t = (struct save_tar){0};
}

/* Whether path was written; records it when not. */
static int seen(struct save_tar *t, const char *path, bool *out, struct lb_err **err)
{
	for (size_t i = 0; i < t->n_paths; i++)
		if (!strcmp(t->paths[i], path)) {
			*out = true;
			return 0;
		}
	char **v = realloc(t->paths, (t->n_paths + 1) * sizeof(*v));
	if (!v || !(v[t->n_paths] = strdup(path))) {
		if (v)
			t->paths = v;
		return lb_err_set(err, ENOMEM, "save");
	}
	t->paths = v;
	t->n_paths++;
	*out = false;
	return 0;
}

static int header(struct save_tar *t, const char *path, uint64_t size, struct lb_err **err)
{
	struct archive_entry *e = archive_entry_new();
	if (!e)
		return lb_err_set(err, ENOMEM, "save");
	archive_entry_set_pathname(e, path);
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, 0644);
	archive_entry_set_size(e, (la_int64_t)size);
	archive_entry_set_mtime(e, 0, 0);
	int r = archive_write_header(t->a, e);
	archive_entry_free(e);
	if (r != ARCHIVE_OK)
		return lb_err_set(err, errno, "save: %s: %s", path, archive_error_string(t->a));
	return 0;
}

static int data(const void *buf, size_t len, void *ctx, struct lb_err **err)
{
	struct save_tar *t = ctx;
	if (archive_write_data(t->a, buf, len) != (la_ssize_t)len)
		return lb_err_set(err, errno, "save: write: %s", archive_error_string(t->a));
	return 0;
}

int save_tar_buf(struct save_tar *t, const char *path, const void *buf, size_t len,
		 struct lb_err **err)
{
	if (header(t, path, len, err) < 0)
		return -1;
	return len ? data(buf, len, t, err) : 0;
}

int save_tar_blob(struct save_tar *t, const char *path, const char *digest, struct lb_err **err)
{
	_cleanup_close_ int fd = -1;
	uint64_t size = 0, left;
	char buf[1 << 16];
	bool dup;

	if (seen(t, path, &dup, err) < 0 || dup)
		return dup ? 0 : -1;
	if (lb_store_blob_open(t->s, digest, &fd, &size, err) < 0 || header(t, path, size, err) < 0)
		return -1;
	for (left = size; left > 0;) {
		ssize_t n = read(fd, buf, left < sizeof(buf) ? left : sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return lb_err_set(err, n < 0 ? errno : EIO, "save: read blob %s", digest);
		if (data(buf, (size_t)n, t, err) < 0)
			return -1;
		left -= (uint64_t)n;
	}
	return 0;
}

int save_tar_layer(struct save_tar *t, const char *path, const struct lb_descriptor *layer,
		   const char *diff_id, struct lb_err **err)
{
	enum lb_compression c;
	uint64_t size = 0, got = 0;
	bool dup;

	if (lb_layer_compression(layer->media_type, &c, err) < 0)
		return -1;
	if (c == LB_COMPRESSION_NONE)
		return save_tar_blob(t, path, layer->digest, err);
	if (seen(t, path, &dup, err) < 0 || dup)
		return dup ? 0 : -1;
	/* a tar header states the size first: measured (or remembered) before the copy */
	if (tool_layer_size(t->s, layer->digest, diff_id, &size, err) < 0 ||
	    header(t, path, size, err) < 0 ||
	    tool_layer_stream(t->s, layer->digest, data, t, &got, err) < 0)
		return -1;
	if (got != size)
		return lb_err_set(err, 0, "save: layer %s is %llu bytes uncompressed, not %llu",
				  layer->digest, (unsigned long long)got, (unsigned long long)size);
	return 0;
}
