/* lbbox-image ROOT sizes: the uncompressed size of each layer, measured once (see store_size.c). */
#include <archive.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "imagetool.h"
#include "lbbox/base/cleanup.h"

static void archive_freep(struct archive **a)
{
	if (*a)
		archive_read_free(*a);
}

/* Feeds the decompressed stream of a layer blob to sink, chunk by chunk (libarchive's "raw"
 * format: no tar parsing), and counts its bytes into *out. sink may be NULL (measure only). */
int tool_layer_stream(struct lb_store *s, const char *digest, tool_sink_fn sink, void *ctx,
		      uint64_t *out, struct lb_err **err)
{
	_cleanup_close_ int fd = -1;
	_cleanup_(archive_freep) struct archive *a = archive_read_new();
	struct archive_entry *e;
	char buf[1 << 16];
	uint64_t size = 0, total = 0;
	la_ssize_t n;

	if (!a)
		return lb_err_set(err, ENOMEM, "read layer");
	if (lb_store_blob_open(s, digest, &fd, &size, err) < 0)
		return -1;
	archive_read_support_filter_all(a);
	archive_read_support_format_raw(a);
	archive_read_support_format_empty(a);
	if (archive_read_open_fd(a, fd, sizeof(buf)) != ARCHIVE_OK)
		return lb_err_set(err, 0, "layer %s: %s", digest, archive_error_string(a));
	int r = archive_read_next_header(a, &e);
	if (r == ARCHIVE_EOF) {
		*out = 0;
		return 0;
	}
	if (r != ARCHIVE_OK)
		return lb_err_set(err, 0, "layer %s: %s", digest, archive_error_string(a));
	while ((n = archive_read_data(a, buf, sizeof(buf))) > 0) {
		total += (uint64_t)n;
		if (sink && sink(buf, (size_t)n, ctx, err) < 0)
			return -1;
	}
	if (n < 0)
		return lb_err_set(err, 0, "layer %s: %s", digest, archive_error_string(a));
	*out = total;
	return 0;
}

int tool_layer_size(struct lb_store *s, const char *digest, const char *diff_id, uint64_t *out,
		    struct lb_err **err)
{
	if (lb_store_layer_size_get(s, diff_id, out) == 0)
		return 0;
	if (tool_layer_stream(s, digest, NULL, NULL, out, err) < 0)
		return -1;
	return lb_store_layer_size_set(s, diff_id, *out, err);
}

static int image_sizes(struct lb_store *s, const char *digest, struct lb_err **err)
{
	struct lb_manifest *m = NULL;
	struct lb_image_config *cfg = NULL;
	uint64_t size = 0;
	int r = 0;

	if (lb_store_image_manifest(s, digest, NULL, &m, &cfg, err) < 0)
		return -1;
	for (size_t i = 0; r == 0 && i < m->n_layers && i < cfg->n_diff_ids; i++)
		r = tool_layer_size(s, m->layers[i].digest, cfg->diff_ids[i], &size, err);
	lb_manifest_free(m);
	lb_image_config_free(cfg);
	return r;
}

int tool_sizes(struct lb_store *s, struct lb_err **err)
{
	struct lb_store_image *v = NULL;
	size_t n = 0;
	if (lb_store_list(s, &v, &n, err) < 0)
		return -1;
	int r = 0;
	for (size_t i = 0; r == 0 && i < n; i++)
		r = image_sizes(s, v[i].digest, err);
	lb_store_images_free(v, n);
	return r;
}
