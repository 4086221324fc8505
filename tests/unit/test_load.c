/* Unit tests for `lbbox load`: docker-save archives, OCI archives and OCI layout directories,
 * generated here with libarchive and jansson; every failure must leave the store unchanged. */
#include <archive.h>
#include <archive_entry.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lbbox/image/load.h"
#include "lbbox/image/store.h"
#include "lbbox/base/util.h"

static char work[64], root[96];

static void setup(void)
{
	snprintf(work, sizeof(work), "/tmp/lbbox-load-XXXXXX");
	cr_assert_not_null(mkdtemp(work));
	snprintf(root, sizeof(root), "%s/store", work);
}

static void teardown(void)
{
	struct lb_err *err = NULL;
	lb_rm_rf(work, &err);
	lb_err_free(&err);
}

TestSuite(load, .init = setup, .fini = teardown);

/* ---- inputs ---------------------------------------------------------------------------- */

struct buf {
	char *p;
	size_t n;
};

/* A set of files (path -> bytes, or a symlink) written as a directory or a tar. */
struct fset {
	int n;
	char *path[32];
	char *link[32];
	struct buf data[32];
};

static void fset_put(struct fset *fs, const char *path, const void *data, size_t len)
{
	for (int i = 0; i < fs->n; i++)
		if (strcmp(fs->path[i], path) == 0) {
			free(fs->data[i].p);
			fs->data[i].p = malloc(len + 1);
			memcpy(fs->data[i].p, data, len);
			fs->data[i].n = len;
			return;
		}
	cr_assert_lt(fs->n, 32);
	fs->path[fs->n] = strdup(path);
	fs->link[fs->n] = NULL;
	fs->data[fs->n].p = malloc(len + 1);
	memcpy(fs->data[fs->n].p, data, len);
	fs->data[fs->n].n = len;
	fs->n++;
}

static struct buf *fset_get(struct fset *fs, const char *path)
{
	for (int i = 0; i < fs->n; i++)
		if (strcmp(fs->path[i], path) == 0)
			return &fs->data[i];
	cr_assert_fail("no %s", path);
	return NULL;
}

static void fset_del(struct fset *fs, const char *path)
{
	for (int i = 0; i < fs->n; i++)
		if (strcmp(fs->path[i], path) == 0) {
			free(fs->path[i]);
			free(fs->link[i]);
			free(fs->data[i].p);
			fs->n--;
			fs->path[i] = fs->path[fs->n];
			fs->link[i] = fs->link[fs->n];
			fs->data[i] = fs->data[fs->n];
			return;
		}
}

static void fset_free(struct fset *fs)
{
	while (fs->n)
		fset_del(fs, fs->path[0]);
}

static void sha256(const void *data, size_t len, char out[LB_DIGEST_BUF])
{
	unsigned char md[32];
	unsigned int n = 0;
	EVP_Digest(data, len, md, &n, EVP_sha256(), NULL);
	strcpy(out, "sha256:");
	for (int i = 0; i < 32; i++)
		sprintf(out + 7 + 2 * i, "%02x", md[i]);
}

static la_ssize_t buf_write(struct archive *a, void *ctx, const void *data, size_t len)
{
	struct buf *b = ctx;
	b->p = realloc(b->p, b->n + len);
	memcpy(b->p + b->n, data, len);
	b->n += len;
	return (la_ssize_t)len;
}

/* A tar of fs in memory, gzip-compressed when gzip. */
static struct buf tar_of(struct fset *fs, bool gzip)
{
	struct buf out = {0};
	struct archive *a = archive_write_new();
	archive_write_set_format_pax_restricted(a);
	if (gzip)
		archive_write_add_filter_gzip(a);
	archive_write_set_bytes_in_last_block(a, 1);
	cr_assert_eq(archive_write_open2(a, &out, NULL, buf_write, NULL, NULL), ARCHIVE_OK);
	for (int i = 0; i < fs->n; i++) {
		struct archive_entry *e = archive_entry_new();
		archive_entry_set_pathname(e, fs->path[i]);
		archive_entry_set_mtime(e, 1700000000, 0);
		if (fs->link[i]) {
			archive_entry_set_filetype(e, AE_IFLNK);
			archive_entry_set_perm(e, 0777);
			archive_entry_set_symlink(e, fs->link[i]);
		} else {
			archive_entry_set_filetype(e, AE_IFREG);
			archive_entry_set_perm(e, 0644);
			archive_entry_set_size(e, (la_int64_t)fs->data[i].n);
		}
		cr_assert_eq(archive_write_header(a, e), ARCHIVE_OK);
		if (!fs->link[i] && fs->data[i].n)
			archive_write_data(a, fs->data[i].p, fs->data[i].n);
		archive_entry_free(e);
	}
	archive_write_close(a);
	archive_write_free(a);
	return out;
}

