/*
 * The two archive layouts `save` writes, as podman does:
 *   docker-archive: manifest.json ([{Config, RepoTags, Layers}]), the config as <hex>.json and
 *     every layer decompressed as <diff_id hex>.tar: what `docker load` and skopeo read;
 *   oci-archive: an OCI image layout (oci-layout, index.json with ref.name annotations,
 *     blobs/sha256/) in a tar, the blobs exactly as stored.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "save_internal.h"
#include "lbbox/base/cleanup.h"

static int write_json(struct save_tar *t, const char *path, json_t *j, struct lb_err **err)
{
	_cleanup_free_ char *text = json_dumps(j, JSON_COMPACT);
	if (!text)
		return lb_err_set(err, ENOMEM, "save: %s", path);
	return save_tar_buf(t, path, text, strlen(text), err);
}

/* A docker RepoTag is NAME:TAG; a name pinned by digest has no place there. */
static json_t *repo_tags(const struct save_image *img)
{
	if (!img->name || strchr(img->name, '@'))
		return json_null();
	json_t *a = json_array();
	json_array_append_new(a, json_string(img->name));
	return a;
}

static int docker_image(struct save_tar *t, const struct save_image *img, json_t *list,
			struct lb_err **err)
{
	const struct lb_manifest *m = img->m;
	char path[LB_DIGEST_BUF + 16];
	json_t *layers = json_array();

	if (m->n_layers != img->cfg->n_diff_ids)
		return lb_err_set(err, 0, "save: image %s: %zu layers but %zu diff_ids",
				  img->digest, m->n_layers, img->cfg->n_diff_ids);
	snprintf(path, sizeof(path), "%s.json", m->config.digest + 7);
	json_array_append_new(list, json_pack("{s:s, s:o, s:o}", "Config", path, "RepoTags",
					      repo_tags(img), "Layers", layers));
	if (save_tar_blob(t, path, m->config.digest, err) < 0)
		return -1;
	for (size_t i = 0; i < m->n_layers; i++) {
		snprintf(path, sizeof(path), "%s.tar", img->cfg->diff_ids[i] + 7);
		json_array_append_new(layers, json_string(path));
		if (save_tar_layer(t, path, &m->layers[i], img->cfg->diff_ids[i], err) < 0)
			return -1;
	}
	return 0;
}

int save_docker(struct save_tar *t, struct save_image *v, size_t n, struct lb_err **err)
{
	_cleanup_(json_decrefp) json_t *list = json_array();
	if (!list)
		return lb_err_set(err, ENOMEM, "save");
	for (size_t i = 0; i < n; i++)
		if (docker_image(t, &v[i], list, err) < 0)
			return -1;
	return write_json(t, "manifest.json", list, err);
}

static int oci_blob(struct save_tar *t, const char *digest, struct lb_err **err)
{
	char path[LB_DIGEST_BUF + 16];
	snprintf(path, sizeof(path), "blobs/sha256/%s", digest + 7);
	return save_tar_blob(t, path, digest, err);
}

static json_t *oci_descriptor(const struct save_image *img)
{
	json_t *d = json_pack("{s:s, s:s, s:I}", "mediaType", img->media_type, "digest",
			      img->digest, "size", (json_int_t)img->size);
	if (d && img->name)
		json_object_set_new(d, "annotations",
				    json_pack("{s:s}", LB_ANNOT_REF_NAME, img->name));
	return d;
}

int save_oci(struct save_tar *t, struct save_image *v, size_t n, struct lb_err **err)
{
	static const char layout[] = "{\"imageLayoutVersion\":\"1.0.0\"}";
	_cleanup_(json_decrefp) json_t *manifests = json_array(), *index = NULL;

	if (save_tar_buf(t, "oci-layout", layout, strlen(layout), err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		const struct lb_manifest *m = v[i].m;
		if (oci_blob(t, v[i].digest, err) < 0 || oci_blob(t, m->config.digest, err) < 0)
			return -1;
		for (size_t k = 0; k < m->n_layers; k++)
			if (oci_blob(t, m->layers[k].digest, err) < 0)
				return -1;
		json_array_append_new(manifests, oci_descriptor(&v[i]));
	}
	index = json_pack("{s:i, s:s, s:O}", "schemaVersion", 2, "mediaType", LB_MT_OCI_INDEX,
			  "manifests", manifests);
	if (!index)
		return lb_err_set(err, ENOMEM, "save");
	return write_json(t, "index.json", index, err);
}
