/* Unit tests for the OCI layout store: blobs, transactions, the index, prune, locking and crash
 * cleanup. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lbbox/image/store.h"
#include "lbbox/base/util.h"

static char root[64];

static void setup(void)
{
	snprintf(root, sizeof(root), "/tmp/lbbox-store-XXXXXX");
	cr_assert_not_null(mkdtemp(root));
}

static void teardown(void)
{
	struct lb_err *err = NULL;
	lb_rm_rf(root, &err);
	lb_err_free(&err);
}

TestSuite(store, .init = setup, .fini = teardown);

static struct lb_store *open_store(void)
{
	struct lb_store *s = NULL;
	struct lb_err *err = NULL;
	cr_assert_eq(lb_store_open(root, &s, &err), 0, "%s", err ? err->msg : "");
	return s;
}

/* Listing of everything visible in the store (not tmp/ or .lock): "path size\n" lines, sorted. */
static char *listing_buf;
static size_t listing_len;
static int listing_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	const char *rel = path + strlen(root);
	if (type != FTW_F || strncmp(rel, "/tmp/", 5) == 0 || strcmp(rel, "/.lock") == 0)
		return 0;
	char line[512];
	int n = snprintf(line, sizeof(line), "%s %lld\n", rel, (long long)st->st_size);
	listing_buf = realloc(listing_buf, listing_len + (size_t)n + 1);
	memcpy(listing_buf + listing_len, line, (size_t)n + 1);
	listing_len += (size_t)n;
	return 0;
}

static char *listing(void)
{
	listing_buf = NULL;
	listing_len = 0;
	nftw(root, listing_one, 16, FTW_PHYS);
	return listing_buf ? listing_buf : strdup("");
}

static int tmp_entries(void)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/tmp", root);
	DIR *d = opendir(path);
	int n = 0;
	cr_assert_not_null(d);
	for (struct dirent *de; (de = readdir(d));)
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

static void sha(const char *data, char out[LB_DIGEST_BUF])
{
	/* Stage and drop: the writer is the hashing API the store exposes. */
	struct lb_store *s = open_store();
	struct lb_store_txn *t = NULL;
	struct lb_err *err = NULL;
	cr_assert_eq(lb_store_txn_begin(s, &t, &err), 0);
	cr_assert_eq(lb_store_txn_put_buf(t, data, strlen(data), out, &err), 0);
	lb_store_txn_free(t);
	lb_store_close(s);
}

/* Commits data as one blob, optionally tagged as name (with the media type of a manifest). */
static void commit_blob(struct lb_store *s, const char *data, const char *name,
			char digest[LB_DIGEST_BUF])
{
	struct lb_store_txn *t = NULL;
	struct lb_err *err = NULL;
	cr_assert_eq(lb_store_txn_begin(s, &t, &err), 0);
	cr_assert_eq(lb_store_txn_put_buf(t, data, strlen(data), digest, &err), 0);
	cr_assert_eq(lb_store_txn_keep(t, digest, &err), 0);
	if (name)
		cr_assert_eq(
		    lb_store_txn_tag(t, name, LB_MT_OCI_MANIFEST, digest, strlen(data), &err), 0);
	cr_assert_eq(lb_store_txn_commit(t, &err), 0, "%s", err ? err->msg : "");
	lb_store_txn_free(t);
}

Test(store, open_creates_layout)
{
	struct lb_store *s = open_store();
	char *buf = NULL;
	struct lb_err *err = NULL;
	struct stat st;
	char path[128];

	cr_assert_str_eq(lb_store_root(s), root);
	snprintf(path, sizeof(path), "%s/oci-layout", root);
	cr_assert_eq(lb_read_file(path, 4096, &buf, NULL, &err), 0);
	cr_assert_str_eq(buf, "{\"imageLayoutVersion\":\"1.0.0\"}");
	free(buf);
	snprintf(path, sizeof(path), "%s/index.json", root);
	cr_assert_eq(lb_read_file(path, 4096, &buf, NULL, &err), 0);
	json_t *j = json_loads(buf, 0, NULL);
	cr_assert_eq(json_integer_value(json_object_get(j, "schemaVersion")), 2);
	cr_assert_eq(json_array_size(json_object_get(j, "manifests")), 0);
	json_decref(j);
	free(buf);
	snprintf(path, sizeof(path), "%s/blobs/sha256", root);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert(S_ISDIR(st.st_mode));
	lb_store_close(s);
	/* Reopening changes nothing. */
	char *before = listing();
	s = open_store();
	char *after = listing();
	cr_assert_str_eq(before, after);
	free(before);
	free(after);
	lb_store_close(s);
}

