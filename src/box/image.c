/*
 * A Box session's image (LangBot names one, "rockchin/langbot-sandbox:latest" by default) as the
 * root of its sandbox: an alias first (LBBOX_BOX_IMAGE_ALIASES, "ref=local,ref2=local2"), then
 * the local image of that name; LangBot's default, missing, runs as the runtime's default image
 * (localhost/box:latest, scripts/setup.sh loads it) when that one is local; then a pull when
 * allowed; failing all, a BoxError saying how to provide the image.
 */
#include <stdio.h>
#include <string.h>

#include "box_internal.h"
#include "lbbox/spec/image.h"
#include "lbbox/image/store.h"

/* The local image an alias maps ref to, or NULL. */
static const char *alias_of(const char *aliases, const char *ref, char *buf, size_t len)
{
	size_t n = strlen(ref);
	for (const char *p = aliases; p && *p;) {
		const char *end = strchr(p, ',');
		size_t item = end ? (size_t)(end - p) : strlen(p);
		if (item > n + 1 && !strncmp(p, ref, n) && p[n] == '=') {
			snprintf(buf, len, "%.*s", (int)(item - n - 1), p + n + 1);
			return buf;
		}
		p = end ? end + 1 : p + item;
	}
	return NULL;
}

const char *lb_box_default_image(const struct lb_box *box, char *buf, size_t len)
{
	const char *alias = alias_of(box->image_aliases, LB_BOX_DEFAULT_IMAGE, buf, len);
	if (alias)
		return alias;
	return box->default_image[0] ? box->default_image : NULL;
}

static int try_image(const struct lb_box *box, const char *image, struct lb_spec *spec,
		     struct lb_err **err)
{
	bool readonly = spec->readonly_root;
	lb_spec_free(spec);
	lb_spec_init(spec);
	spec->readonly_root = readonly;
	const struct lb_image_opts o = {.image = image};
	return lb_spec_image(&box->paths, &o, spec, err);
}

int box_image_spec(const struct lb_box *box, const struct lb_box_spec *bs, struct lb_spec *spec,
		   struct lb_err **err)
{
	char buf[512];
	const char *alias = alias_of(box->image_aliases, bs->image, buf, sizeof(buf));
	const char *image = alias ? alias : bs->image;
	if (try_image(box, image, spec, NULL) == 0)
		return 0;
	/* Offline, LangBot's default is the image setup.sh built for it (a loaded or pulled
	 * rockchin/langbot-sandbox wins: it was tried above). */
	if (!alias && !strcmp(bs->image, LB_BOX_DEFAULT_IMAGE) && box->default_image[0] &&
	    try_image(box, box->default_image, spec, NULL) == 0)
		return 0;
	if (box->pull) {
		const char *args[] = {"pull", image, NULL};
		struct lb_err *perr = NULL;
		if (lb_image_tool(box->paths.root, args, true, &perr) == 0 &&
		    try_image(box, image, spec, err) == 0)
			return 0;
		lb_err_free(&perr);
	}
	return lb_err_box(
	    err, LB_BOX_EBOX,
	    "image %s is not available: pull it (lbbox pull %s), load it (lbbox load), "
	    "or map it to a local image with LBBOX_BOX_IMAGE_ALIASES=%s=<image>",
	    bs->image, bs->image, bs->image);
}
