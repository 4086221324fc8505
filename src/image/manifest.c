/* OCI and Docker image documents parsed with jansson into plain structs; platform selection. */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/json_util.h"
#include "lbbox/image/manifest.h"

static const struct {
	const char *type;
	enum lb_media_kind kind;
	enum lb_compression comp;
} media_types[] = {
    {LB_MT_OCI_INDEX, LB_MEDIA_INDEX, 0},
    {LB_MT_DOCKER_LIST, LB_MEDIA_INDEX, 0},
    {LB_MT_OCI_MANIFEST, LB_MEDIA_MANIFEST, 0},
    {LB_MT_DOCKER_MANIFEST, LB_MEDIA_MANIFEST, 0},
    {LB_MT_OCI_CONFIG, LB_MEDIA_CONFIG, 0},
    {LB_MT_DOCKER_CONFIG, LB_MEDIA_CONFIG, 0},
    {LB_MT_OCI_LAYER, LB_MEDIA_LAYER, LB_COMPRESSION_NONE},
    {LB_MT_OCI_LAYER_GZIP, LB_MEDIA_LAYER, LB_COMPRESSION_GZIP},
    {LB_MT_OCI_LAYER_ZSTD, LB_MEDIA_LAYER, LB_COMPRESSION_ZSTD},
    /* Deprecated by OCI but still produced by older tools. */
    {"application/vnd.oci.image.layer.nondistributable.v1.tar", LB_MEDIA_LAYER,
     LB_COMPRESSION_NONE},
    {"application/vnd.oci.image.layer.nondistributable.v1.tar+gzip", LB_MEDIA_LAYER,
     LB_COMPRESSION_GZIP},
    {"application/vnd.oci.image.layer.nondistributable.v1.tar+zstd", LB_MEDIA_LAYER,
     LB_COMPRESSION_ZSTD},
    {LB_MT_DOCKER_LAYER, LB_MEDIA_LAYER, LB_COMPRESSION_NONE},
    {LB_MT_DOCKER_LAYER_GZ, LB_MEDIA_LAYER, LB_COMPRESSION_GZIP},
    {LB_MT_DOCKER_FOREIGN, LB_MEDIA_LAYER, LB_COMPRESSION_GZIP},
};

enum lb_media_kind lb_media_kind(const char *media_type)
{
	for (size_t i = 0; media_type && i < sizeof(media_types) / sizeof(media_types[0]); i++)
		if (strcmp(media_types[i].type, media_type) == 0)
			return media_types[i].kind;
	return LB_MEDIA_UNKNOWN;
}

int lb_layer_compression(const char *media_type, enum lb_compression *out, struct lb_err **err)
{
	for (size_t i = 0; media_type && i < sizeof(media_types) / sizeof(media_types[0]); i++) {
		if (media_types[i].kind == LB_MEDIA_LAYER &&
		    strcmp(media_types[i].type, media_type) == 0) {
			*out = media_types[i].comp;
			return 0;
		}
	}
	return lb_err_set(err, 0, "unsupported layer media type '%s'",
			  media_type ? media_type : "");
}

int lb_oci_digest_check(const char *digest, struct lb_err **err)
{
	if (!digest || strncmp(digest, "sha256:", 7) != 0) {
		const char *colon = digest ? strchr(digest, ':') : NULL;
		if (colon)
			return lb_err_set(err, 0, "unsupported digest algorithm in '%s'", digest);
		return lb_err_set(err, 0, "invalid digest '%s'", digest ? digest : "");
	}
	const char *hex = digest + 7;
	size_t n = strspn(hex, "0123456789abcdef");
	if (n != 64 || hex[n])
		return lb_err_set(err, 0, "invalid digest '%s'", digest);
	return 0;
}

static int doc_load(const char *buf, size_t len, size_t max, const char *what, json_t **out,
		    struct lb_err **err)
{
	json_error_t jerr;

	if (len > max)
		return lb_err_set(err, EFBIG, "%s too large: %zu bytes (limit %zu MiB)", what, len,
				  max >> 20);
	json_t *j = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!j)
		return lb_err_set(err, 0, "%s: invalid JSON: %s (line %d)", what, jerr.text,
				  jerr.line);
	if (!json_is_object(j)) {
		json_decref(j);
		return lb_err_set(err, 0, "%s: not a JSON object", what);
	}
	*out = j;
	return 0;
}

