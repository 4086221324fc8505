/*
 * The layer's byte stream. A layer's DiffID is the sha256 of its *uncompressed* tar, but a tar
 * reader only hands out entry contents, so decompression is a stage of its own: a first libarchive
 * reader (gzip / zstd filters, "raw" format) turns the blob into the plain tar stream; every block
 * of it goes through the hash and then, through archive_read_open() callbacks, to a second reader
 * that only understands tar. One pass over the blob, no temporary file, no extra copy.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unpack_internal.h"
#include "lbbox/base/hash.h"

#define BLOCK_SIZE (1 << 20)

struct unpack_stream {
	struct archive *raw; /* blob -> uncompressed tar bytes */
	struct archive *tar; /* uncompressed tar bytes -> entries */
	struct lb_sha256 *md;
	uint64_t size;
	const void *pending; /* first block, read ahead to check for foreign compression */
	size_t pending_len;
	char *raw_error; /* decompression failure, reported instead of the tar reader's */
};

enum compression { COMP_NONE, COMP_GZIP, COMP_ZSTD, COMP_UNKNOWN };

static const char *comp_name(enum compression c)
{
	static const char *names[] = {"uncompressed", "gzip", "zstd", "unknown"};
	return names[c];
}

/* The compression a layer media type declares; COMP_UNKNOWN for anything not a layer. */
static enum compression media_type_compression(const char *mt)
{
	static const struct {
		const char *type;
		enum compression comp;
	} known[] = {
	    {"application/vnd.oci.image.layer.v1.tar", COMP_NONE},
	    {"application/vnd.oci.image.layer.v1.tar+gzip", COMP_GZIP},
	    {"application/vnd.oci.image.layer.v1.tar+zstd", COMP_ZSTD},
	    {"application/vnd.oci.image.layer.nondistributable.v1.tar", COMP_NONE},
	    {"application/vnd.oci.image.layer.nondistributable.v1.tar+gzip", COMP_GZIP},
	    {"application/vnd.oci.image.layer.nondistributable.v1.tar+zstd", COMP_ZSTD},
	    {"application/vnd.docker.image.rootfs.diff.tar", COMP_NONE},
	    {"application/vnd.docker.image.rootfs.diff.tar.gzip", COMP_GZIP},
	    {"application/vnd.docker.image.rootfs.foreign.diff.tar.gzip", COMP_GZIP},
	};
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strcmp(mt, known[i].type) == 0)
			return known[i].comp;
	return COMP_UNKNOWN;
}

static enum compression detected_compression(struct archive *raw)
{
	switch (archive_filter_code(raw, 0)) {
	case ARCHIVE_FILTER_NONE:
		return COMP_NONE;
	case ARCHIVE_FILTER_GZIP:
		return COMP_GZIP;
	case ARCHIVE_FILTER_ZSTD:
		return COMP_ZSTD;
	default:
		return COMP_UNKNOWN;
	}
}

/* Compressions that pass through undecoded (no filter for them is enabled) and would otherwise
 * surface as a puzzling "not a tar archive". A ustar/pax/gnu header is never mistaken for one. */
static const char *foreign_compression(const unsigned char *p, size_t n)
{
	static const struct {
		const char *name;
		const char *magic;
		size_t len;
	} magics[] = {
	    {"bzip2", "BZh", 3},
	    {"xz",
	     "\xfd"
	     "7zXZ\0",
	     6},
	    {"lz4", "\x04\x22\x4d\x18", 4},
	    {"lzip", "LZIP\x01", 5},
	    {"compress (.Z)", "\x1f\x9d", 2},
	};
	if (n >= 262 && memcmp(p + 257, "ustar", 5) == 0)
		return NULL;
	for (size_t i = 0; i < sizeof(magics) / sizeof(magics[0]); i++)
		if (n >= magics[i].len && memcmp(p, magics[i].magic, magics[i].len) == 0)
			return magics[i].name;
	return NULL;
}

static int raw_fail(struct unpack_stream *s)
{
	free(s->raw_error);
	s->raw_error =
	    strdup(archive_error_string(s->raw) ? archive_error_string(s->raw) : "read error");
	return -1;
}

/* Next block of the uncompressed stream, hashed on the way; *len 0 at the end. */
static int next_block(struct unpack_stream *s, const void **buf, size_t *len)
{
	int64_t offset;
	int r;

	do {
		r = archive_read_data_block(s->raw, buf, len, &offset);
	} while (r == ARCHIVE_OK && *len == 0);
	if (r == ARCHIVE_EOF) {
		*len = 0;
		return 0;
	}
	if (r < ARCHIVE_WARN)
		return raw_fail(s);
	lb_sha256_update(s->md, *buf, *len);
	s->size += *len;
	return 0;
}

static la_ssize_t tar_read_cb(struct archive *a, void *client, const void **buf)
{
	struct unpack_stream *s = client;
	size_t len;

	if (s->pending) {
		*buf = s->pending;
		len = s->pending_len;
		s->pending = NULL;
		return (la_ssize_t)len;
	}
	if (next_block(s, buf, &len) < 0) {
		archive_set_error(a, EIO, "%s", s->raw_error ? s->raw_error : "read error");
		return -1;
	}
	return (la_ssize_t)len;
}

