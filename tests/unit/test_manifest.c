/* Unit tests for the OCI / Docker document parsers and host platform selection. */
#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "lbbox/image/manifest.h"

/* "sha256:" followed by 64 copies of c. */
static const char *dg(char c)
{
	static char buf[8][LB_DIGEST_BUF];
	static int next;
	char *b = buf[next++ % 8];
	memcpy(b, "sha256:", 7);
	memset(b + 7, c, 64);
	b[71] = '\0';
	return b;
}

static char *dump(json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	cr_assert_not_null(s);
	return s;
}

static json_t *desc(const char *mt, const char *digest, int size)
{
	return json_pack("{s:s, s:s, s:i}", "mediaType", mt, "digest", digest, "size", size);
}

static json_t *plat_desc(const char *digest, const char *os, const char *arch, const char *var)
{
	json_t *d = desc(LB_MT_OCI_MANIFEST, digest, 100);
	json_t *p = json_pack("{s:s, s:s}", "os", os, "architecture", arch);
	if (var)
		json_object_set_new(p, "variant", json_string(var));
	json_object_set_new(d, "platform", p);
	return d;
}

static char *oci_manifest(const char *mt, const char *config_mt, const char *layer_mt)
{
	json_t *m = json_pack("{s:i, s:o, s:[o, o]}", "schemaVersion", 2, "config",
			      desc(config_mt, dg('c'), 321), "layers", desc(layer_mt, dg('1'), 10),
			      desc(LB_MT_OCI_LAYER, dg('2'), 20));
	if (mt)
		json_object_set_new(m, "mediaType", json_string(mt));
	json_object_set_new(m, "annotations", json_pack("{s:s}", "k", "v"));
	return dump(m);
}

/* A macro, so the call runs before err is looked at. */
#define expect_fail(call, err, needle)                                                             \
	do {                                                                                       \
		cr_assert_lt((call), 0);                                                           \
		cr_assert_not_null(err);                                                           \
		cr_assert(strstr((err)->msg, needle), "'%s' not in '%s'", needle, (err)->msg);     \
		lb_err_free(&(err));                                                               \
	} while (0)

Test(manifest, oci_manifest)
{
	char *s = oci_manifest(LB_MT_OCI_MANIFEST, LB_MT_OCI_CONFIG, LB_MT_OCI_LAYER_GZIP);
	struct lb_manifest *m = NULL;
	struct lb_err *err = NULL;
	enum lb_media_kind k;

	cr_assert_eq(lb_document_kind(s, strlen(s), &k, &err), 0);
	cr_assert_eq(k, LB_MEDIA_MANIFEST);
	cr_assert_eq(lb_manifest_parse(s, strlen(s), &m, &err), 0, "%s", err ? err->msg : "");
	cr_assert_str_eq(m->media_type, LB_MT_OCI_MANIFEST);
	cr_assert_str_eq(m->config.digest, dg('c'));
	cr_assert_eq(m->config.size, 321);
	cr_assert_eq(m->n_layers, 2);
	cr_assert_str_eq(m->layers[0].media_type, LB_MT_OCI_LAYER_GZIP);
	cr_assert_eq(m->layers[1].size, 20);
	cr_assert_str_eq(m->annotations[0], "k");
	cr_assert_str_eq(m->annotations[1], "v");
	enum lb_compression c;
	cr_assert_eq(lb_layer_compression(m->layers[0].media_type, &c, &err), 0);
	cr_assert_eq(c, LB_COMPRESSION_GZIP);
	lb_manifest_free(m);
	free(s);
}

Test(manifest, docker_schema2_and_inferred_type)
{
	char *s = oci_manifest(LB_MT_DOCKER_MANIFEST, LB_MT_DOCKER_CONFIG, LB_MT_DOCKER_LAYER_GZ);
	struct lb_manifest *m = NULL;
	struct lb_err *err = NULL;

	cr_assert_eq(lb_manifest_parse(s, strlen(s), &m, &err), 0, "%s", err ? err->msg : "");
	cr_assert_str_eq(m->media_type, LB_MT_DOCKER_MANIFEST);
	lb_manifest_free(m);
	free(s);
	/* OCI makes mediaType optional: infer it from the keys. */
	s = oci_manifest(NULL, LB_MT_OCI_CONFIG, LB_MT_OCI_LAYER_ZSTD);
	cr_assert_eq(lb_manifest_parse(s, strlen(s), &m, &err), 0, "%s", err ? err->msg : "");
	cr_assert_null(m->media_type);
	lb_manifest_free(m);
	free(s);
}

