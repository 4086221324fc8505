/*
 * What a user's reference means in the store, in the order podman's libimage looks an image up:
 * an exact name (or manifest digest), then an image ID (podman checks IDs before short names, so
 * "3f2a1b" is the image whose ID starts so even if a "3f2a1b" repository exists), then the names
 * the reference can stand for (localhost/NAME before docker.io's for a short name), where
 * NAME@DIGEST means an image of that repository with that manifest digest.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/json_util.h"
#include "lbbox/image/ref.h"

#define ID_MIN_PREFIX 3 /* podman's minimum truncated ID length */

int lb_store_image_id(struct lb_store *s, const char *digest, char id[LB_DIGEST_BUF],
		      struct lb_err **err)
{
	struct lb_manifest *m = NULL;
	if (lb_store_manifest_of(s, digest, NULL, &m, NULL, NULL, err) < 0)
		return lb_err_wrap(err, "image %s", digest);
	snprintf(id, LB_DIGEST_BUF, "%s", m->config.digest);
	lb_manifest_free(m);
	return 0;
}

static bool is_hex_prefix(const char *s)
{
	size_t n = strspn(s, "0123456789abcdef");
	return s[n] == '\0' && n >= ID_MIN_PREFIX && n <= 64;
}

/* Of the entries of one image, a named one: it is what the user sees listed. */
static json_t *prefer_named(json_t *have, json_t *e)
{
	return !have || (!store_entry_name(have) && store_entry_name(e)) ? e : have;
}

/* The entry whose image ID starts with hex (a whole "sha256:..." ID when full). Entries whose
 * manifest cannot be read are skipped: they are no image anyone could mean. */
static int find_by_id(struct lb_store *s, json_t *index, const char *ref, const char *hex,
		      json_t **out, struct lb_err **err)
{
	json_t *manifests = json_object_get(index, "manifests"), *e, *found = NULL;
	char id[LB_DIGEST_BUF], first[LB_DIGEST_BUF] = "";
	size_t i, n_ids = 0;

	json_array_foreach(manifests, i, e)
	{
		const char *d = store_entry_str(e, "digest");
		if (!d || lb_store_image_id(s, d, id, NULL) < 0)
			continue;
		if (strncmp(id + strlen("sha256:"), hex, strlen(hex)) != 0)
			continue;
		if (strcmp(first, id) != 0) {
			n_ids++;
			snprintf(first, sizeof(first), "%s", id);
		}
		found = prefer_named(found, e);
	}
	if (n_ids > 1)
		return lb_err_set(
		    err, 0,
		    "image ID '%s' is ambiguous: it starts %zu images' IDs (give more "
		    "digits)",
		    ref, n_ids);
	*out = found;
	return 0;
}

/* "repo[:tag][@digest]" -> length of "repo" (a ':' after the last '/' starts the tag). */
static size_t repo_len(const char *name)
{
	size_t n = strcspn(name, "@");
	const char *slash = memrchr(name, '/', n);
	const char *colon =
	    memchr(slash ? slash : name, ':', n - (size_t)(slash ? slash - name : 0));
	return colon ? (size_t)(colon - name) : n;
}

/* An image of repository repo (the n bytes of want before '@') with manifest digest digest. */
static json_t *find_repo_digest(json_t *index, const char *want, const char *digest)
{
	json_t *manifests = json_object_get(index, "manifests"), *e;
	size_t i, n = repo_len(want);

	json_array_foreach(manifests, i, e)
	{
		const char *name = store_entry_name(e), *d = store_entry_str(e, "digest");
		if (name && d && !strcmp(d, digest) && repo_len(name) == n &&
		    !strncmp(name, want, n))
			return e;
	}
	return NULL;
}

/* The names ref can stand for, each tried as a name (or repository@digest). */
static int find_by_names(json_t *index, const char *ref, json_t **out, struct lb_err **err)
{
	char *cand[3] = {NULL, NULL, NULL};
	if (lb_image_ref_candidates(ref, cand, err) < 0)
		return -1;
	*out = NULL;
	for (size_t i = 0; cand[i] && !*out; i++) {
		const char *at = strchr(cand[i], '@');
		*out = at ? find_repo_digest(index, cand[i], at + 1)
			  : store_index_find(index, cand[i]);
	}
	for (size_t i = 0; cand[i]; i++)
		free(cand[i]);
	return 0;
}

