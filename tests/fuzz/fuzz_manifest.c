/*
 * Fuzz target: OCI / Docker image documents (src/image/manifest.c) as a registry or an archive
 * hands them over: every input goes through the kind check and the three parsers (index,
 * manifest, image config), and a parsed index through platform selection.
 *
 * Properties checked besides the sanitizers: the kind lb_document_kind reports agrees with the
 * parser that accepts the document; every digest a parser hands out passes lb_oci_digest_check;
 * lb_index_select picks an entry of the index that matches the platform asked for.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "lbbox/image/manifest.h"

static void check_descriptor(const struct lb_descriptor *d)
{
	FUZZ_CHECK(d->media_type, "a descriptor without a media type");
	FUZZ_CHECK(lb_oci_digest_check(d->digest, NULL) == 0, "descriptor digest '%s'",
		   d->digest ? d->digest : "(null)");
	/* the lookups the puller makes on every descriptor */
	enum lb_compression c;
	lb_layer_compression(d->media_type, &c, NULL);
	lb_media_kind(d->media_type);
	lb_descriptor_annotation(d, LB_ANNOT_REF_NAME);
	lb_descriptor_annotation(d, "vnd.docker.reference.type");
}

static void select_for(const struct lb_index *ix, const struct lb_platform *want)
{
	const struct lb_descriptor *d = NULL;
	struct lb_err *err = NULL;
	struct lb_platform host;

	if (lb_index_select(ix, want, &d, &err) == 0) {
		FUZZ_CHECK(d >= ix->manifests && d < ix->manifests + ix->n_manifests,
			   "the selected entry is not in the index");
		if (!want)
			lb_platform_host(&host);
		FUZZ_CHECK(lb_platform_matches(d, want ? want : &host),
			   "the selected entry does not match the platform");
	} else {
		FUZZ_CHECK(err && err->msg, "no selection and no error");
	}
	lb_err_free(&err);
}

static void index_doc(const char *buf, size_t len, bool have_kind, enum lb_media_kind kind)
{
	static const struct lb_platform platforms[] = {
	    {"linux", "arm64", "v8"},
	    {"linux", "arm", "v7"},
	    {"linux", "amd64", NULL},
	    {"windows", "amd64", NULL},
	};
	struct lb_index *ix = NULL;
	struct lb_err *err = NULL;

	if (lb_index_parse(buf, len, &ix, &err) < 0) {
		lb_err_free(&err);
		return;
	}
	FUZZ_CHECK(have_kind && kind == LB_MEDIA_INDEX, "an index of kind %d", (int)kind);
	for (size_t i = 0; i < ix->n_manifests; i++)
		check_descriptor(&ix->manifests[i]);
	select_for(ix, NULL);
	for (size_t i = 0; i < sizeof(platforms) / sizeof(platforms[0]); i++)
		select_for(ix, &platforms[i]);
	lb_index_free(ix);
}

static void manifest_doc(const char *buf, size_t len, bool have_kind, enum lb_media_kind kind)
{
	struct lb_manifest *m = NULL;
	struct lb_err *err = NULL;
	enum lb_compression c;

	if (lb_manifest_parse(buf, len, &m, &err) < 0) {
		lb_err_free(&err);
		return;
	}
	FUZZ_CHECK(have_kind && kind == LB_MEDIA_MANIFEST, "a manifest of kind %d", (int)kind);
	check_descriptor(&m->config);
	FUZZ_CHECK(lb_media_kind(m->config.media_type) == LB_MEDIA_CONFIG,
		   "config media type '%s' accepted", m->config.media_type);
	for (size_t i = 0; i < m->n_layers; i++) {
		check_descriptor(&m->layers[i]);
		FUZZ_CHECK(lb_layer_compression(m->layers[i].media_type, &c, NULL) == 0,
			   "layer media type '%s' accepted", m->layers[i].media_type);
	}
	lb_manifest_free(m);
}

static void config_doc(const char *buf, size_t len)
{
	struct lb_image_config *c = NULL;
	struct lb_err *err = NULL;

	if (lb_image_config_parse(buf, len, &c, &err) < 0) {
		lb_err_free(&err);
		return;
	}
	size_t n = 0;
	while (c->diff_ids[n])
		FUZZ_CHECK(lb_oci_digest_check(c->diff_ids[n++], NULL) == 0, "diff_id '%s'",
			   c->diff_ids[n - 1]);
	FUZZ_CHECK(n == c->n_diff_ids, "%zu diff_ids counted as %zu", n, c->n_diff_ids);
	lb_image_config_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	enum lb_media_kind kind = LB_MEDIA_UNKNOWN;
	struct lb_err *err = NULL;

	bool have_kind = lb_document_kind(buf, size, &kind, &err) == 0;
	lb_err_free(&err);
	index_doc(buf, size, have_kind, kind);
	manifest_doc(buf, size, have_kind, kind);
	config_doc(buf, size);
	return 0;
}
