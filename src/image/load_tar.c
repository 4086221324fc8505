/* Archive input: one streaming pass stages every regular file under its content digest, so the
 * tar is read once whatever its order, and nothing is ever created by a path from the archive. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "load_internal.h"
#include "store_internal.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/hash.h"

static void archive_freep(struct archive **a)
{
	if (*a)
		archive_read_free(*a);
}
#define _cleanup_archive_ _cleanup_(archive_freep)

/* Lexically normalises dir + "/" + rel: drops ".", "" and leading "/", resolves ".." (never above
 * the archive root). rel absolute: dir is ignored. */
static char *path_norm(const char *dir, const char *rel)
{
	size_t cap = (dir ? strlen(dir) : 0) + strlen(rel) + 2;
	_cleanup_free_ char *in = malloc(cap);
	char *out = malloc(cap), *save = NULL;
	size_t n = 0;

	if (!in || !out) {
		free(out);
		return NULL;
	}
	snprintf(in, cap, "%s/%s", rel[0] == '/' || !dir ? "" : dir, rel);
	for (char *c = strtok_r(in, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (strcmp(c, ".") == 0)
			continue;
		if (strcmp(c, "..") == 0) {
			while (n > 0 && out[--n] != '/')
				;
			continue;
		}
		n += (size_t)sprintf(out + n, "%s%s", n ? "/" : "", c);
	}
	out[n] = '\0';
	return out;
}

static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	return strndup(path, slash ? (size_t)(slash - path) : 0);
}

static int add_file(struct load_src *src, struct load_file *f, struct lb_err **err)
{
	if (src->n_files >= LOAD_MAX_ENTRIES)
		return lb_err_set(err, E2BIG, "archive has more than %d files", LOAD_MAX_ENTRIES);
	struct load_file *v = realloc(src->files, (src->n_files + 1) * sizeof(*v));
	if (!v)
		return lb_err_set(err, ENOMEM, "read archive");
	src->files = v;
	v[src->n_files++] = *f;
	return 0;
}

/* A member that is a blob, for the progress display: named by its digest ("blobs/sha256/<hex>",
 * docker's "<hex>.tar", "<hex>/layer.tar") or its config ("<hex>.json"). What the digest really
 * is gets verified later; this is only a label. */
static bool member_blob(const char *path, char digest[LB_DIGEST_BUF], const char **what)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (!strcmp(base, "layer.tar") && base - path == 65)
		base = path;
	size_t n = strspn(base, "0123456789abcdef");
	if (n != 64 || (base[n] && strcmp(base + n, ".json") && strcmp(base + n, ".tar") &&
			strcmp(base + n, "/layer.tar")))
		return false;
	*what = !strcmp(base + n, ".json") ? "config" : "blob";
	snprintf(digest, LB_DIGEST_BUF, "sha256:%.64s", base);
	return true;
}

static void report(struct load_src *src, struct lb_image_progress *p, size_t len)
{
	p->done += len;
	if (p->digest && src->opts->progress)
		src->opts->progress(p, src->opts->progress_ctx);
}

static int stage_data(struct load_src *src, struct archive *a, struct archive_entry *e,
		      struct load_file *f, struct lb_err **err)
{
	struct lb_blob_writer *w = NULL;
	int64_t want = archive_entry_size_is_set(e) ? archive_entry_size(e) : -1;
	char label[LB_DIGEST_BUF];
	struct lb_image_progress p = {.total = want > 0 ? (uint64_t)want : 0};
	const void *buf;
	size_t len;
	la_int64_t off;
	int r;

	if (member_blob(f->path, label, &p.what))
		p.digest = label;
	if (lb_blob_writer_begin(src->t, NULL, want, &w, err) < 0)
		return -1;
	report(src, &p, 0);
	while ((r = archive_read_data_block(a, &buf, &len, &off)) == ARCHIVE_OK) {
		if (lb_blob_writer_write(w, buf, len, err) < 0) {
			lb_blob_writer_abort(w);
			return -1;
		}
		report(src, &p, len);
	}
	if (r != ARCHIVE_EOF) {
		lb_blob_writer_abort(w);
		return lb_err_set(err, 0, "read %s: %s", f->path, archive_error_string(a));
	}
	if (lb_blob_writer_finish(w, f->digest, &f->size, err) < 0)
		return lb_err_wrap(err, "archive member %s (truncated archive?)", f->path);
	return 0;
}