/* Optional string member: absent or null -> NULL; any other type is an error. */
static int opt_str(json_t *obj, const char *key, char **out, struct lb_err **err)
{
	json_t *v = json_object_get(obj, key);

	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return lb_err_set(err, 0, "'%s' is not a string", key);
	*out = strdup(json_string_value(v));
	return *out ? 0 : lb_err_set(err, ENOMEM, "%s", key);
}

/* Optional array of strings -> NULL-terminated vector (NULL when absent or null). */
static int opt_strv(json_t *obj, const char *key, char ***out, size_t *count, struct lb_err **err)
{
	json_t *v = json_object_get(obj, key), *it;
	size_t i;

	*out = NULL;
	if (count)
		*count = 0;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_array(v))
		return lb_err_set(err, 0, "'%s' is not an array", key);
	_cleanup_strv_ char **vec = calloc(json_array_size(v) + 1, sizeof(char *));
	if (!vec)
		return lb_err_set(err, ENOMEM, "%s", key);
	json_array_foreach(v, i, it)
	{
		if (!json_is_string(it))
			return lb_err_set(err, 0, "'%s' holds a non-string", key);
		if (!(vec[i] = strdup(json_string_value(it))))
			return lb_err_set(err, ENOMEM, "%s", key);
	}
	if (count)
		*count = json_array_size(v);
	*out = LB_TAKE_PTR(vec);
	return 0;
}

/* A JSON object of strings -> key, value, ..., NULL. lenient: other values are skipped (image
 * labels are informational; a tool's odd label must not make the image unusable). */
static int string_map_parse(json_t *obj, const char *key, bool lenient, char ***out,
			    struct lb_err **err)
{
	json_t *a = json_object_get(obj, key), *v;
	const char *k;
	size_t i = 0;

	*out = NULL;
	if (!a || json_is_null(a) || (lenient && !json_is_object(a)))
		return 0;
	if (!json_is_object(a))
		return lb_err_set(err, 0, "'%s' is not an object", key);
	_cleanup_strv_ char **vec = calloc(2 * json_object_size(a) + 1, sizeof(char *));
	if (!vec)
		return lb_err_set(err, ENOMEM, "%s", key);
	json_object_foreach(a, k, v)
	{
		if (!json_is_string(v) && lenient)
			continue;
		if (!json_is_string(v))
			return lb_err_set(err, 0, "%s '%s' is not a string", key, k);
		if (!(vec[i++] = strdup(k)) || !(vec[i++] = strdup(json_string_value(v))))
			return lb_err_set(err, ENOMEM, "%s", key);
	}
	*out = LB_TAKE_PTR(vec);
	return 0;
}

static int annotations_parse(json_t *obj, char ***out, struct lb_err **err)
{
	return string_map_parse(obj, "annotations", false, out, err);
}

const char *lb_descriptor_annotation(const struct lb_descriptor *d, const char *key)
{
	for (char **p = d->annotations; p && p[0] && p[1]; p += 2)
		if (strcmp(p[0], key) == 0)
			return p[1];
	return NULL;
}

void lb_descriptor_clear(struct lb_descriptor *d)
{
	free(d->media_type);
	free(d->digest);
	free(d->os);
	free(d->architecture);
	free(d->variant);
	lb_strvfreep(&d->annotations);
	memset(d, 0, sizeof(*d));
}

static int platform_parse(json_t *obj, struct lb_descriptor *d, struct lb_err **err)
{
	json_t *p = json_object_get(obj, "platform");

	if (!p || json_is_null(p))
		return 0;
	if (!json_is_object(p))
		return lb_err_set(err, 0, "'platform' is not an object");
	if (opt_str(p, "os", &d->os, err) < 0 ||
	    opt_str(p, "architecture", &d->architecture, err) < 0 ||
	    opt_str(p, "variant", &d->variant, err) < 0)
		return lb_err_wrap(err, "platform");
	return 0;
}

static int descriptor_parse(json_t *obj, struct lb_descriptor *d, struct lb_err **err)
{
	json_t *size = json_object_get(obj, "size");

	if (!json_is_object(obj))
		return lb_err_set(err, 0, "descriptor is not an object");
	if (opt_str(obj, "mediaType", &d->media_type, err) < 0 ||
	    opt_str(obj, "digest", &d->digest, err) < 0)
		return -1;
	if (!d->media_type)
		return lb_err_set(err, 0, "descriptor without mediaType");
	if (lb_oci_digest_check(d->digest, err) < 0)
		return -1;
	if (!json_is_integer(size) || json_integer_value(size) < 0)
		return lb_err_set(err, 0, "descriptor %s: missing or negative size", d->digest);
	d->size = (uint64_t)json_integer_value(size);
	if (platform_parse(obj, d, err) < 0 || annotations_parse(obj, &d->annotations, err) < 0)
		return lb_err_wrap(err, "descriptor %s", d->digest);
	return 0;
}

