/* OCI layout import (directory or archive): index.json entries -> platform manifest -> config and
 * layers, each verified against its descriptor. */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "load_internal.h"
#include "store_internal.h"
#include "lbbox/base/cleanup.h"

/* containerd and docker >= 25 put the full reference in their own annotation; ref.name is often
 * just the tag. */
static const char *entry_name(const struct lb_descriptor *d)
{
	const char *full = lb_descriptor_annotation(d, LB_ANNOT_CONTAINERD);
	return full ? full : lb_descriptor_annotation(d, LB_ANNOT_REF_NAME);
}

static bool entry_selected(const struct lb_descriptor *d, const char *tag)
{
	const char *ref = lb_descriptor_annotation(d, LB_ANNOT_REF_NAME);
	const char *full = lb_descriptor_annotation(d, LB_ANNOT_CONTAINERD);

	if (!tag)
		return true;
	return (ref && strcmp(ref, tag) == 0) || (full && strcmp(full, tag) == 0);
}

static int read_doc(struct load_src *src, const struct lb_descriptor *d, bool keep, char **buf,
		    size_t *len, struct lb_err **err)
{
	if (d->size > LB_MANIFEST_MAX)
		return lb_err_set(err, EFBIG, "manifest %s too large: %llu bytes (limit %u MiB)",
				  d->digest, (unsigned long long)d->size, LB_MANIFEST_MAX >> 20);
	if (load_src_blob(src, d->digest, d->size, keep, err) < 0)
		return -1;
	return lb_store_txn_read(src->t, d->digest, LB_MANIFEST_MAX, buf, len, err);
}

static int import_config(struct load_src *src, const struct lb_manifest *m, struct lb_err **err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	struct lb_image_config *cfg = NULL;

	if (m->config.size > LB_CONFIG_MAX)
		return lb_err_set(err, EFBIG, "config %s too large", m->config.digest);
	if (load_src_blob(src, m->config.digest, m->config.size, true, err) < 0 ||
	    lb_store_txn_read(src->t, m->config.digest, LB_CONFIG_MAX, &buf, &len, err) < 0 ||
	    lb_image_config_parse(buf, len, &cfg, err) < 0)
		return -1;
	size_t n = cfg->n_diff_ids;
	lb_image_config_free(cfg);
	if (n != m->n_layers)
		return lb_err_set(err, 0, "config %s lists %zu diff_ids for %zu layers",
				  m->config.digest, n, m->n_layers);
	return 0;
}

static int import_manifest(struct load_src *src, const struct lb_descriptor *d, const char *name,
			   struct lb_err **err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	struct lb_manifest *m = NULL;
	int r = -1;

	if (read_doc(src, d, true, &buf, &len, err) < 0 || lb_manifest_parse(buf, len, &m, err) < 0)
		return lb_err_wrap(err, "manifest %s", d->digest);
	if (import_config(src, m, err) < 0)
		goto out;
	for (size_t i = 0; i < m->n_layers; i++)
		if (load_src_blob(src, m->layers[i].digest, m->layers[i].size, true, err) < 0)
			goto out;
	r = load_src_tag(src, name, d->media_type, d->digest, d->size, err);
out:
	lb_manifest_free(m);
	return r < 0 ? lb_err_wrap(err, "image %s", d->digest) : 0;
}

static int import_desc(struct load_src *src, const struct lb_descriptor *d, const char *name,
		       int depth, struct lb_err **err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	struct lb_index *ix = NULL;
	const struct lb_descriptor *pick;

	switch (lb_media_kind(d->media_type)) {
	case LB_MEDIA_MANIFEST:
		return import_manifest(src, d, name, err);
	case LB_MEDIA_INDEX:
		break;
	default:
		return lb_err_set(err, 0, "%s: unsupported media type '%s'", d->digest,
				  d->media_type);
	}
	if (depth > 2)
		return lb_err_set(err, ELOOP, "index %s: nested too deeply", d->digest);
	/* Only the platform's manifest is stored: the index itself is not kept. */
	if (read_doc(src, d, false, &buf, &len, err) < 0 || lb_index_parse(buf, len, &ix, err) < 0)
		return lb_err_wrap(err, "index %s", d->digest);
	int r = lb_index_select(ix, src->opts->platform, &pick, err);
	if (r == 0)
		r = import_desc(src, pick, name, depth + 1, err);
	lb_index_free(ix);
	return r < 0 ? lb_err_wrap(err, "index %s", d->digest) : 0;
}

static int layout_check(struct load_src *src, struct lb_err **err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;

	if (load_src_read(src, "oci-layout", 4096, &buf, &len, err) < 0)
		return -1;
	json_t *j = json_loadb(buf, len, 0, NULL);
	bool ok = json_is_string(json_object_get(j, "imageLayoutVersion"));
	json_decref(j);
	return ok ? 0 : lb_err_set(err, 0, "oci-layout: no imageLayoutVersion");
}

int load_oci(struct load_src *src, struct lb_err **err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0, matched = 0;
	struct lb_index *ix = NULL;
	const char *tag = src->opts->tag;
	int r = 0;

	if (layout_check(src, err) < 0 ||
	    load_src_read(src, "index.json", LB_MANIFEST_MAX, &buf, &len, err) < 0 ||
	    lb_index_parse(buf, len, &ix, err) < 0)
		return lb_err_wrap(err, "OCI layout");
	for (size_t i = 0; i < ix->n_manifests && r == 0; i++) {
		const struct lb_descriptor *d = &ix->manifests[i];
		if (!entry_selected(d, tag))
			continue;
		matched++;
		r = import_desc(src, d, entry_name(d), 0, err);
	}
	lb_index_free(ix);
	if (r < 0)
		return -1;
	if (!matched && tag)
		return lb_err_set(err, ENOENT, "no image tagged '%s' in the OCI layout", tag);
	if (!matched)
		return lb_err_set(err, ENOENT, "the OCI layout holds no image");
	return 0;
}
