/* An image (or a directory) as a sandbox's root, with the image config's defaults: the one path
 * from an image to an engine spec, for lbbox run, sessions and the Box runtime. */
#ifndef LBBOX_SPEC_IMAGE_H
#define LBBOX_SPEC_IMAGE_H

#include <stdbool.h>
#include <sys/types.h>

#include "lbbox/base/err.h"
#include "lbbox/sandbox/sandbox.h"

/* What a caller asks of an image beyond its name (podman's --user and --entrypoint). */
struct lb_image_opts {
	const char *image; /* NULL or "host", a directory image NAME, or a store reference */
	/* A user name ("name", "name:group") looked up in the image's own files; NULL keeps the
	 * image's USER unless user_set (the caller set spec->uid/gid itself). */
	const char *user;
	bool user_set;
	/* Replaces the image's ENTRYPOINT when entrypoint_set (an empty list clears it; the
	 * image's CMD is then dropped too, as podman does). */
	char **entrypoint;
	bool entrypoint_set;
};

/*
 * Makes o->image the root of spec: NULL or "host" (the host's own userland, read-only), NAME for
 * a directory image ROOT/images/NAME/rootfs, anything else a store reference (its missing layers
 * unpacked first, by lbbox-image). Or keeps spec->rootfs when the caller set one (then image
 * must be NULL). The image config's Env, WorkingDir, User (by name, through the image's own
 * files) and Entrypoint + Cmd apply where spec leaves them unset; the caller's env entries and
 * argv win. PATH and HOME get defaults when still unset. spec->readonly_root must be final: it
 * decides whether a flattened tree is copied.
 */
int lb_spec_image(const struct lb_paths *paths, const struct lb_image_opts *o, struct lb_spec *spec,
		  struct lb_err **err);
/* Whether image needs no store: NULL, "host", or a directory image under ROOT/images. */
bool lb_spec_image_is_local(const struct lb_paths *paths, const char *image);
/* *unpacked: every layer of a store image is unpacked already (true for local images). */
int lb_spec_image_unpacked(const struct lb_paths *paths, const char *image, bool *unpacked,
			   struct lb_err **err);
/* overlayfs in this kernel? (LBBOX_NO_OVERLAY=1 pretends it is not, to test the fallback.) */
bool lb_overlay_available(void);
/* The image's User ("name", "uid", "name:group" ...) through its own /etc/passwd and /etc/group,
 * looked up in the layers of lowerdir (a ':'-separated list, top first). */
int lb_image_user(const char *lowerdir, const char *user, uid_t *uid, gid_t *gid,
		  struct lb_err **err);

#endif