Test(manifest, unknown_media_types)
{
	struct lb_manifest *m = NULL;
	struct lb_err *err = NULL;
	char *s =
	    oci_manifest("application/vnd.example.thing+json", LB_MT_OCI_CONFIG, LB_MT_OCI_LAYER);
	expect_fail(lb_manifest_parse(s, strlen(s), &m, &err), err,
		    "unsupported manifest media type");
	free(s);
	s = oci_manifest(LB_MT_OCI_MANIFEST, "application/vnd.example.config", LB_MT_OCI_LAYER);
	expect_fail(lb_manifest_parse(s, strlen(s), &m, &err), err,
		    "unsupported config media type");
	free(s);
	s = oci_manifest(LB_MT_OCI_MANIFEST, LB_MT_OCI_CONFIG, "application/x-rar");
	expect_fail(lb_manifest_parse(s, strlen(s), &m, &err), err, "unsupported layer media type");
	free(s);
	cr_assert_null(m);
	cr_assert_eq(lb_media_kind("text/plain"), LB_MEDIA_UNKNOWN);
	cr_assert_eq(lb_media_kind(NULL), LB_MEDIA_UNKNOWN);
}

Test(manifest, schema1_and_garbage)
{
	struct lb_manifest *m = NULL;
	struct lb_err *err = NULL;
	const char *v1 = "{\"schemaVersion\":1,\"name\":\"x\",\"fsLayers\":[]}";
	expect_fail(lb_manifest_parse(v1, strlen(v1), &m, &err), err, "schema 1");
	expect_fail(lb_manifest_parse("[1,2]", 5, &m, &err), err, "not a JSON object");
	expect_fail(lb_manifest_parse("{\"a\":", 5, &m, &err), err, "invalid JSON");
	const char *dup = "{\"schemaVersion\":2,\"schemaVersion\":2}";
	expect_fail(lb_manifest_parse(dup, strlen(dup), &m, &err), err, "invalid JSON");
	const char *neither = "{\"schemaVersion\":2}";
	expect_fail(lb_manifest_parse(neither, strlen(neither), &m, &err), err, "neither");
}

Test(manifest, size_limit)
{
	size_t big = LB_MANIFEST_MAX + 1;
	char *pad = malloc(big);
	memset(pad, 'a', big - 1);
	pad[big - 1] = '\0';
	json_t *j = json_pack("{s:i, s:s, s:o, s:[], s:{s:s}}", "schemaVersion", 2, "mediaType",
			      LB_MT_OCI_MANIFEST, "config", desc(LB_MT_OCI_CONFIG, dg('c'), 1),
			      "layers", "annotations", "pad", pad);
	char *s = dump(j);
	struct lb_manifest *m = NULL;
	struct lb_index *ix = NULL;
	struct lb_err *err = NULL;
	enum lb_media_kind k;

	expect_fail(lb_manifest_parse(s, strlen(s), &m, &err), err, "too large");
	expect_fail(lb_index_parse(s, strlen(s), &ix, &err), err, "too large");
	cr_assert_lt(lb_document_kind(s, strlen(s), &k, &err), 0);
	cr_assert_eq(err->errnum, EFBIG);
	lb_err_free(&err);
	free(s);
	free(pad);
}

