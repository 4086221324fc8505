/* lbbox run --image REF: the image's unpacked layers (unpacking them first if needed). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "lbbox/cleanup.h"
#include "lbbox/snapshot.h"
#include "lbbox/store.h"
#include "lbbox/util.h"

/* Missing layers are unpacked by lbbox-image (libarchive stays out of this process). */
static int lowerdir(const struct cli_globals *g, const char *name,
		    const struct lb_image_config *cfg, char **out, struct lb_err **err)
{
	size_t missing = 0;
	if (lb_snapshot_lowerdir(g->paths.root, cfg, out, &missing, err) < 0)
		return -1;
	if (!missing)
		return 0;
	const char *args[] = {"prepare", name, NULL};
	if (cli_image_tool(g, args, true, err) < 0)
		return -1;
	if (lb_snapshot_lowerdir(g->paths.root, cfg, out, &missing, err) < 0)
		return -1;
	return missing ? lb_err_set(err, 0, "image %s: %zu layers still missing", name, missing)
		       : 0;
}

/*
 * overlayfs in this kernel? (LBBOX_NO_OVERLAY=1 pretends it is not, to test the fallback.)
 */
bool cli_overlay_available(void)
{
	_cleanup_free_ char *fs = NULL;
	const char *no = getenv("LBBOX_NO_OVERLAY");
	if (no && strcmp(no, "1") == 0)
		return false;
	if (lb_read_file("/proc/filesystems", 1 << 16, &fs, NULL, NULL) < 0)
		return false;
	return strstr(fs, "\toverlay\n") != NULL;
}

/* Without overlayfs: the flattened tree, unpacked once by lbbox-image. */
static int flat_dir(const struct cli_globals *g, const char *name,
		    const struct lb_image_config *cfg, char **out, struct lb_err **err)
{
	bool exists = false;
	if (lb_snapshot_flat_dir(g->paths.root, cfg, out, &exists, err) < 0)
		return -1;
	if (exists)
		return 0;
	const char *args[] = {"prepare", "--flat", name, NULL};
	return cli_image_tool(g, args, true, err);
}

int cli_image_layers(const struct cli_globals *g, const char *ref, char **layers, char **flat,
		     struct lb_image_config **cfg, struct lb_err **err)
{
	_cleanup_free_ char *name = NULL;
	struct lb_store *s = NULL;
	struct lb_manifest *m = NULL;
	if (cli_image_name(ref, &name, err) < 0)
		return -1;
	if (cli_store_open(g, &s, err) < 0)
		return lb_err_wrap(err, "image '%s' not found", ref);
	int r = lb_store_image_manifest(s, name, NULL, &m, cfg, err);
	lb_store_close(s);
	lb_manifest_free(m);
	if (r < 0)
		return -1;
	if (!cli_overlay_available()) {
		*layers = NULL;
		if (flat_dir(g, name, *cfg, flat, err) == 0)
			return 0;
		lb_image_config_free(*cfg);
		*cfg = NULL;
		return -1;
	}
	if (lowerdir(g, name, *cfg, layers, err) < 0) {
		lb_image_config_free(*cfg);
		*cfg = NULL;
		return -1;
	}
	return 0;
}
