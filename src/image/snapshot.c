/* Where an image's unpacked layers are (ROOT/snapshots/<chain id>/fs) and which are missing. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/base/hash.h"
#include "lbbox/image/snapshot.h"
#include "lbbox/base/util.h"

/* OCI image spec: ChainID(L0) = DiffID(L0); ChainID(L0..Ln) = sha256(ChainID(..n-1) + " " +
 * DiffID(Ln)). */
int lb_snapshot_chain_id(const char *prev_hex, const char *diff_id, char out[65],
			 struct lb_err **err)
{
	_cleanup_free_ char *text = NULL;

	if (lb_oci_digest_check(diff_id, err) < 0)
		return -1;
	if (!prev_hex) {
		snprintf(out, 65, "%s", diff_id + 7);
		return 0;
	}
	if (asprintf(&text, "sha256:%s %s", prev_hex, diff_id) < 0)
		return lb_err_set(err, ENOMEM, "chain id");
	lb_sha256_hex(text, strlen(text), out);
	return 0;
}

/* Appends ":dir" in front of what is there: overlay lists the top layer first. */
static int prepend(char **lowerdir, const char *dir, struct lb_err **err)
{
	char *joined = NULL;
	if (asprintf(&joined, "%s%s%s", dir, *lowerdir ? ":" : "", *lowerdir ? *lowerdir : "") < 0)
		return lb_err_set(err, ENOMEM, "lowerdir");
	free(*lowerdir);
	*lowerdir = joined;
	return 0;
}

int lb_snapshot_lowerdir(const char *root, const struct lb_image_config *cfg, char **lowerdir,
			 size_t *missing, struct lb_err **err)
{
	_cleanup_free_ char *out = NULL;
	char chain[65], dir[LB_PATH_BUF];
	struct stat st;

	*missing = 0;
	if (!cfg->n_diff_ids)
		return lb_err_set(err, 0, "image has no layers");
	for (size_t i = 0; i < cfg->n_diff_ids; i++) {
		if (lb_snapshot_chain_id(i ? chain : NULL, cfg->diff_ids[i], chain, err) < 0)
			return -1;
		snprintf(dir, sizeof(dir), "%s/snapshots/%s/fs", root, chain);
		if (stat(dir, &st) < 0)
			(*missing)++;
		else if (prepend(&out, dir, err) < 0)
			return -1;
	}
	*lowerdir = *missing ? NULL : LB_TAKE_PTR(out);
	return 0;
}

int lb_snapshot_flat_dir(const char *root, const struct lb_image_config *cfg, char **dir,
			 bool *exists, struct lb_err **err)
{
	char chain[65];
	struct stat st;
	if (!cfg->n_diff_ids)
		return lb_err_set(err, 0, "image has no layers");
	for (size_t i = 0; i < cfg->n_diff_ids; i++)
		if (lb_snapshot_chain_id(i ? chain : NULL, cfg->diff_ids[i], chain, err) < 0)
			return -1;
	if (asprintf(dir, "%s/snapshots/%s.flat/fs", root, chain) < 0)
		return lb_err_set(err, ENOMEM, "snapshot path");
	*exists = stat(*dir, &st) == 0;
	return 0;
}

/* Adds the chain ids of one image to keep (a NULL-terminated, growing list). */
static int keep_image(struct lb_store *s, const char *name, char ***keep, size_t *n,
		      struct lb_err **err)
{
	struct lb_manifest *m = NULL;
	struct lb_image_config *cfg = NULL;
	char chain[65];
	if (lb_store_image_manifest(s, name, NULL, &m, &cfg, err) < 0)
		return -1;
	int r = 0;
	for (size_t i = 0; r == 0 && i < cfg->n_diff_ids; i++) {
		r = lb_snapshot_chain_id(i ? chain : NULL, cfg->diff_ids[i], chain, err);
		char **grown = r == 0 ? realloc(*keep, (*n + 2) * sizeof(char *)) : NULL;
		if (r == 0 && !grown)
			r = lb_err_set(err, ENOMEM, "prune snapshots");
		if (r == 0) {
			*keep = grown;
			(*keep)[(*n)++] = strdup(chain);
			(*keep)[*n] = NULL;
		}
	}
	lb_manifest_free(m);
	lb_image_config_free(cfg);
	return r;
}

static bool listed(char **v, const char *s)
{
	for (; v && *v; v++)
		if (strcmp(*v, s) == 0)
			return true;
	return false;
}

/* A snapshot whose path appears in a live sandbox's state (its overlay lowerdir) is in use. */
static bool in_use(const char *runroot, const char *hex)
{
	_cleanup_closedir_ DIR *d = runroot ? opendir(runroot) : NULL;
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char path[LB_PATH_BUF];
		_cleanup_free_ char *text = NULL;
		snprintf(path, sizeof(path), "%s/%s/state.json", runroot, e->d_name);
		if (e->d_name[0] != '.' && lb_read_file(path, 1 << 20, &text, NULL, NULL) == 0 &&
		    strstr(text, hex))
			return true;
	}
	return false;
}

int lb_snapshot_prune(struct lb_store *s, const char *runroot, size_t *removed, struct lb_err **err)
{
	_cleanup_strv_ char **keep = NULL;
	struct lb_store_image *imgs = NULL;
	size_t n = 0, nimg = 0;
	char dir[LB_PATH_BUF];

	*removed = 0;
	if (lb_store_list(s, &imgs, &nimg, err) < 0)
		return -1;
	int r = 0;
	for (size_t i = 0; r == 0 && i < nimg; i++)
		r = keep_image(s, imgs[i].name ? imgs[i].name : imgs[i].digest, &keep, &n, err);
	lb_store_images_free(imgs, nimg);
	if (r < 0)
		return -1;
	snprintf(dir, sizeof(dir), "%s/snapshots", lb_store_root(s));
	_cleanup_closedir_ DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (strlen(e->d_name) != 64 || listed(keep, e->d_name) ||
		    in_use(runroot, e->d_name))
			continue;
		char path[LB_PATH_BUF];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (lb_rm_rf(path, err) < 0)
			return -1;
		(*removed)++;
	}
	return 0;
}
