/* `docker save` import: manifest.json names a config file and layer tars by path. The layers are
 * verified against the config's rootfs.diff_ids (docker save writes no layer digests), and an OCI
 * manifest is synthesised so the store holds a regular OCI image. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "load_internal.h"
#include "store_internal.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"

/* The digest a path itself promises: "<hex>.json" (classic) or "blobs/sha256/<hex>" (docker 25+).
 */
static bool path_digest(const char *path, char digest[LB_DIGEST_BUF])
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	size_t n = strspn(base, "0123456789abcdef");

	if (n != 64 || (base[n] && strcmp(base + n, ".json") != 0))
		return false;
	snprintf(digest, LB_DIGEST_BUF, "sha256:%.64s", base);
	return true;
}

static int lookup(struct load_src *src, const char *path, const char *what,
		  const struct load_file **out, struct lb_err **err)
{
	char promised[LB_DIGEST_BUF];

	*out = load_src_lookup(src, path);
	if (!*out)
		return lb_err_set(err, ENOENT, "%s %s missing from the archive", what, path);
	if (path_digest(path, promised) && strcmp(promised, (*out)->digest) != 0)
		return lb_err_set(err, 0, "%s %s: digest mismatch, content hashes to %s", what,
				  path, (*out)->digest);
	return 0;
}

static int layer_compression(struct load_src *src, const char *digest, enum lb_compression *c,
			     struct lb_err **err)
{
	_cleanup_close_ int fd = -1;
	unsigned char m[4] = {0};

	if (lb_store_txn_open(src->t, digest, &fd, err) < 0)
		return -1;
	if (lb_read_all(fd, m, sizeof(m)) < 0)
		return lb_err_set(err, errno, "read layer %s", digest);
	*c = LB_COMPRESSION_NONE;
	if (m[0] == 0x1f && m[1] == 0x8b)
		*c = LB_COMPRESSION_GZIP;
	else if (m[0] == 0x28 && m[1] == 0xb5 && m[2] == 0x2f && m[3] == 0xfd)
		*c = LB_COMPRESSION_ZSTD;
	return 0;
}

static const char *layer_types[] = {LB_MT_OCI_LAYER, LB_MT_OCI_LAYER_GZIP, LB_MT_OCI_LAYER_ZSTD};

/* Verifies one layer against its diff_id and appends its descriptor to layers. */
static int import_layer(struct load_src *src, const char *path, const char *diff_id, json_t *layers,
			struct lb_err **err)
{
	const struct load_file *f;
	enum lb_compression c;
	char got[LB_DIGEST_BUF];

	if (lookup(src, path, "layer", &f, err) < 0 ||
	    layer_compression(src, f->digest, &c, err) < 0)
		return -1;
	if (c == LB_COMPRESSION_NONE)
		memcpy(got, f->digest, sizeof(got));
	else if (load_diff_id(src, f->digest, got, err) < 0)
		return -1;
	if (strcmp(got, diff_id) != 0)
		return lb_err_set(err, 0,
				  "layer %s: content hashes to %s, the config's diff_id is %s",
				  path, got, diff_id);
	if (lb_store_txn_keep(src->t, f->digest, err) < 0)
		return -1;
	if (json_array_append_new(layers,
				  json_pack("{s:s, s:s, s:I}", "mediaType", layer_types[c],
					    "digest", f->digest, "size", (json_int_t)f->size)) < 0)
		return lb_err_set(err, ENOMEM, "layer %s", path);
	return 0;
}

static int import_layers(struct load_src *src, json_t *paths, const struct lb_image_config *cfg,
			 json_t *layers, struct lb_err **err)
{
	json_t *p;
	size_t i;

	if (!json_is_array(paths) || json_array_size(paths) != cfg->n_diff_ids)
		return lb_err_set(err, 0, "manifest.json lists %zu layers, the config %zu diff_ids",
				  json_array_size(paths), cfg->n_diff_ids);
	json_array_foreach(paths, i, p)
	{
		if (!json_is_string(p))
			return lb_err_set(err, 0, "manifest.json: a layer path is not a string");
		if (import_layer(src, json_string_value(p), cfg->diff_ids[i], layers, err) < 0)
			return -1;
	}
	return 0;
}