static void write_file(const char *path, const void *data, size_t len)
{
	struct lb_err *err = NULL;
	char *dir = strdup(path);
	*strrchr(dir, '/') = '\0';
	cr_assert_eq(lb_mkdir_p(dir, 0755, &err), 0);
	free(dir);
	cr_assert_eq(lb_write_fileat(AT_FDCWD, path, data, len, O_CREAT | O_TRUNC, 0644, &err), 0);
}

static char *fset_to_dir(struct fset *fs, const char *name)
{
	char *dir = NULL, path[512];
	cr_assert_gt(asprintf(&dir, "%s/%s", work, name), 0);
	for (int i = 0; i < fs->n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, fs->path[i]);
		write_file(path, fs->data[i].p, fs->data[i].n);
	}
	return dir;
}

static char *fset_to_tar(struct fset *fs, const char *name, bool gzip)
{
	char *path = NULL;
	struct buf t = tar_of(fs, gzip);
	cr_assert_gt(asprintf(&path, "%s/%s", work, name), 0);
	write_file(path, t.p, t.n);
	free(t.p);
	return path;
}

/* A layer: a tar holding one file whose content is tag (padded with big bytes). */
static struct buf layer_of(const char *tag, size_t big, bool gzip)
{
	struct fset l = {0};
	size_t len = strlen(tag) + big;
	char *data = malloc(len);
	memcpy(data, tag, strlen(tag));
	for (size_t i = strlen(tag); i < len; i++)
		data[i] = (char)(i * 2654435761u >> 13);
	fset_put(&l, "etc/hello.txt", data, len);
	free(data);
	struct buf t = tar_of(&l, gzip);
	fset_free(&l);
	return t;
}

static void put_blob(struct fset *fs, const void *data, size_t len, char digest[LB_DIGEST_BUF])
{
	char path[96];
	sha256(data, len, digest);
	snprintf(path, sizeof(path), "blobs/sha256/%s", digest + 7);
	fset_put(fs, path, data, len);
}

static void put_json_blob(struct fset *fs, json_t *j, char digest[LB_DIGEST_BUF], size_t *size)
{
	char *s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	*size = strlen(s);
	put_blob(fs, s, *size, digest);
	free(s);
}

struct img {
	char manifest[LB_DIGEST_BUF], config[LB_DIGEST_BUF], layer[LB_DIGEST_BUF];
	size_t msize, lsize;
};

static json_t *config_json(const char *diff_id)
{
	return json_pack("{s:s, s:s, s:{s:[s], s:[s], s:s}, s:{s:s, s:[s]}}", "os", "linux",
			 "architecture", "amd64", "config", "Env", "PATH=/bin", "Cmd", "sh",
			 "WorkingDir", "/", "rootfs", "type", "layers", "diff_ids", diff_id);
}

/* Adds an image (one layer whose content is tag) to the layout; layer_mt NULL: plain tar. pad
 * adds an annotation of that many bytes to the manifest. */
static void oci_image(struct fset *fs, const char *tag, size_t big, const char *layer_mt,
		      size_t pad, struct img *out)
{
	struct buf layer = layer_of(tag, big, false);
	size_t csize;
	put_blob(fs, layer.p, layer.n, out->layer);
	out->lsize = layer.n;
	free(layer.p);
	put_json_blob(fs, config_json(out->layer), out->config, &csize);
	json_t *m = json_pack("{s:i, s:s, s:{s:s, s:s, s:I}, s:[{s:s, s:s, s:I}]}", "schemaVersion",
			      2, "mediaType", LB_MT_OCI_MANIFEST, "config", "mediaType",
			      LB_MT_OCI_CONFIG, "digest", out->config, "size", (json_int_t)csize,
			      "layers", "mediaType", layer_mt ? layer_mt : LB_MT_OCI_LAYER,
			      "digest", out->layer, "size", (json_int_t)out->lsize);
	if (pad) {
		char *p = malloc(pad + 1);
		memset(p, 'x', pad);
		p[pad] = '\0';
		json_object_set_new(m, "annotations", json_pack("{s:s}", "pad", p));
		free(p);
	}
	put_json_blob(fs, m, out->manifest, &out->msize);
}

