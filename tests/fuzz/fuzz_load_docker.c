/*
 * Fuzz target: the manifest.json of a `docker save` archive (load_docker in
 * src/image/load_docker.c, through its private header image/load_internal.h), as `lbbox load`
 * reaches it: the archive's files are staged in a store transaction, manifest.json among them,
 * and load_docker reads it, looks up each entry's Config and Layers in the archive, verifies
 * them, synthesises an OCI manifest and tags it.
 *
 * The fuzz input is manifest.json. Beside it the archive holds real files for the input to point
 * at: a layer tar (plain, gzip-compressed, and a symlink to it), an image config with one diff_id
 * named "<sha256>.json" (classic docker save) and one with two diff_ids named
 * "blobs/sha256/<sha256>" (docker 25+), and the first config again as "config.json" and under a
 * digest name it does not hash to. Each input is loaded three ways, as the CLI can: all
 * images with their names normalised, only the one tagged "busybox:latest", and under a name of
 * the caller's. Nothing is committed: the store stays empty, each transaction is dropped.
 *
 * Properties checked besides the sanitizers: a successful load yields images whose synthesised
 * manifests are staged, parse as OCI image manifests, and name only the archive's configs and
 * layer files as config and layers (one or two layers, as the configs have diff_ids).
 */
#include <archive.h>
#include <archive_entry.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "image/load_internal.h"
#include "lbbox/base/hash.h"
#include "lbbox/image/ref.h"
#include "lbbox/image/store.h"

struct fixture {
	const char *path;
	const char *link; /* a symlink in the archive: no content */
	char *data;
	size_t len;
};

enum { F_TAR, F_GZ, F_LINK, F_CONFIG1, F_CONFIG2, F_ALIAS, F_LIAR, F_MANIFEST, N_FILES };

static struct fixture files[N_FILES];
static struct lb_store *store;
static bool verbose; /* FUZZ_VERBOSE=1: what each load did, for writing seeds */

/*
 * The layer: a ustar archive of one file "hello", written byte by byte so that its sha256 (the
 * diff_id, hence the configs' names that seeds refer to) never depends on a library's version.
 * tests/fuzz/make_seeds.py builds the same bytes.
 */
static void make_tar(struct fixture *f)
{
	static const char hello[] = "hello from a docker layer\n";
	unsigned sum = 0;
	char *h = calloc(1, 2048);
	if (!h)
		fuzz_setup_fail("calloc");
	memcpy(h, "hello", 5);
	memcpy(h + 100, "0000644", 7);
	memcpy(h + 108, "0000000", 7);
	memcpy(h + 116, "0000000", 7);
	snprintf(h + 124, 12, "%011o", (unsigned)sizeof(hello) - 1);
	memcpy(h + 136, "00000000000", 11);
	memset(h + 148, ' ', 8);
	h[156] = '0';
	memcpy(h + 257,
	       "ustar\0"
	       "00",
	       8);
	memcpy(h + 265, "root", 4);
	memcpy(h + 297, "root", 4);
	for (int i = 0; i < 512; i++)
		sum += (unsigned char)h[i];
	snprintf(h + 148, 8, "%06o", sum);
	memcpy(h + 512, hello, sizeof(hello) - 1);
	f->data = h;
	f->len = 2048; /* header, data block, end-of-archive marker */
}

static la_ssize_t mem_write(struct archive *a, void *ctx, const void *buf, size_t len)
{
	struct fixture *f = ctx;
	char *p = realloc(f->data, f->len + len);
	(void)a;
	if (!p)
		return -1;
	memcpy(p + f->len, buf, len);
	f->data = p;
	f->len += len;
	return (la_ssize_t)len;
}

/* The same layer gzip-compressed, as docker save writes it for a compressed layer. */
static void make_gzip(struct fixture *f, const struct fixture *tar)
{
	struct archive *a = archive_write_new();
	struct archive_entry *e = archive_entry_new();
	archive_write_add_filter_gzip(a);
	archive_write_set_format_raw(a);
	archive_write_set_bytes_in_last_block(a, 1);
	if (archive_write_open(a, f, NULL, mem_write, NULL) != ARCHIVE_OK)
		fuzz_setup_fail(archive_error_string(a));
	archive_entry_set_pathname(e, "layer.tar");
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_size(e, (la_int64_t)tar->len);
	if (archive_write_header(a, e) != ARCHIVE_OK ||
	    archive_write_data(a, tar->data, tar->len) != (la_ssize_t)tar->len ||
	    archive_write_close(a))
		fuzz_setup_fail(archive_error_string(a));
	archive_entry_free(e);
	archive_write_free(a);
}