/* Stores the synthesised OCI manifest; fills its digest and size. */
static int write_manifest(struct load_src *src, const struct load_file *config, json_t *layers,
			  char digest[LB_DIGEST_BUF], uint64_t *size, struct lb_err **err)
{
	json_t *m = json_pack("{s:i, s:s, s:{s:s, s:s, s:I}, s:O}", "schemaVersion", 2, "mediaType",
			      LB_MT_OCI_MANIFEST, "config", "mediaType", LB_MT_OCI_CONFIG, "digest",
			      config->digest, "size", (json_int_t)config->size, "layers", layers);
	_cleanup_free_ char *buf = m ? json_dumps(m, JSON_COMPACT) : NULL;

	json_decref(m);
	if (!buf)
		return lb_err_set(err, ENOMEM, "write manifest");
	*size = strlen(buf);
	if (lb_store_txn_put_buf(src->t, buf, *size, digest, err) < 0)
		return -1;
	return lb_store_txn_keep(src->t, digest, err);
}

static bool has_tag(json_t *tags, const char *tag)
{
	json_t *t;
	size_t i;

	json_array_foreach(tags, i, t)
	{
		if (json_is_string(t) && strcmp(json_string_value(t), tag) == 0)
			return true;
	}
	return false;
}

static int tag_image(struct load_src *src, json_t *tags, const char *digest, uint64_t size,
		     struct lb_err **err)
{
	const char *only = src->opts->tag;
	json_t *t;
	size_t i;

	if (src->opts->name || json_array_size(tags) == 0)
		return load_src_tag(src, NULL, LB_MT_OCI_MANIFEST, digest, size, err);
	json_array_foreach(tags, i, t)
	{
		if (!json_is_string(t) || (only && strcmp(json_string_value(t), only) != 0))
			continue;
		if (load_src_tag(src, json_string_value(t), LB_MT_OCI_MANIFEST, digest, size, err) <
		    0)
			return -1;
	}
	return 0;
}

static int import_entry(struct load_src *src, json_t *e, struct lb_err **err)
{
	const char *cpath = json_string_value(json_object_get(e, "Config"));
	const struct load_file *config;
	_cleanup_free_ char *buf = NULL;
	_cleanup_json_ json_t *layers = json_array();
	struct lb_image_config *cfg = NULL;
	char digest[LB_DIGEST_BUF];
	uint64_t size = 0;
	size_t len = 0;

	if (!cpath)
		return lb_err_set(err, 0, "manifest.json: an entry has no Config");
	if (lookup(src, cpath, "config", &config, err) < 0 ||
	    lb_store_txn_read(src->t, config->digest, LB_CONFIG_MAX, &buf, &len, err) < 0 ||
	    lb_image_config_parse(buf, len, &cfg, err) < 0)
		return -1;
	int r = layers ? import_layers(src, json_object_get(e, "Layers"), cfg, layers, err)
		       : lb_err_set(err, ENOMEM, "load");
	lb_image_config_free(cfg);
	if (r < 0 || lb_store_txn_keep(src->t, config->digest, err) < 0 ||
	    write_manifest(src, config, layers, digest, &size, err) < 0)
		return -1;
	return tag_image(src, json_object_get(e, "RepoTags"), digest, size, err);
}

int load_docker(struct load_src *src, struct lb_err **err)
{
	_cleanup_free_ char *buf = NULL;
	_cleanup_json_ json_t *j = NULL;
	size_t len = 0, i, matched = 0;
	json_t *e;

	if (load_src_read(src, "manifest.json", LB_MANIFEST_MAX, &buf, &len, err) < 0)
		return lb_err_wrap(err, "docker archive");
	j = json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_array(j))
		return lb_err_set(err, 0, "docker archive: manifest.json is not a JSON array");
	json_array_foreach(j, i, e)
	{
		json_t *tags = json_object_get(e, "RepoTags");
		if (src->opts->tag && !has_tag(tags, src->opts->tag))
			continue;
		matched++;
		if (import_entry(src, e, err) < 0)
			return lb_err_wrap(err, "docker archive, image %zu", i);
	}
	if (!matched && src->opts->tag)
		return lb_err_set(err, ENOENT, "no image tagged '%s' in the docker archive",
				  src->opts->tag);
	return 0;
}
