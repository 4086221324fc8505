/*
 * Unpacks an image's missing layers into ROOT/snapshots/<chain id>/fs: each into a temporary
 * directory first, its DiffID checked against the image config, then renamed into place, all
 * under a lock, so a concurrent or interrupted unpack never leaves a half layer visible.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/image/snapshot.h"
#include "lbbox/image/unpack.h"
#include "lbbox/base/util.h"

/* The image's unpack budget (limits from the caller, what its layers used so far). */
struct budget {
	struct lb_unpack_opts limits;
};

static int unpack_into(struct lb_store *s, const struct lb_descriptor *layer, const char *fs,
		       const char *want_diff_id, unsigned flags, struct budget *b,
		       struct lb_err **err)
{
	_cleanup_close_ int blob = -1, fsfd = -1;
	uint64_t size;
	struct lb_unpack_result res;
	struct lb_unpack_opts opts = b->limits;
	opts.media_type = layer->media_type;
	opts.flags |= flags;

	if (mkdir(fs, 0755) < 0 && !(flags & LB_UNPACK_APPLY && errno == EEXIST))
		return lb_err_set(err, errno, "mkdir %s", fs);
	if (lb_store_blob_open(s, layer->digest, &blob, &size, err) < 0)
		return -1;
	fsfd = open(fs, O_DIRECTORY | O_CLOEXEC);
	if (fsfd < 0)
		return lb_err_set(err, errno, "open %s", fs);
	if (lb_unpack_layer_fd(blob, fsfd, &opts, &res, err) < 0)
		return lb_err_wrap(err, "layer %s", layer->digest);
	b->limits.used_entries += res.entries;
	b->limits.used_bytes += res.file_bytes;
	if (strcmp(res.diff_id, want_diff_id) != 0)
		return lb_err_set(err, 0,
				  "layer %s: DiffID %s does not match the image config's %s",
				  layer->digest, res.diff_id, want_diff_id);
	return 0;
}

static int prepare_one(struct lb_store *s, const struct lb_descriptor *layer, const char *dir,
		       const char *diff_id, struct budget *b, struct lb_err **err)
{
	char tmp[LB_PATH_BUF], fs[LB_PATH_BUF];
	struct stat st;

	if (stat(dir, &st) == 0)
		return 0; /* another lbbox unpacked it while we waited for the lock */
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", dir, getpid());
	lb_rm_rf(tmp, NULL);
	if (mkdir(tmp, 0700) < 0)
		return lb_err_set(err, errno, "mkdir %s", tmp);
	snprintf(fs, sizeof(fs), "%s/fs", tmp);
	if (unpack_into(s, layer, fs, diff_id, 0, b, err) < 0 || chmod(tmp, 0755) < 0 ||
	    rename(tmp, dir) < 0) {
		int e = errno;
		lb_rm_rf(tmp, NULL);
		return err && *err ? -1 : lb_err_set(err, e, "install snapshot %s", dir);
	}
	return 0;
}

static int lock_snapshots(const char *root, int *fd, struct lb_err **err)
{
	char path[LB_PATH_BUF];
	snprintf(path, sizeof(path), "%s/snapshots", root);
	if (lb_mkdir_p(path, 0755, err) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/snapshots/.lock", root);
	*fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (*fd < 0 || flock(*fd, LOCK_EX) < 0)
		return lb_err_set(err, errno, "lock %s", path);
	return 0;
}

int lb_snapshot_prepare(struct lb_store *s, const struct lb_manifest *m,
			const struct lb_image_config *cfg, const struct lb_unpack_opts *limits,
			struct lb_err **err)
{
	struct budget b = {.limits = limits ? *limits : (struct lb_unpack_opts){0}};
	const char *root = lb_store_root(s);
	_cleanup_close_ int lock = -1;
	char chain[65], dir[LB_PATH_BUF];

	if (m->n_layers != cfg->n_diff_ids)
		return lb_err_set(err, 0, "image has %zu layers but %zu DiffIDs", m->n_layers,
				  cfg->n_diff_ids);
	if (lock_snapshots(root, &lock, err) < 0)
		return -1;
	for (size_t i = 0; i < m->n_layers; i++) {
		if (lb_snapshot_chain_id(i ? chain : NULL, cfg->diff_ids[i], chain, err) < 0)
			return -1;
		snprintf(dir, sizeof(dir), "%s/snapshots/%s", root, chain);
		if (prepare_one(s, &m->layers[i], dir, cfg->diff_ids[i], &b, err) < 0)
			return -1;
	}
	return 0;
}

/*
 * Without overlayfs: every layer applied in order onto one tree (whiteouts delete what lower
 * layers wrote), ROOT/snapshots/<top chain id>.flat/fs, used read-only or copied per sandbox.
 */
int lb_snapshot_prepare_flat(struct lb_store *s, const struct lb_manifest *m,
			     const struct lb_image_config *cfg, const struct lb_unpack_opts *limits,
			     struct lb_err **err)
{
	struct budget b = {.limits = limits ? *limits : (struct lb_unpack_opts){0}};
	const char *root = lb_store_root(s);
	_cleanup_close_ int lock = -1;
	char chain[65], dir[LB_PATH_BUF], tmp[LB_PATH_BUF], fs[LB_PATH_BUF];
	struct stat st;

	if (m->n_layers != cfg->n_diff_ids || !m->n_layers)
		return lb_err_set(err, 0, "image has %zu layers but %zu DiffIDs", m->n_layers,
				  cfg->n_diff_ids);
	for (size_t i = 0; i < cfg->n_diff_ids; i++)
		if (lb_snapshot_chain_id(i ? chain : NULL, cfg->diff_ids[i], chain, err) < 0)
			return -1;
	if (lock_snapshots(root, &lock, err) < 0)
		return -1;
	snprintf(dir, sizeof(dir), "%s/snapshots/%s.flat", root, chain);
	if (stat(dir, &st) == 0)
		return 0;
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", dir, getpid());
	snprintf(fs, sizeof(fs), "%s/fs", tmp);
	lb_rm_rf(tmp, NULL);
	if (mkdir(tmp, 0700) < 0)
		return lb_err_set(err, errno, "mkdir %s", tmp);
	for (size_t i = 0; i < m->n_layers; i++) {
		if (unpack_into(s, &m->layers[i], fs, cfg->diff_ids[i], LB_UNPACK_APPLY, &b, err) <
		    0) {
			lb_rm_rf(tmp, NULL);
			return -1;
		}
	}
	if (chmod(tmp, 0755) < 0 || rename(tmp, dir) < 0) {
		int e = errno;
		lb_rm_rf(tmp, NULL);
		return lb_err_set(err, e, "install snapshot %s", dir);
	}
	return 0;
}