static int schema_check(json_t *j, const char *what, struct lb_err **err)
{
	json_t *v = json_object_get(j, "schemaVersion");

	if (json_is_integer(v) && json_integer_value(v) == 1)
		return lb_err_set(err, 0, "%s: Docker schema 1 manifests are not supported", what);
	if (!json_is_integer(v) || json_integer_value(v) != 2)
		return lb_err_set(err, 0, "%s: schemaVersion is not 2", what);
	return 0;
}

static int json_kind(json_t *j, enum lb_media_kind *out, struct lb_err **err)
{
	json_t *mt = json_object_get(j, "mediaType");

	if (schema_check(j, "manifest", err) < 0)
		return -1;
	if (mt && !json_is_string(mt))
		return lb_err_set(err, 0, "manifest: 'mediaType' is not a string");
	if (mt) {
		enum lb_media_kind k = lb_media_kind(json_string_value(mt));
		if (k != LB_MEDIA_INDEX && k != LB_MEDIA_MANIFEST)
			return lb_err_set(err, 0, "unsupported manifest media type '%s'",
					  json_string_value(mt));
		*out = k;
		return 0;
	}
	if (json_object_get(j, "manifests"))
		*out = LB_MEDIA_INDEX;
	else if (json_object_get(j, "config") && json_object_get(j, "layers"))
		*out = LB_MEDIA_MANIFEST;
	else
		return lb_err_set(err, 0, "manifest: neither an index nor an image manifest");
	return 0;
}

int lb_document_kind(const char *buf, size_t len, enum lb_media_kind *out, struct lb_err **err)
{
	_cleanup_json_ json_t *j = NULL;

	if (doc_load(buf, len, LB_MANIFEST_MAX, "manifest", &j, err) < 0)
		return -1;
	return json_kind(j, out, err);
}

void lb_index_free(struct lb_index *ix)
{
	if (!ix)
		return;
	for (size_t i = 0; i < ix->n_manifests; i++)
		lb_descriptor_clear(&ix->manifests[i]);
	free(ix->manifests);
	free(ix->media_type);
	lb_strvfreep(&ix->annotations);
	free(ix);
}

static void index_freep(struct lb_index **ix)
{
	lb_index_free(*ix);
}

static int descriptors_parse(json_t *arr, const char *key, struct lb_descriptor **out, size_t *n,
			     struct lb_err **err)
{
	json_t *it;
	size_t i;

	if (!json_is_array(arr))
		return lb_err_set(err, 0, "'%s' is not an array", key);
	*out = calloc(json_array_size(arr) + 1, sizeof(**out));
	if (!*out)
		return lb_err_set(err, ENOMEM, "%s", key);
	json_array_foreach(arr, i, it)
	{
		*n = i + 1;
		if (descriptor_parse(it, &(*out)[i], err) < 0)
			return lb_err_wrap(err, "%s[%zu]", key, i);
	}
	return 0;
}

int lb_index_parse(const char *buf, size_t len, struct lb_index **out, struct lb_err **err)
{
	_cleanup_json_ json_t *j = NULL;
	_cleanup_(index_freep) struct lb_index *ix = NULL;
	enum lb_media_kind kind;

	if (doc_load(buf, len, LB_MANIFEST_MAX, "index", &j, err) < 0 ||
	    json_kind(j, &kind, err) < 0)
		return -1;
	if (kind != LB_MEDIA_INDEX)
		return lb_err_set(err, 0, "expected an image index, found an image manifest");
	if (!(ix = calloc(1, sizeof(*ix))))
		return lb_err_set(err, ENOMEM, "index");
	if (opt_str(j, "mediaType", &ix->media_type, err) < 0 ||
	    annotations_parse(j, &ix->annotations, err) < 0 ||
	    descriptors_parse(json_object_get(j, "manifests"), "manifests", &ix->manifests,
			      &ix->n_manifests, err) < 0)
		return lb_err_wrap(err, "index");
	*out = LB_TAKE_PTR(ix);
	return 0;
}

void lb_manifest_free(struct lb_manifest *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n_layers; i++)
		lb_descriptor_clear(&m->layers[i]);
	free(m->layers);
	lb_descriptor_clear(&m->config);
	free(m->media_type);
	lb_strvfreep(&m->annotations);
	free(m);
}