Test(store, blob_write_and_read)
{
	struct lb_store *s = open_store();
	char d[LB_DIGEST_BUF], *buf = NULL;
	size_t len = 0;
	struct lb_err *err = NULL;
	uint64_t size = 0;
	int fd = -1;

	commit_blob(s, "hello blob", NULL, d);
	/* sha256("hello blob") */
	cr_assert_str_eq(d, "sha256:"
			    "e997afd18e5f6be004fc193aed2c90291e68ab2c7599a62538c935b7fca6ab0f");
	cr_assert(lb_store_blob_exists(s, d));
	cr_assert_eq(lb_store_blob_read(s, d, 1024, &buf, &len, &err), 0);
	cr_assert_eq(len, 10);
	cr_assert_str_eq(buf, "hello blob");
	free(buf);
	cr_assert_eq(lb_store_blob_open(s, d, &fd, &size, &err), 0);
	cr_assert_eq(size, 10);
	close(fd);
	cr_assert_eq(tmp_entries(), 0);
	cr_assert_eq(lb_store_blob_delete(s, d, &err), 0);
	cr_assert_not(lb_store_blob_exists(s, d));
	cr_assert_lt(lb_store_blob_open(s, d, &fd, &size, &err), 0);
	cr_assert_eq(err->errnum, ENOENT);
	lb_err_free(&err);
	cr_assert_not(lb_store_blob_exists(s, "sha256:../../oci-layout"));
	lb_store_close(s);
}

Test(store, corrupt_blob_is_detected_on_read)
{
	struct lb_store *s = open_store();
	char d[LB_DIGEST_BUF], path[256], *buf = NULL;
	struct lb_err *err = NULL;

	commit_blob(s, "{\"a\":1}", NULL, d);
	snprintf(path, sizeof(path), "%s/blobs/sha256/%s", root, d + 7);
	cr_assert_eq(lb_write_file_atomic(path, "{\"a\":2}", 7, 0644, &err), 0);
	cr_assert_lt(lb_store_blob_read(s, d, 1024, &buf, NULL, &err), 0);
	cr_assert(strstr(err->msg, "corrupt"), "%s", err->msg);
	lb_err_free(&err);
	lb_store_close(s);
}

static int write_via(struct lb_store_txn *t, const char *want, int64_t size, const char *data,
		     struct lb_err **err)
{
	struct lb_blob_writer *w = NULL;
	if (lb_blob_writer_begin(t, want, size, &w, err) < 0)
		return -1;
	if (lb_blob_writer_write(w, data, strlen(data), err) < 0) {
		lb_blob_writer_abort(w);
		return -1;
	}
	return lb_blob_writer_finish(w, NULL, NULL, err);
}