static int open_raw(struct unpack_stream *s, int fd, struct lb_err **err)
{
	struct archive_entry *e;

	s->raw = archive_read_new();
	s->md = lb_sha256_new();
	if (!s->raw || !s->md)
		return lb_err_set(err, ENOMEM, "set up layer decompression");
	if (archive_read_support_filter_gzip(s->raw) != ARCHIVE_OK ||
	    archive_read_support_filter_zstd(s->raw) != ARCHIVE_OK ||
	    archive_read_support_format_raw(s->raw) != ARCHIVE_OK)
		return lb_err_set(err, 0, "set up layer decompression: %s",
				  archive_error_string(s->raw));
	if (archive_read_open_fd(s->raw, fd, BLOCK_SIZE) != ARCHIVE_OK) {
		/* the raw format takes any byte: only an empty input is not recognised */
		if (archive_errno(s->raw) == EILSEQ) /* libarchive's ARCHIVE_ERRNO_FILE_FORMAT */
			return lb_err_set(err, 0, "layer is empty: not a tar archive");
		return lb_err_set(err, 0, "read layer: %s", archive_error_string(s->raw));
	}
	int r = archive_read_next_header(s->raw, &e);
	if (r == ARCHIVE_EOF)
		return lb_err_set(err, 0, "layer is empty: not a tar archive");
	if (r < ARCHIVE_WARN)
		return lb_err_set(err, 0, "read layer: %s", archive_error_string(s->raw));
	return 0;
}

static int check_compression(struct unpack_stream *s, const char *media_type, struct lb_err **err)
{
	enum compression found = detected_compression(s->raw);

	if (found == COMP_NONE) {
		const char *foreign = foreign_compression(s->pending, s->pending_len);
		if (foreign)
			return lb_err_set(err, 0,
					  "unsupported layer compression %s (expected tar, "
					  "tar+gzip or tar+zstd)",
					  foreign);
	}
	if (!media_type)
		return 0;
	enum compression declared = media_type_compression(media_type);
	if (declared == COMP_UNKNOWN)
		return lb_err_set(err, 0, "unsupported layer media type '%s'", media_type);
	/* Docker has shipped uncompressed layers under .tar.gzip types: tolerate plain tar. */
	if (found != declared && found != COMP_NONE)
		return lb_err_set(err, 0, "layer media type '%s' does not match its content (%s)",
				  media_type, comp_name(found));
	return 0;
}

int unpack_stream_open(int fd, const char *media_type, struct unpack_stream **out,
		       struct lb_err **err)
{
	struct unpack_stream *s = calloc(1, sizeof(*s));
	if (!s)
		return lb_err_set(err, ENOMEM, "open layer");
	if (open_raw(s, fd, err) < 0)
		goto fail;
	if (next_block(s, &s->pending, &s->pending_len) < 0) {
		lb_err_set(err, 0, "decompress layer: %s", s->raw_error);
		goto fail;
	}
	if (s->pending_len == 0) {
		lb_err_set(err, 0, "layer is empty: not a tar archive");
		goto fail;
	}
	if (check_compression(s, media_type, err) < 0)
		goto fail;
	s->tar = archive_read_new();
	if (!s->tar || archive_read_support_format_tar(s->tar) != ARCHIVE_OK) {
		lb_err_set(err, ENOMEM, "set up tar reader");
		goto fail;
	}
	/* the tar format is recognised here already: a failure means "not a tar" */
	if (archive_read_open(s->tar, s, NULL, tar_read_cb, NULL) != ARCHIVE_OK) {
		unpack_stream_error(s, true, err);
		goto fail;
	}
	*out = s;
	return 0;
fail:
	unpack_stream_free(&s);
	return -1;
}

struct archive *unpack_stream_tar(struct unpack_stream *s)
{
	return s->tar;
}

int unpack_stream_error(struct unpack_stream *s, bool first, struct lb_err **err)
{
	if (s->raw_error)
		return lb_err_set(err, 0, "decompress layer: %s", s->raw_error);
	const char *msg = archive_error_string(s->tar);
	if (first)
		return lb_err_set(err, 0, "layer is not a tar archive: %s", msg ? msg : "unknown");
	return lb_err_set(err, 0, "read layer tar: %s", msg ? msg : "unknown error");
}

int unpack_stream_finish(struct unpack_stream *s, char diff_id[72], uint64_t *tar_size,
			 struct lb_err **err)
{
	const void *buf;
	size_t len = 1;

	/* The tar reader stops at the end marker; the padding after it is part of the DiffID. */
	s->pending = NULL;
	while (len > 0)
		if (next_block(s, &buf, &len) < 0)
			return lb_err_set(err, 0, "decompress layer: %s", s->raw_error);
	memcpy(diff_id, "sha256:", 7);
	lb_sha256_final_hex(s->md, diff_id + 7);
	s->md = NULL;
	*tar_size = s->size;
	return 0;
}

void unpack_stream_free(struct unpack_stream **sp)
{
	struct unpack_stream *s = *sp;
	if (!s)
		return;
	if (s->tar)
		archive_read_free(s->tar);
	if (s->raw)
		archive_read_free(s->raw);
	lb_sha256_free(s->md);
	free(s->raw_error);
	free(s);
	*sp = NULL;
}
