/* index.json: names (org.opencontainers.image.ref.name) -> manifest digests. Read lock-free (it
 * is only ever replaced by rename), modified under the store lock. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store_internal.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"

int store_index_load(struct lb_store *s, json_t **out, struct lb_err **err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	json_error_t jerr;

	if (lb_read_fileat(s->root_fd, "index.json", LB_MANIFEST_MAX, &buf, &len, err) < 0)
		return lb_err_wrap(err, "store %s", s->root);
	json_t *j = json_loadb(buf, len, 0, &jerr);
	if (!j || !json_is_array(json_object_get(j, "manifests"))) {
		json_decref(j);
		return lb_err_set(err, 0, "store %s: index.json is corrupt", s->root);
	}
	*out = j;
	return 0;
}

int store_index_save(struct lb_store *s, json_t *index, struct lb_err **err)
{
	_cleanup_free_ char *buf = json_dumps(index, JSON_COMPACT);

	if (!buf)
		return lb_err_set(err, ENOMEM, "write index.json");
	return store_write_atomic(s, s->root_fd, "index.json", buf, strlen(buf), err);
}

const char *store_entry_str(json_t *e, const char *key)
{
	return json_string_value(json_object_get(e, key));
}

const char *store_entry_name(json_t *e)
{
	return json_string_value(
	    json_object_get(json_object_get(e, "annotations"), LB_ANNOT_REF_NAME));
}

static bool name_valid(const char *name)
{
	if (!*name || strlen(name) > 4096)
		return false;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		if (*p <= ' ' || *p == 0x7f)
			return false;
	return true;
}

/* Removes the entries named name; returns how many there were. */
static size_t index_remove_name(json_t *manifests, const char *name)
{
	size_t removed = 0;

	for (size_t i = json_array_size(manifests); i-- > 0;) {
		const char *n = store_entry_name(json_array_get(manifests, i));
		if (n && strcmp(n, name) == 0) {
			json_array_remove(manifests, i);
			removed++;
		}
	}
	return removed;
}

static bool index_has_digest(json_t *manifests, const char *digest)
{
	size_t i;
	json_t *e;

	json_array_foreach(manifests, i, e)
	{
		const char *d = store_entry_str(e, "digest");
		if (d && strcmp(d, digest) == 0)
			return true;
	}
	return false;
}

int store_index_set(json_t *index, const char *name, const char *media_type, const char *digest,
		    uint64_t size, struct lb_err **err)
{
	json_t *manifests = json_object_get(index, "manifests");

	if (name && !name_valid(name))
		return lb_err_set(err, 0, "invalid image name '%s'", name);
	if (name)
		index_remove_name(manifests, name);
	else if (index_has_digest(manifests, digest))
		return 0;
	json_t *e = json_pack("{s:s, s:s, s:I}", "mediaType", media_type, "digest", digest, "size",
			      (json_int_t)size);
	if (e && name)
		json_object_set_new(e, "annotations", json_pack("{s:s}", LB_ANNOT_REF_NAME, name));
	if (!e || json_array_append_new(manifests, e) < 0)
		return lb_err_set(err, ENOMEM, "index entry");
	return 0;
}

void lb_store_image_clear(struct lb_store_image *img)
{
	free(img->name);
	free(img->digest);
	free(img->media_type);
	memset(img, 0, sizeof(*img));
}

void lb_store_images_free(struct lb_store_image *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		lb_store_image_clear(&v[i]);
	free(v);
}

int store_image_from_entry(json_t *e, struct lb_store_image *img, struct lb_err **err)
{
	const char *n = store_entry_name(e), *d = store_entry_str(e, "digest"),
		   *mt = store_entry_str(e, "mediaType");
	json_t *size = json_object_get(e, "size");

	if (lb_oci_digest_check(d, err) < 0)
		return lb_err_wrap(err, "index.json");
	img->name = n ? strdup(n) : NULL;
	img->digest = strdup(d);
	img->media_type = strdup(mt ? mt : LB_MT_OCI_MANIFEST);
	img->size = json_is_integer(size) ? (uint64_t)json_integer_value(size) : 0;
	if ((n && !img->name) || !img->digest || !img->media_type) {
		lb_store_image_clear(img);
		return lb_err_set(err, ENOMEM, "index entry");
	}
	return 0;
}

int lb_store_list(struct lb_store *s, struct lb_store_image **out, size_t *n, struct lb_err **err)
{
	_cleanup_json_ json_t *index = NULL;
	json_t *manifests, *e;
	size_t i;

	if (store_index_load(s, &index, err) < 0)
		return -1;
	manifests = json_object_get(index, "manifests");
	struct lb_store_image *v = calloc(json_array_size(manifests) + 1, sizeof(*v));
	if (!v)
		return lb_err_set(err, ENOMEM, "list images");
	json_array_foreach(manifests, i, e)
	{
		if (store_image_from_entry(e, &v[i], err) < 0) {
			lb_store_images_free(v, i);
			return -1;
		}
	}
	*out = v;
	*n = json_array_size(manifests);
	return 0;
}

/* A name matches its entry; a digest matches the first entry with that digest. */
json_t *store_index_find(json_t *index, const char *what)
{
	json_t *manifests = json_object_get(index, "manifests"), *e;
	bool digest = lb_oci_digest_check(what, NULL) == 0;
	size_t i;

	json_array_foreach(manifests, i, e)
	{
		const char *v = digest ? store_entry_str(e, "digest") : store_entry_name(e);
		if (v && strcmp(v, what) == 0)
			return e;
	}
	return NULL;
}

int lb_store_untag(struct lb_store *s, const char *name, struct lb_err **err)
{
	_cleanup_close_ int lock = -1;
	_cleanup_json_ json_t *index = NULL;

	if (store_lock(s, &lock, err) < 0 || store_index_load(s, &index, err) < 0)
		return -1;
	if (!index_remove_name(json_object_get(index, "manifests"), name))
		return lb_err_set(err, ENOENT, "image '%s' not found in %s", name, s->root);
	return store_index_save(s, index, err);
}

static int manifest_of(struct lb_store *s, const char *digest, const struct lb_platform *platform,
		       int depth, struct lb_manifest **out, char chosen[LB_DIGEST_BUF],
		       uint64_t *size, struct lb_err **err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	enum lb_media_kind kind;
	struct lb_index *ix = NULL;
	const struct lb_descriptor *d;

	if (lb_store_blob_read(s, digest, LB_MANIFEST_MAX, &buf, &len, err) < 0 ||
	    lb_document_kind(buf, len, &kind, err) < 0)
		return -1;
	if (kind == LB_MEDIA_MANIFEST) {
		if (chosen)
			snprintf(chosen, LB_DIGEST_BUF, "%s", digest);
		if (size)
			*size = len;
		return lb_manifest_parse(buf, len, out, err);
	}
	if (depth > 2)
		return lb_err_set(err, ELOOP, "index %s: nested too deeply", digest);
	if (lb_index_parse(buf, len, &ix, err) < 0)
		return -1;
	int r = lb_index_select(ix, platform, &d, err);
	if (r == 0)
		r = manifest_of(s, d->digest, platform, depth + 1, out, chosen, size, err);
	lb_index_free(ix);
	return r;
}

int lb_store_manifest_of(struct lb_store *s, const char *digest, const struct lb_platform *platform,
			 struct lb_manifest **out, char chosen[LB_DIGEST_BUF], uint64_t *size,
			 struct lb_err **err)
{
	return manifest_of(s, digest, platform, 0, out, chosen, size, err);
}