static void make_config(struct fixture *f, const char *dir, const char *ext, const char *diff_id,
			int layers)
{
	char hex[65], *path = NULL;
	if (asprintf(&f->data,
		     "{\"architecture\": \"amd64\", \"os\": \"linux\", \"config\": {\"Env\": "
		     "[\"PATH=/bin\"], \"Cmd\": [\"sh\"]}, \"rootfs\": {\"type\": \"layers\", "
		     "\"diff_ids\": [\"%s\"%s%s%s]}}",
		     diff_id, layers > 1 ? ", \"" : "", layers > 1 ? diff_id : "",
		     layers > 1 ? "\"" : "") < 0)
		fuzz_setup_fail("config");
	f->len = strlen(f->data);
	lb_sha256_hex(f->data, f->len, hex);
	if (asprintf(&path, "%s%s%s", dir, hex, ext) < 0)
		fuzz_setup_fail("config path");
	f->path = path;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char hex[65], diff_id[LB_DIGEST_BUF], root[4200];
	struct lb_err *err = NULL;

	files[F_TAR].path = "layers/0/layer.tar";
	make_tar(&files[F_TAR]);
	files[F_GZ].path = "layers/1/layer.tar.gz";
	make_gzip(&files[F_GZ], &files[F_TAR]);
	files[F_LINK].path = "layers/2/layer.tar";
	files[F_LINK].link = files[F_TAR].path;
	lb_sha256_hex(files[F_TAR].data, files[F_TAR].len, hex);
	snprintf(diff_id, sizeof(diff_id), "sha256:%s", hex);
	make_config(&files[F_CONFIG1], "", ".json", diff_id, 1);
	make_config(&files[F_CONFIG2], "blobs/sha256/", "", diff_id, 2);
	/* the first config under a plain name, and under a digest name it does not hash to */
	files[F_ALIAS] =
	    (struct fixture){"config.json", NULL, files[F_CONFIG1].data, files[F_CONFIG1].len};
	files[F_LIAR] = (struct fixture){
	    "blobs/sha256/0000000000000000000000000000000000000000000000000000000000000000", NULL,
	    files[F_CONFIG1].data, files[F_CONFIG1].len};
	files[F_MANIFEST].path = "manifest.json";
	verbose = getenv("FUZZ_VERBOSE") != NULL;
	if (verbose) /* the names seeds refer to */
		for (int i = 0; i < F_MANIFEST; i++)
			fprintf(stderr, "fuzz_load_docker: archive file %s\n", files[i].path);
	snprintf(root, sizeof(root), "%s/store", fuzz_scratch("fuzz-load-docker"));
	if (lb_store_open(root, &store, &err) < 0)
		fuzz_setup_fail(err->msg);
	return 0;
}

/* Names in the archive are stored canonical, as lbbox-image load does. */
static int normalize(const char *in, char **out, void *ctx, struct lb_err **err)
{
	struct lb_image_ref ref;
	(void)ctx;
	if (lb_image_ref_parse(in, &ref, err) < 0)
		return -1;
	int r = lb_image_ref_canonical(&ref, out, err);
	lb_image_ref_clear(&ref);
	return r;
}

static bool staged_as(const struct load_src *src, const char *digest, int a, int b)
{
	return digest &&
	       (!strcmp(digest, src->files[a].digest) || !strcmp(digest, src->files[b].digest));
}

static void check_result(struct load_src *src)
{
	for (size_t i = 0; i < src->result.n; i++) {
		const struct lb_store_image *img = &src->result.images[i];
		char *buf = NULL;
		size_t len = 0;
		struct lb_manifest *m = NULL;
		struct lb_err *err = NULL;
		FUZZ_CHECK(
		    lb_store_txn_read(src->t, img->digest, LB_MANIFEST_MAX, &buf, &len, &err) == 0,
		    "image %zu: manifest %s not staged", i, img->digest);
		FUZZ_CHECK(lb_manifest_parse(buf, len, &m, &err) == 0,
			   "image %zu: synthesised manifest does not parse: %s", i,
			   err ? err->msg : "?");
		FUZZ_CHECK(m->n_layers == 1 || m->n_layers == 2, "image %zu: %zu layers", i,
			   m->n_layers);
		FUZZ_CHECK(staged_as(src, m->config.digest, F_CONFIG1, F_CONFIG2),
			   "image %zu: config %s is no config of the archive", i, m->config.digest);
		for (size_t l = 0; l < m->n_layers; l++)
			FUZZ_CHECK(staged_as(src, m->layers[l].digest, F_TAR, F_GZ),
				   "image %zu: layer %s is no layer of the archive", i,
				   m->layers[l].digest);
		lb_manifest_free(m);
		free(buf);
	}
}

static void load(const uint8_t *data, size_t size, const struct lb_load_opts *opts)
{
	struct load_file lf[N_FILES] = {0};
	struct load_src src = {.opts = opts, .dir_fd = -1, .files = lf, .n_files = N_FILES};
	struct lb_err *err = NULL;

	if (lb_store_txn_begin(store, &src.t, &err) < 0)
		fuzz_setup_fail(err->msg);
	/* staged as load_tar_stage stages an archive's files: content by digest */
	for (int i = 0; i < N_FILES; i++) {
		const void *buf = i == F_MANIFEST ? (const void *)data : files[i].data;
		size_t len = i == F_MANIFEST ? size : files[i].len;
		lf[i].path = (char *)files[i].path;
		lf[i].link = (char *)files[i].link;
		if (files[i].link)
			continue;
		if (lb_store_txn_put_buf(src.t, buf, len, lf[i].digest, &err) < 0)
			fuzz_setup_fail(err->msg);
		lf[i].size = len;
	}
	int r = load_docker(&src, &err);
	if (r == 0)
		check_result(&src);
	else
		FUZZ_CHECK(err && err->msg, "a refused manifest.json without an error");
	if (verbose)
		fprintf(stderr, "fuzz_load_docker: %s\n", r == 0 ? "loaded" : err->msg);
	lb_err_free(&err);
	lb_load_result_clear(&src.result);
	lb_store_txn_free(src.t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct lb_load_opts all = {.normalize = normalize},
				  one = {.normalize = normalize, .tag = "busybox:latest"},
				  named = {.normalize = normalize, .name = "localhost/fuzz:1"};

	load(data, size, &all);
	load(data, size, &one);
	load(data, size, &named);
	return 0;
}