Test(store, verification_failures_store_nothing)
{
	struct lb_store *s = open_store();
	char good[LB_DIGEST_BUF];
	sha("payload", good);
	char *before = listing();
	struct lb_store_txn *t = NULL;
	struct lb_err *err = NULL;
	char wrong[LB_DIGEST_BUF];
	snprintf(wrong, sizeof(wrong), "sha256:%064d", 0);

	cr_assert_eq(lb_store_txn_begin(s, &t, &err), 0);
	/* digest mismatch */
	cr_assert_lt(write_via(t, wrong, 7, "payload", &err), 0);
	cr_assert(strstr(err->msg, "digest mismatch"), "%s", err->msg);
	lb_err_free(&err);
	cr_assert_not(lb_store_txn_has(t, good));
	/* truncated: fewer bytes than declared */
	cr_assert_lt(write_via(t, good, 8, "payload", &err), 0);
	cr_assert(strstr(err->msg, "truncated"), "%s", err->msg);
	lb_err_free(&err);
	/* more bytes than declared */
	cr_assert_lt(write_via(t, good, 3, "payload", &err), 0);
	cr_assert(strstr(err->msg, "more data than its declared size"), "%s", err->msg);
	lb_err_free(&err);
	/* truncated stream through put_fd */
	int p[2];
	cr_assert_eq(pipe(p), 0);
	cr_assert_eq(write(p[1], "pay", 3), 3);
	close(p[1]);
	cr_assert_lt(lb_store_txn_put_fd(t, p[0], good, 7, NULL, &err), 0);
	close(p[0]);
	lb_err_free(&err);
	/* bad digest strings never reach the filesystem */
	cr_assert_lt(write_via(t, "sha256:../../x", 7, "payload", &err), 0);
	lb_err_free(&err);
	cr_assert_not(lb_store_txn_has(t, good));
	/* keeping a blob nobody wrote fails the commit */
	cr_assert_eq(lb_store_txn_keep(t, good, &err), 0);
	cr_assert_lt(lb_store_txn_commit(t, &err), 0);
	cr_assert(strstr(err->msg, "neither staged nor stored"), "%s", err->msg);
	lb_err_free(&err);
	lb_store_txn_free(t);

	char *after = listing();
	cr_assert_str_eq(before, after);
	cr_assert_eq(tmp_entries(), 0);
	free(before);
	free(after);
	lb_store_close(s);
}

Test(store, uncommitted_transaction_is_invisible)
{
	struct lb_store *s = open_store();
	char *before = listing();
	struct lb_store_txn *t = NULL;
	struct lb_err *err = NULL;
	char d[LB_DIGEST_BUF], *buf = NULL;

	cr_assert_eq(lb_store_txn_begin(s, &t, &err), 0);
	cr_assert_eq(lb_store_txn_put_buf(t, "staged", 6, d, &err), 0);
	cr_assert(lb_store_txn_has(t, d));
	cr_assert_eq(lb_store_txn_read(t, d, 100, &buf, NULL, &err), 0);
	cr_assert_str_eq(buf, "staged");
	free(buf);
	cr_assert_not(lb_store_blob_exists(s, d));
	cr_assert_eq(lb_store_txn_tag(t, "x:1", LB_MT_OCI_MANIFEST, d, 6, &err), 0);
	lb_store_txn_free(t);
	char *after = listing();
	cr_assert_str_eq(before, after);
	cr_assert_eq(tmp_entries(), 0);
	free(before);
	free(after);
	lb_store_close(s);
}

