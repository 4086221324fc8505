/* One image's facts for `images` and `inspect`: ID, created, uncompressed size, in podman's
 * units, and whether a live sandbox runs on it. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "images_cli.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"
#include "lbbox/image/snapshot.h"

int cli_image_read(struct lb_store *s, const char *digest, struct cli_image *out,
		   struct lb_err **err)
{
	*out = (struct cli_image){0};
	if (lb_store_image_manifest(s, digest, NULL, &out->m, &out->cfg, err) < 0)
		return -1;
	snprintf(out->digest, sizeof(out->digest), "%s", digest);
	snprintf(out->id, sizeof(out->id), "%s", out->m->config.digest);
	out->created = out->cfg->created ? cli_parse_rfc3339(out->cfg->created) : 0;
	return 0;
}

void cli_image_clear(struct cli_image *img)
{
	lb_manifest_free(img->m);
	lb_image_config_free(img->cfg);
	*img = (struct cli_image){0};
}

/* From the layer-size cache; false while a layer is not measured yet. */
static bool sizes_cached(struct lb_store *s, struct cli_image *img)
{
	uint64_t one = 0, total = 0;
	for (size_t i = 0; i < img->cfg->n_diff_ids; i++) {
		if (lb_store_layer_size_get(s, img->cfg->diff_ids[i], &one) < 0)
			return false;
		total += one;
	}
	img->size = total;
	img->size_known = true;
	return true;
}

int cli_image_sizes(struct cli_globals *g, struct lb_store *s, struct cli_image *v, size_t n,
		    struct lb_err **err)
{
	bool missing = false;
	for (size_t i = 0; i < n; i++)
		missing |= !sizes_cached(s, &v[i]);
	if (!missing)
		return 0;
	/* decompressing needs lbbox-image (libarchive); each layer is measured once, ever. Where
	 * it cannot (a store this user may only read), the size stays unknown: the listing is
	 * still worth having. */
	const char *args[] = {"sizes", NULL};
	struct lb_err *e = NULL;
	if (lb_image_tool(g->paths.root, args, true, &e) < 0) {
		lb_err_free(&e);
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		if (!v[i].size_known)
			sizes_cached(s, &v[i]);
	return 0;
}

size_t cli_image_repo(const char *name, const char **tag, size_t *tag_len)
{
	size_t n = strcspn(name, "@");
	const char *slash = memrchr(name, '/', n);
	const char *from = slash ? slash : name;
	const char *colon = memchr(from, ':', n - (size_t)(from - name));
	*tag = colon ? colon + 1 : NULL;
	*tag_len = colon ? n - (size_t)(colon + 1 - name) : 0;
	return colon ? (size_t)(colon - name) : n;
}

void cli_human_size(uint64_t size, char *buf, size_t len)
{
	static const char *const units[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB"};
	double v = (double)size;
	size_t i = 0;
	while (v >= 1000 && i + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1000;
		i++;
	}
	snprintf(buf, len, "%.3g %s", v, units[i]);
}

/* go-units' HumanDuration, which podman's CREATED column uses. */
static void human_duration(long long secs, char *buf, size_t len)
{
	long long min = secs / 60, hours = (secs + 1800) / 3600;
	if (secs < 1)
		snprintf(buf, len, "Less than a second");
	else if (secs == 1)
		snprintf(buf, len, "1 second");
	else if (secs < 60)
		snprintf(buf, len, "%lld seconds", secs);
	else if (min == 1)
		snprintf(buf, len, "About a minute");
	else if (min < 60)
		snprintf(buf, len, "%lld minutes", min);
	else if (hours == 1)
		snprintf(buf, len, "About an hour");
	else if (hours < 48)
		snprintf(buf, len, "%lld hours", hours);
	else if (hours < 24 * 7 * 2)
		snprintf(buf, len, "%lld days", hours / 24);
	else if (hours < 24 * 30 * 2)
		snprintf(buf, len, "%lld weeks", hours / 24 / 7);
	else if (hours < 24 * 365 * 2)
		snprintf(buf, len, "%lld months", hours / 24 / 30);
	else
		snprintf(buf, len, "%lld years", hours / 24 / 365);
}

void cli_human_ago(time_t t, time_t now, char *buf, size_t len)
{
	char d[64];
	if (!t) {
		snprintf(buf, len, "unknown");
		return;
	}
	human_duration(now > t ? (long long)(now - t) : 0, d, sizeof(d));
	snprintf(buf, len, "%s ago", d);
}

time_t cli_parse_rfc3339(const char *s)
{
	struct tm tm = {0};
	const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!p)
		return 0;
	if (*p == '.')
		p += 1 + strspn(p + 1, "0123456789");
	long off = 0;
	int hh = 0, mm = 0;
	if ((*p == '+' || *p == '-') && sscanf(p + 1, "%2d:%2d", &hh, &mm) == 2)
		off = (*p == '-' ? -1 : 1) * (hh * 3600L + mm * 60L);
	else if (*p != 'Z' && *p != 'z')
		return 0;
	time_t t = timegm(&tm);
	return t > 0 ? t - off : 0;
}

/* The image's top layer ChainID: a sandbox on the image has it in its lowerdir or flat root. */
static int top_chain(const struct lb_image_config *cfg, char out[65])
{
	for (size_t i = 0; i < cfg->n_diff_ids; i++)
		if (lb_snapshot_chain_id(i ? out : NULL, cfg->diff_ids[i], out, NULL) < 0)
			return -1;
	return cfg->n_diff_ids ? 0 : -1;
}

/* Whether text names root/snapshots/<chain> as the top of a root: at a string's start, not after
 * a ':' (there it is a lower layer, shared with an image built on this one). */
static bool names_top(const char *text, const char *needle)
{
	for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
		if (p > text && p[-1] != ':')
			return true;
	return false;
}

bool cli_image_in_use(const char *root, const char *runroot, const struct lb_image_config *cfg,
		      char *id, size_t len)
{
	char chain[65], needle[LB_PATH_BUF];
	if (top_chain(cfg, chain) < 0)
		return false;
	snprintf(needle, sizeof(needle), "%s/snapshots/%s", root, chain);
	_cleanup_closedir_ DIR *d = opendir(runroot);
	for (struct dirent *e; d && (e = readdir(d));) {
		char path[LB_PATH_BUF];
		_cleanup_free_ char *text = NULL;
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/state.json", runroot, e->d_name);
		if (lb_read_file(path, 1 << 20, &text, NULL, NULL) == 0 &&
		    names_top(text, needle)) {
			snprintf(id, len, "%s", e->d_name);
			return true;
		}
	}
	return false;
}
