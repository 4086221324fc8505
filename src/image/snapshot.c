/* Where an image's unpacked layers are (ROOT/snapshots/<chain id>/fs) and which are missing. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lbbox/cleanup.h"
#include "lbbox/hash.h"
#include "lbbox/snapshot.h"

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
	char chain[65], dir[4096];
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