static json_t *entry(const struct img *im, const char *ref)
{
	json_t *e = json_pack("{s:s, s:s, s:I}", "mediaType", LB_MT_OCI_MANIFEST, "digest",
			      im->manifest, "size", (json_int_t)im->msize);
	if (ref)
		json_object_set_new(e, "annotations", json_pack("{s:s}", LB_ANNOT_REF_NAME, ref));
	return e;
}

static void oci_index(struct fset *fs, json_t *manifests)
{
	json_t *ix = json_pack("{s:i, s:s, s:o}", "schemaVersion", 2, "mediaType", LB_MT_OCI_INDEX,
			       "manifests", manifests);
	char *s = json_dumps(ix, JSON_COMPACT);
	json_decref(ix);
	fset_put(fs, "oci-layout", "{\"imageLayoutVersion\":\"1.0.0\"}", 30);
	fset_put(fs, "index.json", s, strlen(s));
	free(s);
}

/* Layout with images "one" and "two". */
static void two_image_layout(struct fset *fs, struct img *one, struct img *two)
{
	oci_image(fs, "one", 100, NULL, 0, one);
	oci_image(fs, "two", 100, NULL, 0, two);
	oci_index(fs, json_pack("[o, o]", entry(one, "one"), entry(two, "two")));
}

/* ---- store observations ------------------------------------------------------------------ */

static struct lb_store *open_store(void)
{
	struct lb_store *s = NULL;
	struct lb_err *err = NULL;
	cr_assert_eq(lb_store_open(root, &s, &err), 0, "%s", err ? err->msg : "");
	return s;
}

static char *lst;
static size_t lst_len;
static int lst_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	const char *rel = path + strlen(root);
	if (type != FTW_F || strcmp(rel, "/.lock") == 0)
		return 0;
	char line[512];
	int n = snprintf(line, sizeof(line), "%s %lld\n", rel, (long long)st->st_size);
	lst = realloc(lst, lst_len + (size_t)n + 1);
	memcpy(lst + lst_len, line, (size_t)n + 1);
	lst_len += (size_t)n;
	return 0;
}

/* Every file of the store, tmp/ included (it must be empty again after a failure). */
static char *listing(void)
{
	lst = NULL;
	lst_len = 0;
	nftw(root, lst_one, 16, FTW_PHYS);
	return lst ? lst : strdup("");
}

