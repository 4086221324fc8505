/*
 * Layer unpack driver: reads the tar entries of one layer blob (unpack_stream.c), cleans each
 * path, and hands it to the whiteout (unpack_whiteout.c) or entry (unpack_entry.c) code; bounds
 * the number of entries, path lengths and total file size so a tar bomb cannot fill the disk.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unpack_internal.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/image/unpack.h"

static void ctx_init(struct unpack_ctx *c, int root_fd, const struct lb_unpack_opts *o)
{
	static const struct lb_unpack_opts none = {0};
	if (!o)
		o = &none;
	bool privileged = geteuid() == 0 && !(o->flags & LB_UNPACK_ROOTLESS);

	*c = (struct unpack_ctx){
	    .root_fd = root_fd,
	    .flags = o->flags,
	    .may_trusted = privileged,
	    .max_entries = o->max_entries ? o->max_entries : LB_UNPACK_DEFAULT_MAX_ENTRIES,
	    .max_total_size =
		o->max_total_size ? o->max_total_size : LB_UNPACK_DEFAULT_MAX_TOTAL_SIZE,
	    .max_path = o->max_path ? o->max_path : LB_UNPACK_DEFAULT_MAX_PATH,
	    .used_entries = o->used_entries,
	    .used_bytes = o->used_bytes,
	    .cache_fd = -1,
	};
}

static void ctx_free(struct unpack_ctx *c)
{
	unpack_parent_drop(c);
	unpack_pathset_free(&c->written);
	for (size_t i = 0; i < c->ndirs; i++)
		free(c->dirs[i].path);
	free(c->dirs);
	for (size_t i = 0; i < c->nopaque; i++)
		free(c->opaque[i]);
	free(c->opaque);
}

static int one_entry(struct unpack_ctx *c, struct archive *a, struct archive_entry *e,
		     struct lb_err **err)
{
	const char *raw = archive_entry_pathname(e);
	_cleanup_free_ char *path = NULL;

	if (c->used_entries + ++c->res.entries > c->max_entries)
		return lb_err_set(err, 0,
				  "image has more than %llu entries, the unpack limit "
				  "(LBBOX_UNPACK_MAX_ENTRIES)",
				  (unsigned long long)c->max_entries);
	if (!raw)
		return lb_err_set(err, 0, "tar entry %llu has no usable path",
				  (unsigned long long)c->res.entries);
	if (unpack_clean_path(raw, c->max_path, &path, err) < 0)
		return lb_err_wrap(err, "layer entry %llu", (unsigned long long)c->res.entries);
	int r = unpack_is_whiteout(path) ? unpack_whiteout(c, path, err)
					 : unpack_entry(c, a, e, path, err);
	return r < 0 ? lb_err_wrap(err, "layer entry '%s'", raw) : 0;
}

static int read_entries(struct unpack_ctx *c, struct unpack_stream *s, struct lb_err **err)
{
	struct archive *a = unpack_stream_tar(s);
	struct archive_entry *e;

	for (;;) {
		int r = archive_read_next_header(a, &e);
		if (r == ARCHIVE_EOF)
			return 0;
		if (r < ARCHIVE_WARN)
			return unpack_stream_error(s, c->res.entries == 0, err);
		if (one_entry(c, a, e, err) < 0)
			return -1;
	}
}

int lb_unpack_layer_fd(int blob_fd, int root_fd, const struct lb_unpack_opts *opts,
		       struct lb_unpack_result *result, struct lb_err **err)
{
	struct unpack_stream *s = NULL;
	struct unpack_ctx c;
	struct stat st;
	int r = -1;

	if (fstat(root_fd, &st) < 0)
		return lb_err_set(err, errno, "unpack layer: stat target directory");
	if (!S_ISDIR(st.st_mode))
		return lb_err_set(err, ENOTDIR, "unpack layer: target is not a directory");
	ctx_init(&c, root_fd, opts);
	if (unpack_stream_open(blob_fd, opts ? opts->media_type : NULL, &s, err) < 0)
		goto out;
	if (read_entries(&c, s, err) < 0)
		goto out;
	unpack_parent_drop(&c);
	if (unpack_opaque_finish(&c, err) < 0 || unpack_dirs_finish(&c, err) < 0)
		goto out;
	if (unpack_stream_finish(s, c.res.diff_id, &c.res.tar_size, err) < 0)
		goto out;
	if (result)
		*result = c.res;
	r = 0;
out:
	unpack_stream_free(&s);
	ctx_free(&c);
	return r;
}

int lb_unpack_layer(const char *blob_path, const char *root_dir, const struct lb_unpack_opts *opts,
		    struct lb_unpack_result *result, struct lb_err **err)
{
	_cleanup_close_ int blob = open(blob_path, O_RDONLY | O_CLOEXEC);
	if (blob < 0)
		return lb_err_set(err, errno, "open layer %s", blob_path);
	_cleanup_close_ int root = open(root_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return lb_err_set(err, errno, "open %s", root_dir);
	if (lb_unpack_layer_fd(blob, root, opts, result, err) < 0)
		return lb_err_wrap(err, "unpack %s", blob_path);
	return 0;
}