static void manifest_freep(struct lb_manifest **m)
{
	lb_manifest_free(*m);
}

/* Config and layer media types must be ones lbbox can use: an artifact manifest is not an image. */
static int manifest_check_types(const struct lb_manifest *m, struct lb_err **err)
{
	enum lb_compression c;

	if (lb_media_kind(m->config.media_type) != LB_MEDIA_CONFIG)
		return lb_err_set(err, 0, "unsupported config media type '%s'",
				  m->config.media_type);
	for (size_t i = 0; i < m->n_layers; i++)
		if (lb_layer_compression(m->layers[i].media_type, &c, err) < 0)
			return lb_err_wrap(err, "layer %s", m->layers[i].digest);
	return 0;
}

int lb_manifest_parse(const char *buf, size_t len, struct lb_manifest **out, struct lb_err **err)
{
	_cleanup_json_ json_t *j = NULL;
	_cleanup_(manifest_freep) struct lb_manifest *m = NULL;
	enum lb_media_kind kind;

	if (doc_load(buf, len, LB_MANIFEST_MAX, "manifest", &j, err) < 0 ||
	    json_kind(j, &kind, err) < 0)
		return -1;
	if (kind != LB_MEDIA_MANIFEST)
		return lb_err_set(err, 0, "expected an image manifest, found an index");
	if (!(m = calloc(1, sizeof(*m))))
		return lb_err_set(err, ENOMEM, "manifest");
	if (opt_str(j, "mediaType", &m->media_type, err) < 0 ||
	    annotations_parse(j, &m->annotations, err) < 0)
		return lb_err_wrap(err, "manifest");
	if (descriptor_parse(json_object_get(j, "config"), &m->config, err) < 0)
		return lb_err_wrap(err, "manifest config");
	if (descriptors_parse(json_object_get(j, "layers"), "layers", &m->layers, &m->n_layers,
			      err) < 0 ||
	    manifest_check_types(m, err) < 0)
		return lb_err_wrap(err, "manifest");
	*out = LB_TAKE_PTR(m);
	return 0;
}

void lb_image_config_free(struct lb_image_config *c)
{
	if (!c)
		return;
	free(c->os);
	free(c->architecture);
	free(c->variant);
	lb_strvfreep(&c->env);
	lb_strvfreep(&c->entrypoint);
	lb_strvfreep(&c->cmd);
	free(c->working_dir);
	free(c->user);
	free(c->created);
	lb_strvfreep(&c->labels);
	lb_strvfreep(&c->diff_ids);
	free(c);
}

static void config_freep(struct lb_image_config **c)
{
	lb_image_config_free(*c);
}

static int config_process(json_t *cfg, struct lb_image_config *c, struct lb_err **err)
{
	if (!cfg || json_is_null(cfg))
		return 0;
	if (!json_is_object(cfg))
		return lb_err_set(err, 0, "'config' is not an object");
	if (opt_strv(cfg, "Env", &c->env, NULL, err) < 0 ||
	    opt_strv(cfg, "Entrypoint", &c->entrypoint, NULL, err) < 0 ||
	    opt_strv(cfg, "Cmd", &c->cmd, NULL, err) < 0 ||
	    opt_str(cfg, "WorkingDir", &c->working_dir, err) < 0 ||
	    opt_str(cfg, "User", &c->user, err) < 0 ||
	    string_map_parse(cfg, "Labels", true, &c->labels, err) < 0)
		return -1;
	return 0;
}

static int config_rootfs(json_t *rootfs, struct lb_image_config *c, struct lb_err **err)
{
	json_t *type = json_object_get(rootfs, "type");

	if (!json_is_object(rootfs))
		return lb_err_set(err, 0, "missing 'rootfs'");
	if (!json_is_string(type) || strcmp(json_string_value(type), "layers") != 0)
		return lb_err_set(err, 0, "rootfs.type is not 'layers'");
	if (opt_strv(rootfs, "diff_ids", &c->diff_ids, &c->n_diff_ids, err) < 0)
		return lb_err_wrap(err, "rootfs");
	if (!c->diff_ids)
		return lb_err_set(err, 0, "missing rootfs.diff_ids");
	for (size_t i = 0; i < c->n_diff_ids; i++)
		if (lb_oci_digest_check(c->diff_ids[i], err) < 0)
			return lb_err_wrap(err, "rootfs.diff_ids[%zu]", i);
	return 0;
}