static size_t blob_count(void)
{
	char path[160];
	snprintf(path, sizeof(path), "%s/blobs/sha256", root);
	DIR *d = opendir(path);
	size_t n = 0;
	cr_assert_not_null(d);
	for (struct dirent *de; (de = readdir(d));)
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

static void expect_image(struct lb_store *s, const char *name, const char *manifest)
{
	struct lb_store_image img = {0};
	struct lb_manifest *m = NULL;
	struct lb_image_config *c = NULL;
	struct lb_err *err = NULL;
	cr_assert_eq(lb_store_resolve(s, name, &img, &err), 0, "%s", err ? err->msg : "");
	if (manifest)
		cr_assert_str_eq(img.digest, manifest);
	lb_store_image_clear(&img);
	cr_assert_eq(lb_store_image_manifest(s, name, NULL, &m, &c, &err), 0, "%s",
		     err ? err->msg : "");
	cr_assert(lb_store_blob_exists(s, m->config.digest));
	for (size_t i = 0; i < m->n_layers; i++)
		cr_assert(lb_store_blob_exists(s, m->layers[i].digest));
	cr_assert_eq(m->n_layers, c->n_diff_ids);
	cr_assert_str_eq(c->cmd[0], "sh");
	lb_manifest_free(m);
	lb_image_config_free(c);
}

static void expect_absent(struct lb_store *s, const char *name)
{
	struct lb_store_image img = {0};
	struct lb_err *err = NULL;
	cr_assert_lt(lb_store_resolve(s, name, &img, &err), 0, "%s present", name);
	lb_err_free(&err);
}

static void expect_nothing_to_prune(struct lb_store *s)
{
	struct lb_store_prune_stats st = {0};
	struct lb_err *err = NULL;
	cr_assert_eq(lb_store_prune(s, &st, &err), 0, "%s", err ? err->msg : "");
	cr_assert_eq(st.blobs, 0, "%zu orphan blobs", st.blobs);
}

/* ---- OCI -------------------------------------------------------------------------------- */

Test(load, oci_dir_all_images)
{
	struct fset fs = {0};
	struct img one, two;
	two_image_layout(&fs, &one, &two);
	char *dir = fset_to_dir(&fs, "layout");
	struct lb_store *s = open_store();
	struct lb_load_result r = {0};
	struct lb_err *err = NULL;

	cr_assert_eq(lb_load_oci_dir(s, dir, NULL, &r, &err), 0, "%s", err ? err->msg : "");
	cr_assert_eq(r.n, 2);
	cr_assert_str_eq(r.images[0].name, "one");
	cr_assert_str_eq(r.images[0].digest, one.manifest);
	expect_image(s, "one", one.manifest);
	expect_image(s, "two", two.manifest);
	cr_assert_eq(blob_count(), 6);
	expect_nothing_to_prune(s);
	lb_load_result_clear(&r);
	/* Loading again is idempotent. */
	cr_assert_eq(lb_load_oci_dir(s, dir, NULL, &r, &err), 0, "%s", err ? err->msg : "");
	struct lb_store_image *v = NULL;
	size_t n = 0;
	cr_assert_eq(lb_store_list(s, &v, &n, &err), 0);
	cr_assert_eq(n, 2);
	lb_store_images_free(v, n);
	lb_load_result_clear(&r);
	lb_store_close(s);
	free(dir);
	fset_free(&fs);
}

Test(load, oci_dir_tag_selection)
{
	struct fset fs = {0};
	struct img one, two;
	two_image_layout(&fs, &one, &two);
	char *dir = fset_to_dir(&fs, "layout"), *arg = NULL, *d = NULL, *tag = NULL;
	struct lb_store *s = open_store();
	struct lb_load_result r = {0};
	struct lb_err *err = NULL;

	cr_assert_gt(asprintf(&arg, "%s:two", dir), 0);
	cr_assert_eq(lb_load_split_oci_dir(arg, &d, &tag, &err), 0);
	cr_assert_str_eq(d, dir);
	cr_assert_str_eq(tag, "two");
	struct lb_load_opts o = {.tag = tag, .name = "local/two:latest"};
	cr_assert_eq(lb_load_oci_dir(s, d, &o, &r, &err), 0, "%s", err ? err->msg : "");
	cr_assert_eq(r.n, 1);
	expect_image(s, "local/two:latest", two.manifest);
	expect_absent(s, "one");
	expect_absent(s, "two");
	cr_assert_eq(blob_count(), 3);
	lb_load_result_clear(&r);

	char *before = listing();
	struct lb_load_opts missing = {.tag = "three"};
	cr_assert_lt(lb_load_oci_dir(s, d, &missing, &r, &err), 0);
	cr_assert(strstr(err->msg, "no image tagged 'three'"), "%s", err->msg);
	lb_err_free(&err);
	char *after = listing();
	cr_assert_str_eq(before, after);

	/* A plain directory path has no tag. */
	free(d);
	free(tag);
	cr_assert_eq(lb_load_split_oci_dir(dir, &d, &tag, &err), 0);
	cr_assert_null(tag);
	cr_assert_str_eq(d, dir);
	free(before);
	free(after);
	free(d);
	free(arg);
	free(dir);
	lb_store_close(s);
	fset_free(&fs);
}

Test(load, oci_archive_and_index_platform)
{
	struct fset fs = {0};
	struct img amd, arm;
	oci_image(&fs, "amd", 10, NULL, 0, &amd);
	oci_image(&fs, "arm", 10, NULL, 0, &arm);
	/* A multi-platform index blob with an attestation entry, named from index.json. */
	json_t *ea = entry(&amd, NULL), *er = entry(&arm, NULL), *att = entry(&arm, NULL);
	json_object_set_new(ea, "platform",
			    json_pack("{s:s, s:s}", "os", "linux", "architecture", "amd64"));
	json_object_set_new(
	    er, "platform",
	    json_pack("{s:s, s:s, s:s}", "os", "linux", "architecture", "arm64", "variant", "v8"));
	json_object_set_new(att, "platform",
			    json_pack("{s:s, s:s}", "os", "unknown", "architecture", "unknown"));
	char ixd[LB_DIGEST_BUF];
	size_t ixsize;
	put_json_blob(&fs,
		      json_pack("{s:i, s:s, s:[o, o, o]}", "schemaVersion", 2, "mediaType",
				LB_MT_OCI_INDEX, "manifests", att, er, ea),
		      ixd, &ixsize);
	oci_index(&fs, json_pack("[{s:s, s:s, s:I, s:{s:s}}]", "mediaType", LB_MT_OCI_INDEX,
				 "digest", ixd, "size", (json_int_t)ixsize, "annotations",
				 LB_ANNOT_CONTAINERD, "docker.io/library/multi:1"));
	char *tar = fset_to_tar(&fs, "oci.tar.gz", true);
	struct lb_store *s = open_store();
	struct lb_load_result r = {0};
	struct lb_err *err = NULL;
	struct lb_platform want = {"linux", "amd64", NULL};
	struct lb_load_opts o = {.platform = &want};

	cr_assert_eq(lb_load_archive(s, tar, &o, &r, &err), 0, "%s", err ? err->msg : "");
	cr_assert_eq(r.n, 1);
	expect_image(s, "docker.io/library/multi:1", amd.manifest);
	/* Only the chosen platform is stored, and nothing is left unreferenced. */
	cr_assert_not(lb_store_blob_exists(s, arm.layer));
	cr_assert_not(lb_store_blob_exists(s, ixd));
	cr_assert_eq(blob_count(), 3);
	expect_nothing_to_prune(s);
	lb_load_result_clear(&r);
	lb_store_close(s);
	free(tar);
	fset_free(&fs);
}

/* ---- docker save ------------------------------------------------------------------------- */

/* A docker-save archive: two layers (the second gzip-compressed when gz_layer), the config under
 * its digest, the second image's layer as a symlink to the first's. */
static void docker_archive(struct fset *fs, bool gz_layer, char config[LB_DIGEST_BUF])
{
	struct buf l1 = layer_of("base", 50, false), l2 = layer_of("top", 50, false);
	char d1[LB_DIGEST_BUF], d2[LB_DIGEST_BUF];
	sha256(l1.p, l1.n, d1);
	sha256(l2.p, l2.n, d2);
	fset_put(fs, "aaaa/layer.tar", l1.p, l1.n);
	if (gz_layer) {
		free(l2.p);
		l2 = layer_of("top", 50, true);
	}
	fset_put(fs, "bbbb/layer.tar", l2.p, l2.n);
	free(l1.p);
	free(l2.p);
	json_t *cfg = config_json(d1);
	json_array_append_new(json_object_get(json_object_get(cfg, "rootfs"), "diff_ids"),
			      json_string(d2));
	char *c = json_dumps(cfg, JSON_COMPACT), path[96];
	json_decref(cfg);
	sha256(c, strlen(c), config);
	snprintf(path, sizeof(path), "%s.json", config + 7);
	fset_put(fs, path, c, strlen(c));
	free(c);
	json_t *m =
	    json_pack("[{s:s, s:[s, s], s:[s, s]}, {s:s, s:[s], s:n}]", "Config", path, "RepoTags",
		      "example.com/app:1", "example.com/app:latest", "Layers", "aaaa/layer.tar",
		      "bbbb/layer.tar", "Config", path, "Layers", "cccc/layer.tar", "RepoTags");
	c = json_dumps(m, JSON_COMPACT);
	json_decref(m);
	fset_put(fs, "manifest.json", c, strlen(c));
	free(c);
	fset_put(fs, "repositories", "{}", 2);
}

static int prefix_name(const char *in, char **out, void *ctx, struct lb_err **err)
{
	return asprintf(out, "%s%s", (const char *)ctx, in) < 0 ? -1 : 0;
}

Test(load, docker_save)
{
	struct fset fs = {0};
	char config[LB_DIGEST_BUF];
	docker_archive(&fs, false, config);
	/* The first manifest.json entry only (the second has a wrong layer count). */
	char *tar = fset_to_tar(&fs, "docker.tar", false);
	struct lb_store *s = open_store();
	struct lb_load_result r = {0};
	struct lb_err *err = NULL;
	struct lb_load_opts o = {
	    .tag = "example.com/app:1", .normalize = prefix_name, .normalize_ctx = "n/"};

	cr_assert_eq(lb_load_archive(s, tar, &o, &r, &err), 0, "%s", err ? err->msg : "");
	cr_assert_eq(r.n, 1);
	cr_assert_str_eq(r.images[0].name, "n/example.com/app:1");
	expect_image(s, "n/example.com/app:1", NULL);
	struct lb_manifest *m = NULL;
	cr_assert_eq(lb_store_image_manifest(s, "n/example.com/app:1", NULL, &m, NULL, &err), 0);
	cr_assert_str_eq(m->media_type, LB_MT_OCI_MANIFEST);
	cr_assert_str_eq(m->config.digest, config);
	cr_assert_eq(m->n_layers, 2);
	cr_assert_str_eq(m->layers[0].media_type, LB_MT_OCI_LAYER);
	lb_manifest_free(m);
	cr_assert_eq(blob_count(), 4);
	expect_nothing_to_prune(s);
	lb_load_result_clear(&r);
	lb_store_close(s);
	free(tar);
	fset_free(&fs);
}

Test(load, docker_save_all_tags_gzip_layer_and_symlink)
{
	struct fset fs = {0};
	char config[LB_DIGEST_BUF];
	docker_archive(&fs, true, config);
	/* Make the second entry valid: same config, layers by symlink to the first copies. */
	char *c = NULL;
	struct buf *mj = fset_get(&fs, "manifest.json");
	json_t *m = json_loadb(mj->p, mj->n, 0, NULL);
	json_t *second = json_array_get(m, 1);
	json_object_set_new(second, "Layers",
			    json_pack("[s, s]", "cccc/layer.tar", "bbbb/layer.tar"));
	c = json_dumps(m, JSON_COMPACT);
	json_decref(m);
	fset_put(&fs, "manifest.json", c, strlen(c));
	free(c);
	fset_put(&fs, "cccc/layer.tar", "", 0);
	fs.link[fs.n - 1] = strdup("../aaaa/layer.tar");
	char *tar = fset_to_tar(&fs, "docker.tar", false);
	struct lb_store *s = open_store();
	struct lb_load_result r = {0};
	struct lb_err *err = NULL;

	cr_assert_eq(lb_load_archive(s, tar, NULL, &r, &err), 0, "%s", err ? err->msg : "");
	cr_assert_eq(r.n, 3);
	cr_assert_null(r.images[2].name);
	cr_assert_str_eq(r.images[0].digest, r.images[1].digest);
	cr_assert_str_eq(r.images[0].digest, r.images[2].digest);
	expect_image(s, "example.com/app:1", r.images[0].digest);
	expect_image(s, "example.com/app:latest", r.images[0].digest);
	struct lb_manifest *man = NULL;
	cr_assert_eq(lb_store_image_manifest(s, "example.com/app:1", NULL, &man, NULL, &err), 0);
	cr_assert_str_eq(man->layers[1].media_type, LB_MT_OCI_LAYER_GZIP);
	lb_manifest_free(man);
	struct lb_store_image *v = NULL;
	size_t n = 0;
	cr_assert_eq(lb_store_list(s, &v, &n, &err), 0);
	cr_assert_eq(n, 2, "the untagged entry duplicates a tagged digest");
	lb_store_images_free(v, n);
	expect_nothing_to_prune(s);
	lb_load_result_clear(&r);
	lb_store_close(s);
	free(tar);
	fset_free(&fs);
}

/* ---- failures leave the store unchanged -------------------------------------------------- */

/* Pre-populates the store, loads the broken input, checks the error and the unchanged store. */
static void expect_load_fails(struct fset *fs, const char *needle)
{
	struct fset base = {0};
	struct img b1;
	/* Other content than the input's: blobs the store holds already are not read again. */
	oci_image(&base, "base", 100, NULL, 0, &b1);
	oci_index(&base, json_pack("[o]", entry(&b1, "base")));
	char *basedir = fset_to_dir(&base, "base");
	struct lb_store *s = open_store();
	struct lb_load_result r = {0};
	struct lb_err *err = NULL;
	cr_assert_eq(lb_load_oci_dir(s, basedir, NULL, &r, &err), 0);
	lb_load_result_clear(&r);

	char *before = listing();
	char *dir = fset_to_dir(fs, "bad-dir");
	char *tar = fset_to_tar(fs, "bad.tar", false);
	const char *what[] = {"dir", "archive"};
	for (int i = 0; i < 2; i++) {
		int rc = i == 0 ? lb_load_oci_dir(s, dir, NULL, &r, &err)
				: lb_load_archive(s, tar, NULL, &r, &err);
		cr_assert_lt(rc, 0, "%s load succeeded", what[i]);
		cr_assert(strstr(err->msg, needle), "%s: '%s' not in '%s'", what[i], needle,
			  err->msg);
		lb_err_free(&err);
		char *after = listing();
		cr_assert_str_eq(before, after, "%s load changed the store", what[i]);
		free(after);
	}
	lb_store_close(s);
	free(before);
	free(dir);
	free(tar);
	free(basedir);
	fset_free(&base);
}

static char *blob_path(const char *digest)
{
	char *p = NULL;
	cr_assert_gt(asprintf(&p, "blobs/sha256/%s", digest + 7), 0);
	return p;
}

Test(load, fails_on_digest_mismatch)
{
	struct fset fs = {0};
	struct img one, two;
	two_image_layout(&fs, &one, &two);
	char *p = blob_path(two.layer);
	fset_get(&fs, p)->p[600] ^= 1;
	expect_load_fails(&fs, "digest mismatch");
	free(p);
	fset_free(&fs);
}

Test(load, fails_on_truncated_blob)
{
	struct fset fs = {0};
	struct img one, two;
	two_image_layout(&fs, &one, &two);
	char *p = blob_path(two.layer);
	fset_get(&fs, p)->n -= 100;
	expect_load_fails(&fs, "size");
	free(p);
	fset_free(&fs);
}

Test(load, fails_on_missing_blob)
{
	struct fset fs = {0};
	struct img one, two;
	two_image_layout(&fs, &one, &two);
	char *p = blob_path(two.config);
	fset_del(&fs, p);
	expect_load_fails(&fs, "missing");
	free(p);
	fset_free(&fs);
}

Test(load, fails_on_unknown_media_type)
{
	struct fset fs = {0};
	struct img one, two;
	oci_image(&fs, "one", 10, NULL, 0, &one);
	oci_image(&fs, "two", 10, "application/x-rar", 0, &two);
	oci_index(&fs, json_pack("[o, o]", entry(&one, "one"), entry(&two, "two")));
	expect_load_fails(&fs, "unsupported layer media type 'application/x-rar'");
	fset_free(&fs);
}

Test(load, fails_on_oversized_manifest)
{
	struct fset fs = {0};
	struct img one, two;
	oci_image(&fs, "one", 10, NULL, 0, &one);
	oci_image(&fs, "two", 10, NULL, LB_MANIFEST_MAX, &two);
	oci_index(&fs, json_pack("[o, o]", entry(&one, "one"), entry(&two, "two")));
	expect_load_fails(&fs, "too large");
	fset_free(&fs);
}

Test(load, fails_on_bad_docker_layer)
{
	struct fset fs = {0};
	char config[LB_DIGEST_BUF];
	docker_archive(&fs, false, config);
	fset_get(&fs, "bbbb/layer.tar")->p[700] ^= 1;
	char *tar = fset_to_tar(&fs, "docker.tar", false);
	struct lb_store *s = open_store();
	char *before = listing();
	struct lb_load_result r = {0};
	struct lb_err *err = NULL;
	struct lb_load_opts o = {.tag = "example.com/app:1"};
	cr_assert_lt(lb_load_archive(s, tar, &o, &r, &err), 0);
	cr_assert(strstr(err->msg, "the config's diff_id is"), "%s", err->msg);
	lb_err_free(&err);
	char *after = listing();
	cr_assert_str_eq(before, after);
	/* Garbage is refused too. */
	char *junk = NULL;
	cr_assert_gt(asprintf(&junk, "%s/junk", work), 0);
	write_file(junk, "not a tar at all", 16);
	cr_assert_lt(lb_load_archive(s, junk, NULL, &r, &err), 0);
	lb_err_free(&err);
	free(after);
	after = listing();
	cr_assert_str_eq(before, after);
	lb_store_close(s);
	free(junk);
	free(before);
	free(after);
	free(tar);
	fset_free(&fs);
}

/* ---- concurrency and crashes ------------------------------------------------------------- */

Test(load, two_concurrent_loads)
{
	struct fset fs = {0};
	struct img one, two;
	oci_image(&fs, "one", 1 << 20, NULL, 0, &one);
	oci_image(&fs, "two", 1 << 20, NULL, 0, &two);
	oci_index(&fs, json_pack("[o, o]", entry(&one, "one"), entry(&two, "two")));
	char *tar = fset_to_tar(&fs, "oci.tar", false);
	pid_t kids[2];
	for (int k = 0; k < 2; k++) {
		kids[k] = fork();
		cr_assert_geq(kids[k], 0);
		if (kids[k] == 0) {
			struct lb_store *s = NULL;
			struct lb_load_result r = {0};
			struct lb_err *err = NULL;
			if (lb_store_open(root, &s, &err) < 0 ||
			    lb_load_archive(s, tar, NULL, &r, &err) < 0) {
				fprintf(stderr, "child: %s\n", err->msg);
				_exit(1);
			}
			_exit(0);
		}
	}
	for (int k = 0; k < 2; k++) {
		int st = 0;
		cr_assert_eq(waitpid(kids[k], &st, 0), kids[k]);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	struct lb_store *s = open_store();
	struct lb_store_image *v = NULL;
	size_t n = 0;
	struct lb_err *err = NULL;
	cr_assert_eq(lb_store_list(s, &v, &n, &err), 0);
	cr_assert_eq(n, 2);
	lb_store_images_free(v, n);
	expect_image(s, "one", one.manifest);
	expect_image(s, "two", two.manifest);
	cr_assert_eq(blob_count(), 6);
	expect_nothing_to_prune(s);
	lb_store_close(s);
	free(tar);
	fset_free(&fs);
}

static bool partial_blob_staged(void)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "find %s/tmp -name 'partial-*' -size +1k | grep -q .", root);
	return system(cmd) == 0;
}