static int stage_entry(struct load_src *src, struct archive *a, struct archive_entry *e,
		       struct lb_err **err)
{
	struct load_file f = {0};
	const char *hl = archive_entry_hardlink(e);
	mode_t type = archive_entry_filetype(e);

	if (!hl && type != AE_IFREG && type != AE_IFLNK)
		return 0;
	if (!(f.path = path_norm(NULL, archive_entry_pathname(e))))
		return lb_err_set(err, ENOMEM, "read archive");
	if (hl) {
		f.link = path_norm(NULL, hl);
	} else if (type == AE_IFLNK) {
		_cleanup_free_ char *dir = dir_of(f.path);
		f.link = dir ? path_norm(dir, archive_entry_symlink(e) ?: "") : NULL;
	} else if (stage_data(src, a, e, &f, err) < 0) {
		free(f.path);
		return -1;
	}
	if ((hl || type == AE_IFLNK) && !f.link) {
		free(f.path);
		return lb_err_set(err, ENOMEM, "read archive");
	}
	if (add_file(src, &f, err) < 0) {
		free(f.path);
		free(f.link);
		return -1;
	}
	return 0;
}

int load_tar_stage(struct load_src *src, int fd, struct lb_err **err)
{
	_cleanup_archive_ struct archive *a = archive_read_new();
	struct archive_entry *e;
	int r;

	if (!a)
		return lb_err_set(err, ENOMEM, "read archive");
	archive_read_support_filter_all(a);
	archive_read_support_format_tar(a);
	if (archive_read_open_fd(a, fd, 1 << 16) != ARCHIVE_OK)
		return lb_err_set(err, 0, "not a tar archive: %s", archive_error_string(a));
	while ((r = archive_read_next_header(a, &e)) == ARCHIVE_OK)
		if (stage_entry(src, a, e, err) < 0)
			return -1;
	if (r != ARCHIVE_EOF)
		return lb_err_set(err, 0, "read archive: %s", archive_error_string(a));
	return 0;
}

/* Finds path, following the archive's own symlinks and hardlinks (docker save links duplicate
 * layers to their first copy). */
const struct load_file *load_src_lookup(const struct load_src *src, const char *path)
{
	_cleanup_free_ char *want = path_norm(NULL, path);

	for (int depth = 0; want && depth <= LOAD_MAX_LINK_DEPTH; depth++) {
		const struct load_file *hit = NULL;
		for (size_t i = src->n_files; i-- > 0;) {
			if (strcmp(src->files[i].path, want) == 0) {
				hit = &src->files[i];
				break;
			}
		}
		if (!hit || !hit->link)
			return hit;
		free(want);
		want = strdup(hit->link);
	}
	return NULL;
}

static void md_freep(struct lb_sha256 **md)
{
	lb_sha256_free(*md);
}

int load_diff_id(struct load_src *src, const char *digest, char diff_id[LB_DIGEST_BUF],
		 struct lb_err **err)
{
	return lb_layer_diff_id(src->t, digest, diff_id, err);
}

int lb_layer_diff_id(struct lb_store_txn *t, const char *digest, char diff_id[LB_DIGEST_BUF],
		     struct lb_err **err)
{
	_cleanup_close_ int fd = -1;
	_cleanup_archive_ struct archive *a = archive_read_new();
	_cleanup_(md_freep) struct lb_sha256 *md = lb_sha256_new();
	struct archive_entry *e;
	char buf[1 << 16];
	la_ssize_t n;

	if (!a || !md)
		return lb_err_set(err, ENOMEM, "read layer");
	if (lb_store_txn_open(t, digest, &fd, err) < 0)
		return -1;
	archive_read_support_filter_all(a);
	archive_read_support_format_raw(a);
	if (archive_read_open_fd(a, fd, sizeof(buf)) != ARCHIVE_OK ||
	    archive_read_next_header(a, &e) != ARCHIVE_OK)
		return lb_err_set(err, 0, "layer %s: %s", digest, archive_error_string(a));
	while ((n = archive_read_data(a, buf, sizeof(buf))) > 0)
		lb_sha256_update(md, buf, (size_t)n);
	if (n < 0)
		return lb_err_set(err, 0, "layer %s: %s", digest, archive_error_string(a));
	store_sha256_digest(LB_TAKE_PTR(md), diff_id);
	return 0;
}