Test(store, index_tag_untag_list_resolve)
{
	struct lb_store *s = open_store();
	char a[LB_DIGEST_BUF], b[LB_DIGEST_BUF];
	struct lb_store_image img = {0}, *v = NULL;
	struct lb_err *err = NULL;
	size_t n = 0;

	commit_blob(s, "{\"image\":\"a\"}", "example.com/a:1", a);
	commit_blob(s, "{\"image\":\"b\"}", "example.com/b:1", b);
	cr_assert_eq(lb_store_resolve(s, "example.com/a:1", &img, &err), 0);
	cr_assert_str_eq(img.digest, a);
	cr_assert_str_eq(img.media_type, LB_MT_OCI_MANIFEST);
	cr_assert_eq(img.size, 13);
	lb_store_image_clear(&img);
	cr_assert_eq(lb_store_resolve(s, b, &img, &err), 0);
	cr_assert_str_eq(img.name, "example.com/b:1");
	lb_store_image_clear(&img);

	/* tag: a new name, then retarget an existing name (replaced, not duplicated) */
	cr_assert_eq(lb_store_tag(s, "example.com/a:1", "local/a:latest", &err), 0);
	cr_assert_eq(lb_store_tag(s, b, "local/a:latest", &err), 0);
	cr_assert_eq(lb_store_list(s, &v, &n, &err), 0);
	cr_assert_eq(n, 3);
	int hits = 0;
	for (size_t i = 0; i < n; i++)
		if (v[i].name && strcmp(v[i].name, "local/a:latest") == 0) {
			hits++;
			cr_assert_str_eq(v[i].digest, b);
		}
	cr_assert_eq(hits, 1);
	lb_store_images_free(v, n);

	cr_assert_lt(lb_store_tag(s, "nope:1", "x:1", &err), 0);
	cr_assert_eq(err->errnum, ENOENT);
	lb_err_free(&err);
	cr_assert_lt(lb_store_tag(s, b, "bad name", &err), 0);
	lb_err_free(&err);

	cr_assert_eq(lb_store_untag(s, "example.com/a:1", &err), 0);
	cr_assert_lt(lb_store_untag(s, "example.com/a:1", &err), 0);
	cr_assert_eq(err->errnum, ENOENT);
	lb_err_free(&err);
	cr_assert_lt(lb_store_resolve(s, "example.com/a:1", &img, &err), 0);
	cr_assert(strstr(err->msg, "not found"), "%s", err->msg);
	lb_err_free(&err);
	/* untag keeps the blob until prune */
	cr_assert(lb_store_blob_exists(s, a));
	lb_store_close(s);

	/* persistence */
	s = open_store();
	cr_assert_eq(lb_store_list(s, &v, &n, &err), 0);
	cr_assert_eq(n, 2);
	lb_store_images_free(v, n);
	cr_assert_eq(tmp_entries(), 0);
	lb_store_close(s);
}

Test(store, untagged_entries_are_added_once)
{
	struct lb_store *s = open_store();
	char a[LB_DIGEST_BUF];
	struct lb_store_txn *t = NULL;
	struct lb_err *err = NULL;
	struct lb_store_image *v = NULL;
	size_t n = 0;

	commit_blob(s, "{}", NULL, a);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(lb_store_txn_begin(s, &t, &err), 0);
		cr_assert_eq(lb_store_txn_tag(t, NULL, LB_MT_OCI_MANIFEST, a, 2, &err), 0);
		cr_assert_eq(lb_store_txn_commit(t, &err), 0, "%s", err ? err->msg : "");
		lb_store_txn_free(t);
	}
	cr_assert_eq(lb_store_list(s, &v, &n, &err), 0);
	cr_assert_eq(n, 1);
	cr_assert_null(v[0].name);
	lb_store_images_free(v, n);
	lb_store_close(s);
}

/* A manifest JSON referencing config and layer digests. */
static char *manifest_json(const char *config, const char *l1, const char *l2)
{
	json_t *j = json_pack("{s:i, s:s, s:{s:s, s:s, s:i}, s:[]}", "schemaVersion", 2,
			      "mediaType", LB_MT_OCI_MANIFEST, "config", "mediaType",
			      LB_MT_OCI_CONFIG, "digest", config, "size", 2, "layers");
	const char *ls[] = {l1, l2};
	for (int i = 0; i < 2; i++)
		if (ls[i])
			json_array_append_new(json_object_get(j, "layers"),
					      json_pack("{s:s, s:s, s:i}", "mediaType",
							LB_MT_OCI_LAYER, "digest", ls[i], "size",
							1));
	char *s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return s;
}