Test(load, sigkill_mid_blob_then_rerun)
{
	struct fset fs = {0};
	struct img one, two;
	oci_image(&fs, "one", 4 << 20, NULL, 0, &one);
	oci_image(&fs, "two", 10, NULL, 0, &two);
	oci_index(&fs, json_pack("[o, o]", entry(&one, "one"), entry(&two, "two")));
	struct buf t = tar_of(&fs, false);
	struct lb_store *s = open_store();
	char *before = listing();
	int p[2];
	cr_assert_eq(pipe(p), 0);
	pid_t kid = fork();
	cr_assert_geq(kid, 0);
	if (kid == 0) {
		struct lb_load_result r = {0};
		struct lb_err *err = NULL;
		close(p[1]);
		lb_load_archive_fd(s, p[0], NULL, &r, &err);
		_exit(0);
	}
	close(p[0]);
	/* Half the archive: the importer is inside the 4 MiB layer when the data stops. */
	cr_assert_eq(lb_write_all(p[1], t.p, t.n / 2), 0);
	for (int i = 0; i < 200 && !partial_blob_staged(); i++)
		usleep(10000);
	cr_assert(partial_blob_staged(), "the importer never got mid-blob");
	kill(kid, SIGKILL);
	waitpid(kid, NULL, 0);
	close(p[1]);
	char *after = listing();
	lb_store_close(s);
	/* The dead importer left only its (unreferenced) staging behind, which the next open
	 * removes; the visible store is as before. */
	s = open_store();
	free(after);
	after = listing();
	cr_assert_str_eq(before, after);

	char *tar = fset_to_tar(&fs, "oci.tar", false);
	struct lb_load_result r = {0};
	struct lb_err *err = NULL;
	cr_assert_eq(lb_load_archive(s, tar, NULL, &r, &err), 0, "%s", err ? err->msg : "");
	expect_image(s, "one", one.manifest);
	expect_image(s, "two", two.manifest);
	expect_nothing_to_prune(s);
	lb_load_result_clear(&r);
	lb_store_close(s);
	free(tar);
	free(t.p);
	free(before);
	free(after);
	fset_free(&fs);
}

