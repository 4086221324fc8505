/* Prune: under the lock, mark every blob reachable from index.json and delete the rest. Imports
 * stage in ROOT/tmp until commit (which takes the same lock), so an import in flight loses
 * nothing. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store_internal.h"
#include "lbbox/base/cleanup.h"

struct mark_set {
	char **v;
	size_t n;
};

static bool marked(const struct mark_set *m, const char *digest)
{
	for (size_t i = 0; i < m->n; i++)
		if (strcmp(m->v[i], digest) == 0)
			return true;
	return false;
}

static int mark_add(struct mark_set *m, const char *digest, struct lb_err **err)
{
	char **v = realloc(m->v, (m->n + 1) * sizeof(*v));

	if (!v)
		return lb_err_set(err, ENOMEM, "prune");
	m->v = v;
	if (!(v[m->n] = strdup(digest)))
		return lb_err_set(err, ENOMEM, "prune");
	m->n++;
	return 0;
}

static int mark_descriptor(struct lb_store *s, json_t *d, struct mark_set *m, int depth,
			   struct lb_err **err);

/* Walks a manifest or index generically (config, layers, manifests, subject), so documents lbbox
 * does not run (artifacts, attestations) still keep their blobs. */
static int mark_children(struct lb_store *s, const char *digest, struct mark_set *m, int depth,
			 struct lb_err **err)
{
	_cleanup_free_ char *buf = NULL;
	_cleanup_json_ json_t *j = NULL;
	size_t len = 0, i;
	json_t *e;
	static const char *lists[] = {"layers", "manifests"};

	if (!lb_store_blob_exists(s, digest))
		return 0;
	if (lb_store_blob_read(s, digest, LB_MANIFEST_MAX, &buf, &len, err) < 0)
		return lb_err_wrap(err, "prune");
	if (!(j = json_loadb(buf, len, 0, NULL)))
		return lb_err_set(err, 0, "prune: manifest %s is not JSON", digest);
	if (mark_descriptor(s, json_object_get(j, "config"), m, depth, err) < 0 ||
	    mark_descriptor(s, json_object_get(j, "subject"), m, depth, err) < 0)
		return -1;
	for (size_t l = 0; l < 2; l++)
		json_array_foreach(json_object_get(j, lists[l]), i, e)
		{
			if (mark_descriptor(s, e, m, depth, err) < 0)
				return -1;
		}
	return 0;
}

static int mark_descriptor(struct lb_store *s, json_t *d, struct mark_set *m, int depth,
			   struct lb_err **err)
{
	const char *digest = json_string_value(json_object_get(d, "digest"));
	const char *mt = json_string_value(json_object_get(d, "mediaType"));

	if (!digest || lb_oci_digest_check(digest, NULL) < 0 || marked(m, digest))
		return 0;
	if (mark_add(m, digest, err) < 0)
		return -1;
	enum lb_media_kind k = lb_media_kind(mt);
	if (k != LB_MEDIA_INDEX && k != LB_MEDIA_MANIFEST && !(mt && strstr(mt, "manifest")))
		return 0;
	if (depth > 8)
		return lb_err_set(err, ELOOP, "prune: manifests nested too deeply at %s", digest);
	return mark_children(s, digest, m, depth + 1, err);
}

static int sweep(struct lb_store *s, const struct mark_set *m, struct lb_store_prune_stats *st,
		 struct lb_err **err)
{
	int dfd = openat(s->blobs_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char digest[LB_DIGEST_BUF];
	struct stat sb;

	if (dfd < 0)
		return lb_err_set(err, errno, "prune: open blobs");
	_cleanup_closedir_ DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return lb_err_set(err, errno, "prune: open blobs");
	}
	for (struct dirent *de; (de = readdir(d));) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(digest, sizeof(digest), "sha256:%s", de->d_name);
		if (marked(m, digest))
			continue;
		if (fstatat(s->blobs_fd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (unlinkat(s->blobs_fd, de->d_name, 0) < 0)
			return lb_err_set(err, errno, "prune: delete %s", digest);
		st->blobs++;
		st->bytes += (uint64_t)sb.st_size;
	}
	return 0;
}

int lb_store_prune(struct lb_store *s, struct lb_store_prune_stats *stats, struct lb_err **err)
{
	_cleanup_close_ int lock = -1;
	_cleanup_json_ json_t *index = NULL;
	struct mark_set m = {0};
	struct lb_store_prune_stats st = {0};
	json_t *e;
	size_t i;
	int r = 0;

	if (store_lock(s, &lock, err) < 0 || store_index_load(s, &index, err) < 0)
		return -1;
	json_array_foreach(json_object_get(index, "manifests"), i, e)
	{
		if ((r = mark_descriptor(s, e, &m, 0, err)) < 0)
			break;
	}
	if (r == 0)
		r = sweep(s, &m, &st, err);
	for (size_t k = 0; k < m.n; k++)
		free(m.v[k]);
	free(m.v);
	if (r == 0 && stats)
		*stats = st;
	return r;
}