Test(store, prune_removes_only_unreferenced)
{
	struct lb_store *s = open_store();
	char cfg[LB_DIGEST_BUF], shared[LB_DIGEST_BUF], own[LB_DIGEST_BUF], stray[LB_DIGEST_BUF];
	char m1[LB_DIGEST_BUF], m2[LB_DIGEST_BUF];
	struct lb_store_prune_stats st = {0};
	struct lb_err *err = NULL;

	commit_blob(s, "{}", NULL, cfg);
	commit_blob(s, "S", NULL, shared);
	commit_blob(s, "O", NULL, own);
	commit_blob(s, "stray", NULL, stray);
	char *j1 = manifest_json(cfg, shared, NULL), *j2 = manifest_json(cfg, shared, own);
	commit_blob(s, j1, "img:one", m1);
	commit_blob(s, j2, "img:two", m2);
	free(j1);
	free(j2);

	cr_assert_eq(lb_store_prune(s, &st, &err), 0, "%s", err ? err->msg : "");
	cr_assert_eq(st.blobs, 1);
	cr_assert_eq(st.bytes, 5);
	cr_assert_not(lb_store_blob_exists(s, stray));

	cr_assert_eq(lb_store_untag(s, "img:two", &err), 0);
	cr_assert_eq(lb_store_prune(s, &st, &err), 0);
	cr_assert_eq(st.blobs, 2);
	cr_assert_not(lb_store_blob_exists(s, m2));
	cr_assert_not(lb_store_blob_exists(s, own));
	cr_assert(lb_store_blob_exists(s, m1));
	cr_assert(lb_store_blob_exists(s, shared));
	cr_assert(lb_store_blob_exists(s, cfg));

	cr_assert_eq(lb_store_untag(s, "img:one", &err), 0);
	cr_assert_eq(lb_store_prune(s, &st, &err), 0);
	cr_assert_eq(st.blobs, 3);
	lb_store_close(s);
}

Test(store, image_manifest_through_index)
{
	struct lb_store *s = open_store();
	char cfg[LB_DIGEST_BUF], l1[LB_DIGEST_BUF], m[LB_DIGEST_BUF], ix[LB_DIGEST_BUF];
	struct lb_manifest *man = NULL;
	struct lb_image_config *c = NULL;
	struct lb_err *err = NULL;
	char cfgjson[256];

	commit_blob(s, "L", NULL, l1);
	snprintf(
	    cfgjson, sizeof(cfgjson),
	    "{\"config\":{\"Cmd\":[\"sh\"]},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"%s\"]}}",
	    l1);
	commit_blob(s, cfgjson, NULL, cfg);
	char *mj = manifest_json(cfg, l1, NULL);
	commit_blob(s, mj, NULL, m);
	json_t *idx = json_pack("{s:i, s:s, s:[{s:s, s:s, s:I, s:{s:s, s:s}}]}", "schemaVersion", 2,
				"mediaType", LB_MT_OCI_INDEX, "manifests", "mediaType",
				LB_MT_OCI_MANIFEST, "digest", m, "size", (json_int_t)strlen(mj),
				"platform", "os", "linux", "architecture", "amd64");
	char *ij = json_dumps(idx, JSON_COMPACT);
	json_decref(idx);
	commit_blob(s, ij, "multi:1", ix);
	struct lb_platform amd = {"linux", "amd64", NULL};
	cr_assert_eq(lb_store_image_manifest(s, "multi:1", &amd, &man, &c, &err), 0, "%s",
		     err ? err->msg : "");
	cr_assert_str_eq(man->config.digest, cfg);
	cr_assert_str_eq(c->cmd[0], "sh");
	lb_manifest_free(man);
	lb_image_config_free(c);
	/* prune walks through the index to the manifest, config and layer */
	struct lb_store_prune_stats st = {0};
	cr_assert_eq(lb_store_prune(s, &st, &err), 0);
	cr_assert_eq(st.blobs, 0);
	free(mj);
	free(ij);
	lb_store_close(s);
}

Test(store, stale_temp_files_cleaned_unless_locked)
{
	struct lb_store *s = open_store();
	char path[256];
	lb_store_close(s);
	snprintf(path, sizeof(path), "%s/tmp/stale-file", root);
	int fd = open(path, O_CREAT | O_WRONLY, 0644);
	cr_assert_geq(fd, 0);
	close(fd);
	snprintf(path, sizeof(path), "%s/tmp/txn-stale/sub", root);
	struct lb_err *err = NULL;
	cr_assert_eq(lb_mkdir_p(path, 0755, &err), 0);
	/* A temp file a live process holds locked survives. */
	snprintf(path, sizeof(path), "%s/tmp/live", root);
	int live = open(path, O_CREAT | O_RDWR, 0644);
	cr_assert_geq(live, 0);
	cr_assert_eq(flock(live, LOCK_EX), 0);

	s = open_store();
	cr_assert_eq(tmp_entries(), 1);
	cr_assert_eq(access(path, F_OK), 0);
	close(live);
	lb_store_close(s);
	s = open_store();
	cr_assert_eq(tmp_entries(), 0);
	lb_store_close(s);
}