/* ---- interoperability ------------------------------------------------------------------- */

static bool have(const char *tool)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", tool);
	return system(cmd) == 0;
}

Test(load, readable_by_umoci_and_skopeo)
{
	if (!have("umoci") || !have("skopeo")) {
		printf("skipped: umoci or skopeo not installed (apt-get install umoci skopeo)\n");
		cr_skip_test("umoci or skopeo not installed");
	}
	struct fset fs = {0};
	struct img one, two;
	two_image_layout(&fs, &one, &two);
	char *dir = fset_to_dir(&fs, "layout");
	struct lb_store *s = open_store();
	struct lb_load_result r = {0};
	struct lb_err *err = NULL;
	struct lb_load_opts o = {.tag = "one", .name = "example.com/one:1"};
	cr_assert_eq(lb_load_oci_dir(s, dir, &o, &r, &err), 0, "%s", err ? err->msg : "");
	lb_load_result_clear(&r);
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "umoci ls --layout %s | grep -qx example.com/one:1", root);
	cr_assert_eq(system(cmd), 0, "umoci ls failed");
	snprintf(cmd, sizeof(cmd), "skopeo inspect --raw oci:%s:example.com/one:1 | grep -q %s",
		 root, one.config + 7);
	cr_assert_eq(system(cmd), 0, "skopeo inspect failed");
	/* And what skopeo writes, lbbox loads. */
	snprintf(cmd, sizeof(cmd),
		 "skopeo copy -q oci:%s:example.com/one:1 oci:%s/copy:again >/dev/null", root,
		 work);
	cr_assert_eq(system(cmd), 0, "skopeo copy failed");
	snprintf(cmd, sizeof(cmd), "%s/copy", work);
	struct lb_load_opts o2 = {.tag = "again"};
	cr_assert_eq(lb_load_oci_dir(s, cmd, &o2, &r, &err), 0, "%s", err ? err->msg : "");
	expect_image(s, "again", NULL);
	lb_load_result_clear(&r);
	lb_store_close(s);
	free(dir);
	fset_free(&fs);
}