static int lookup_entry(struct lb_store *s, json_t *index, const char *ref, json_t **out,
			enum lb_store_match *how, struct lb_err **err)
{
	bool digest = lb_oci_digest_check(ref, NULL) == 0;
	*how = digest ? LB_STORE_MATCH_DIGEST : LB_STORE_MATCH_NAME;
	if ((*out = store_index_find(index, ref)))
		return 0;
	*how = LB_STORE_MATCH_DIGEST;
	if (digest)
		return find_by_id(s, index, ref, ref + strlen("sha256:"), out, err);
	if (is_hex_prefix(ref) && (find_by_id(s, index, ref, ref, out, err) < 0 || *out))
		return *out ? 0 : -1;
	*how = LB_STORE_MATCH_NAME;
	return find_by_names(index, ref, out, err);
}

int store_lookup(struct lb_store *s, json_t *index, const char *ref, struct lb_store_image *out,
		 enum lb_store_match *how, struct lb_err **err)
{
	json_t *e = NULL;
	enum lb_store_match m;
	if (lookup_entry(s, index, ref, &e, &m, err) < 0)
		return -1;
	if (!e)
		return lb_err_set(err, ENOENT, "image '%s' not found in %s", ref, s->root);
	if (store_image_from_entry(e, out, err) < 0)
		return -1;
	if (how)
		*how = m;
	return 0;
}

int lb_store_lookup(struct lb_store *s, const char *ref, struct lb_store_image *out,
		    enum lb_store_match *how, struct lb_err **err)
{
	_cleanup_json_ json_t *index = NULL;
	if (store_index_load(s, &index, err) < 0)
		return -1;
	return store_lookup(s, index, ref, out, how, err);
}

int lb_store_resolve(struct lb_store *s, const char *name_or_digest, struct lb_store_image *out,
		     struct lb_err **err)
{
	return lb_store_lookup(s, name_or_digest, out, NULL, err);
}

int lb_store_remove(struct lb_store *s, const char *digest, struct lb_err **err)
{
	_cleanup_close_ int lock = -1;
	_cleanup_json_ json_t *index = NULL;
	json_t *manifests, *e;
	size_t removed = 0;

	if (store_lock(s, &lock, err) < 0 || store_index_load(s, &index, err) < 0)
		return -1;
	manifests = json_object_get(index, "manifests");
	for (size_t i = json_array_size(manifests); i-- > 0;) {
		e = json_array_get(manifests, i);
		const char *d = store_entry_str(e, "digest");
		if (d && strcmp(d, digest) == 0 && ++removed)
			json_array_remove(manifests, i);
	}
	if (!removed)
		return lb_err_set(err, ENOENT, "image '%s' not found in %s", digest, s->root);
	return store_index_save(s, index, err);
}

/* dst names the image src resolves to (any reference form). */
int lb_store_tag(struct lb_store *s, const char *src, const char *dst, struct lb_err **err)
{
	_cleanup_close_ int lock = -1;
	_cleanup_json_ json_t *index = NULL;
	struct lb_store_image img = {0};

	if (store_lock(s, &lock, err) < 0 || store_index_load(s, &index, err) < 0)
		return -1;
	if (store_lookup(s, index, src, &img, NULL, err) < 0)
		return lb_err_wrap(err, "tag %s", dst);
	int r = store_index_set(index, dst, img.media_type, img.digest, img.size, err);
	lb_store_image_clear(&img);
	if (r < 0 || store_index_save(s, index, err) < 0)
		return lb_err_wrap(err, "tag %s", dst);
	return 0;
}

/* The manifest (and config) of the image any reference form names. */
int lb_store_image_manifest(struct lb_store *s, const char *name_or_digest,
			    const struct lb_platform *platform, struct lb_manifest **manifest,
			    struct lb_image_config **config, struct lb_err **err)
{
	struct lb_store_image img = {0};
	struct lb_manifest *m = NULL;
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;

	if (lb_store_resolve(s, name_or_digest, &img, err) < 0)
		return -1;
	int r = lb_store_manifest_of(s, img.digest, platform, &m, NULL, NULL, err);
	lb_store_image_clear(&img);
	if (r < 0)
		return lb_err_wrap(err, "image %s", name_or_digest);
	if (config &&
	    (lb_store_blob_read(s, m->config.digest, LB_CONFIG_MAX, &buf, &len, err) < 0 ||
	     lb_image_config_parse(buf, len, config, err) < 0)) {
		lb_manifest_free(m);
		return lb_err_wrap(err, "image %s", name_or_digest);
	}
	*manifest = m;
	return 0;
}