Test(store, concurrent_commits_lose_nothing)
{
	struct lb_store *s = open_store();
	lb_store_close(s);
	pid_t kids[2];
	for (int k = 0; k < 2; k++) {
		kids[k] = fork();
		cr_assert_geq(kids[k], 0);
		if (kids[k] == 0) {
			struct lb_store *cs = NULL;
			struct lb_err *err = NULL;
			if (lb_store_open(root, &cs, &err) < 0)
				_exit(2);
			for (int i = 0; i < 25; i++) {
				char data[64], name[64], d[LB_DIGEST_BUF];
				struct lb_store_txn *t = NULL;
				/* same content from both: the shared blob must not break */
				snprintf(data, sizeof(data), "{\"n\":%d}", i);
				snprintf(name, sizeof(name), "kid%d/img:%d", k, i);
				if (lb_store_txn_begin(cs, &t, &err) < 0 ||
				    lb_store_txn_put_buf(t, data, strlen(data), d, &err) < 0 ||
				    lb_store_txn_tag(t, name, LB_MT_OCI_MANIFEST, d, strlen(data),
						     &err) < 0 ||
				    lb_store_txn_commit(t, &err) < 0) {
					fprintf(stderr, "child %d, image %d: %s\n", k, i,
						err ? err->msg : "?");
					_exit(1);
				}
				lb_store_txn_free(t);
			}
			lb_store_close(cs);
			_exit(0);
		}
	}
	for (int k = 0; k < 2; k++) {
		int st = 0;
		cr_assert_eq(waitpid(kids[k], &st, 0), kids[k]);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child %d failed: %d", k, st);
	}
	s = open_store();
	struct lb_store_image *v = NULL;
	size_t n = 0;
	struct lb_err *err = NULL;
	cr_assert_eq(lb_store_list(s, &v, &n, &err), 0);
	cr_assert_eq(n, 50);
	lb_store_images_free(v, n);
	cr_assert_eq(tmp_entries(), 0);
	lb_store_close(s);
}

Test(store, killed_writer_leaves_nothing)
{
	struct lb_store *s = open_store();
	char *before = listing();
	int p[2];
	cr_assert_eq(pipe(p), 0);
	pid_t kid = fork();
	cr_assert_geq(kid, 0);
	if (kid == 0) {
		struct lb_store_txn *t = NULL;
		struct lb_blob_writer *w = NULL;
		struct lb_err *err = NULL;
		char d[LB_DIGEST_BUF];
		if (lb_store_txn_begin(s, &t, &err) < 0 ||
		    lb_store_txn_put_buf(t, "done", 4, d, &err) < 0 ||
		    lb_store_txn_tag(t, "half:1", LB_MT_OCI_MANIFEST, d, 4, &err) < 0 ||
		    lb_blob_writer_begin(t, NULL, 1 << 20, &w, &err) < 0 ||
		    lb_blob_writer_write(w, "partial", 7, &err) < 0)
			_exit(1);
		if (write(p[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	char c;
	cr_assert_eq(read(p[0], &c, 1), 1);
	/* The live importer's staging survives another open. */
	struct lb_store *other = open_store();
	cr_assert_eq(tmp_entries(), 1);
	lb_store_close(other);
	kill(kid, SIGKILL);
	waitpid(kid, NULL, 0);
	close(p[0]);
	close(p[1]);
	char *after = listing();
	cr_assert_str_eq(before, after);
	lb_store_close(s);
	/* The next open sweeps the dead importer's staging directory. */
	s = open_store();
	cr_assert_eq(tmp_entries(), 0);
	free(before);
	free(after);
	lb_store_close(s);
}