Test(manifest, digest_strings)
{
	const char *bad[] = {
	    "",
	    "sha256:",
	    "sha256:abc",
	    "md5:d41d8cd98f00b204e9800998ecf8427e",
	    "sha256:ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789",
	    "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdeff",
	    "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdeg",
	    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
	    "sha256:../../../../etc/passwd"};
	struct lb_err *err = NULL;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_lt(lb_oci_digest_check(bad[i], &err), 0, "'%s' accepted", bad[i]);
		lb_err_free(&err);
	}
	expect_fail(lb_oci_digest_check("sha512:abcd", &err), err, "unsupported digest algorithm");
	cr_assert_eq(lb_oci_digest_check(dg('a'), &err), 0);

	/* A manifest whose layer carries a bad digest is refused. */
	json_t *m = json_pack("{s:i, s:o, s:[o]}", "schemaVersion", 2, "config",
			      desc(LB_MT_OCI_CONFIG, dg('c'), 1), "layers",
			      desc(LB_MT_OCI_LAYER, "sha256:1234", 1));
	char *s = dump(m);
	struct lb_manifest *man = NULL;
	expect_fail(lb_manifest_parse(s, strlen(s), &man, &err), err, "invalid digest");
	free(s);
	m = json_pack("{s:i, s:o, s:[]}", "schemaVersion", 2, "config",
		      json_pack("{s:s, s:s, s:i}", "mediaType", LB_MT_OCI_CONFIG, "digest", dg('c'),
				"size", -5),
		      "layers");
	s = dump(m);
	expect_fail(lb_manifest_parse(s, strlen(s), &man, &err), err, "size");
	free(s);
}

static struct lb_index *index_of(json_t *manifests, const char *mt)
{
	json_t *j = json_pack("{s:i, s:o}", "schemaVersion", 2, "manifests", manifests);
	if (mt)
		json_object_set_new(j, "mediaType", json_string(mt));
	char *s = dump(j);
	struct lb_index *ix = NULL;
	struct lb_err *err = NULL;
	cr_assert_eq(lb_index_parse(s, strlen(s), &ix, &err), 0, "%s", err ? err->msg : "");
	free(s);
	return ix;
}

Test(manifest, index_host_selection_skips_attestations)
{
	json_t *att = plat_desc(dg('0'), "unknown", "unknown", NULL);
	json_object_set_new(att, "annotations",
			    json_pack("{s:s, s:s}", "vnd.docker.reference.type",
				      "attestation-manifest", "vnd.docker.reference.digest",
				      dg('1')));
	struct lb_index *ix =
	    index_of(json_pack("[o, o, o, o]", att, plat_desc(dg('2'), "linux", "arm64", "v8"),
			       plat_desc(dg('1'), "linux", "amd64", NULL),
			       plat_desc(dg('3'), "windows", "amd64", NULL)),
		     LB_MT_OCI_INDEX);
	const struct lb_descriptor *d = NULL;
	struct lb_err *err = NULL;
	struct lb_platform amd = {"linux", "amd64", NULL}, host;

	cr_assert_eq(ix->n_manifests, 4);
	cr_assert_eq(lb_index_select(ix, &amd, &d, &err), 0);
	cr_assert_str_eq(d->digest, dg('1'));
	lb_platform_host(&host);
	cr_assert_str_eq(host.os, "linux");
#if defined(__x86_64__)
	cr_assert_str_eq(host.architecture, "amd64");
	cr_assert_eq(lb_index_select(ix, NULL, &d, &err), 0);
	cr_assert_str_eq(d->digest, dg('1'));
#endif
	struct lb_platform arm = {"linux", "arm64", "v8"};
	cr_assert_eq(lb_index_select(ix, &arm, &d, &err), 0);
	cr_assert_str_eq(d->digest, dg('2'));
	struct lb_platform s390 = {"linux", "s390x", NULL};
	expect_fail(lb_index_select(ix, &s390, &d, &err), err, "linux/arm64/v8, linux/amd64");
	lb_index_free(ix);
}