int lb_image_config_parse(const char *buf, size_t len, struct lb_image_config **out,
			  struct lb_err **err)
{
	_cleanup_json_ json_t *j = NULL;
	_cleanup_(config_freep) struct lb_image_config *c = NULL;

	if (doc_load(buf, len, LB_CONFIG_MAX, "image config", &j, err) < 0)
		return -1;
	if (!(c = calloc(1, sizeof(*c))))
		return lb_err_set(err, ENOMEM, "image config");
	if (opt_str(j, "os", &c->os, err) < 0 ||
	    opt_str(j, "architecture", &c->architecture, err) < 0 ||
	    opt_str(j, "variant", &c->variant, err) < 0 ||
	    (json_is_string(json_object_get(j, "created")) &&
	     opt_str(j, "created", &c->created, err) < 0) ||
	    config_process(json_object_get(j, "config"), c, err) < 0 ||
	    config_rootfs(json_object_get(j, "rootfs"), c, err) < 0)
		return lb_err_wrap(err, "image config");
	*out = LB_TAKE_PTR(c);
	return 0;
}

void lb_platform_host(struct lb_platform *out)
{
	out->os = "linux";
	out->variant = NULL;
#if defined(__x86_64__)
	out->architecture = "amd64";
#elif defined(__aarch64__)
	out->architecture = "arm64";
	out->variant = "v8";
#elif defined(__arm__)
	out->architecture = "arm";
	out->variant = "v7";
#elif defined(__i386__)
	out->architecture = "386";
#elif defined(__riscv) && __riscv_xlen == 64
	out->architecture = "riscv64";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	out->architecture = "ppc64le";
#elif defined(__s390x__)
	out->architecture = "s390x";
#else
	out->architecture = "unknown";
#endif
}

static bool is_attestation(const struct lb_descriptor *d)
{
	const char *t = lb_descriptor_annotation(d, "vnd.docker.reference.type");

	if (t && strcmp(t, "attestation-manifest") == 0)
		return true;
	return d->os && d->architecture && strcmp(d->os, "unknown") == 0 &&
	       strcmp(d->architecture, "unknown") == 0;
}

/* arm64 images often omit the variant: "" and "v8" are the same platform there. */
static bool variant_matches(const char *have, const char *want, const char *arch)
{
	if (!want)
		return true;
	if (!have)
		return strcmp(arch, "arm64") == 0 && strcmp(want, "v8") == 0;
	return strcmp(have, want) == 0;
}

bool lb_platform_matches(const struct lb_descriptor *d, const struct lb_platform *want)
{
	if (!d->os || !d->architecture || is_attestation(d))
		return false;
	return strcmp(d->os, want->os) == 0 && strcmp(d->architecture, want->architecture) == 0 &&
	       variant_matches(d->variant, want->variant, want->architecture);
}

static int no_match(const struct lb_index *ix, const struct lb_platform *want, struct lb_err **err)
{
	char have[512] = "";
	size_t n = 0;

	for (size_t i = 0; i < ix->n_manifests && n < sizeof(have) - 1; i++) {
		const struct lb_descriptor *d = &ix->manifests[i];
		if (!d->os || !d->architecture || is_attestation(d))
			continue;
		n += (size_t)snprintf(have + n, sizeof(have) - n, "%s%s/%s%s%s", n ? ", " : "",
				      d->os, d->architecture, d->variant ? "/" : "",
				      d->variant ? d->variant : "");
	}
	return lb_err_set(err, ENOENT, "no image for platform %s/%s%s%s (available: %s)", want->os,
			  want->architecture, want->variant ? "/" : "",
			  want->variant ? want->variant : "", n ? have : "none");
}

int lb_index_select(const struct lb_index *ix, const struct lb_platform *want,
		    const struct lb_descriptor **out, struct lb_err **err)
{
	struct lb_platform host;
	const struct lb_descriptor *best = NULL;

	if (!want) {
		lb_platform_host(&host);
		want = &host;
	}
	for (size_t i = 0; i < ix->n_manifests; i++) {
		const struct lb_descriptor *d = &ix->manifests[i];
		if (lb_media_kind(d->media_type) != LB_MEDIA_MANIFEST &&
		    lb_media_kind(d->media_type) != LB_MEDIA_INDEX)
			continue;
		if (!lb_platform_matches(d, want))
			continue;
		/* An exact variant beats an entry that matched by omitting it. */
		if (!best || (!best->variant && d->variant))
			best = d;
	}
	if (!best)
		return no_match(ix, want, err);
	*out = best;
	return 0;
}