Test(manifest, variant_selection)
{
	struct lb_index *ix =
	    index_of(json_pack("[o, o, o, o]", plat_desc(dg('1'), "linux", "arm64", NULL),
			       plat_desc(dg('2'), "linux", "arm64", "v8"),
			       plat_desc(dg('3'), "linux", "arm", "v6"),
			       plat_desc(dg('4'), "linux", "arm", "v7")),
		     LB_MT_DOCKER_LIST);
	const struct lb_descriptor *d = NULL;
	struct lb_err *err = NULL;
	struct lb_platform arm64 = {"linux", "arm64", "v8"}, armv7 = {"linux", "arm", "v7"},
			   armv5 = {"linux", "arm", "v5"};

	cr_assert_str_eq(ix->media_type, LB_MT_DOCKER_LIST);
	/* The explicit v8 beats the entry without variant. */
	cr_assert_eq(lb_index_select(ix, &arm64, &d, &err), 0);
	cr_assert_str_eq(d->digest, dg('2'));
	cr_assert_eq(lb_index_select(ix, &armv7, &d, &err), 0);
	cr_assert_str_eq(d->digest, dg('4'));
	expect_fail(lb_index_select(ix, &armv5, &d, &err), err,
		    "no image for platform linux/arm/v5");
	lb_index_free(ix);

	/* arm64 without any variant entry still matches arm64/v8. */
	ix = index_of(json_pack("[o]", plat_desc(dg('5'), "linux", "arm64", NULL)), NULL);
	cr_assert_eq(lb_index_select(ix, &arm64, &d, &err), 0);
	cr_assert_str_eq(d->digest, dg('5'));
	lb_index_free(ix);
}

Test(manifest, index_rejects)
{
	struct lb_index *ix = NULL;
	struct lb_err *err = NULL;
	char *s = oci_manifest(LB_MT_OCI_MANIFEST, LB_MT_OCI_CONFIG, LB_MT_OCI_LAYER);
	expect_fail(lb_index_parse(s, strlen(s), &ix, &err), err, "expected an image index");
	free(s);
	s = dump(json_pack("{s:i, s:[o]}", "schemaVersion", 2, "manifests",
			   desc(LB_MT_OCI_MANIFEST, "sha256:zz", 3)));
	expect_fail(lb_index_parse(s, strlen(s), &ix, &err), err, "manifests[0]");
	free(s);
}

Test(manifest, image_config)
{
	json_t *j =
	    json_pack("{s:s, s:s, s:{s:[s, s], s:[s], s:[s, s], s:s, s:s}, s:{s:s, s:[s, s]}}",
		      "os", "linux", "architecture", "amd64", "config", "Env", "PATH=/usr/bin",
		      "A=b", "Entrypoint", "/init", "Cmd", "sh", "-c", "WorkingDir", "/srv", "User",
		      "app:app", "rootfs", "type", "layers", "diff_ids", dg('1'), dg('2'));
	char *s = dump(j);
	struct lb_image_config *c = NULL;
	struct lb_err *err = NULL;

	cr_assert_eq(lb_image_config_parse(s, strlen(s), &c, &err), 0, "%s", err ? err->msg : "");
	cr_assert_str_eq(c->architecture, "amd64");
	cr_assert_str_eq(c->env[1], "A=b");
	cr_assert_null(c->env[2]);
	cr_assert_str_eq(c->entrypoint[0], "/init");
	cr_assert_str_eq(c->cmd[1], "-c");
	cr_assert_str_eq(c->working_dir, "/srv");
	cr_assert_str_eq(c->user, "app:app");
	cr_assert_eq(c->n_diff_ids, 2);
	cr_assert_str_eq(c->diff_ids[1], dg('2'));
	lb_image_config_free(c);
	free(s);

	/* null Cmd/Entrypoint are fine; a missing rootfs or a bad diff_id is not. */
	const char *minimal =
	    "{\"config\":{\"Cmd\":null},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[]}}";
	cr_assert_eq(lb_image_config_parse(minimal, strlen(minimal), &c, &err), 0);
	cr_assert_null(c->cmd);
	cr_assert_eq(c->n_diff_ids, 0);
	lb_image_config_free(c);
	const char *norootfs = "{\"config\":{}}";
	expect_fail(lb_image_config_parse(norootfs, strlen(norootfs), &c, &err), err, "rootfs");
	const char *baddiff = "{\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"sha256:1\"]}}";
	expect_fail(lb_image_config_parse(baddiff, strlen(baddiff), &c, &err), err, "diff_ids[0]");
	const char *badenv =
	    "{\"config\":{\"Env\":[1]},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[]}}";
	expect_fail(lb_image_config_parse(badenv, strlen(badenv), &c, &err), err, "Env");
}
