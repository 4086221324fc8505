/* An image (or a directory) as a sandbox's root, with the image config's defaults: the one path
 * from an image to an engine spec, for lbbox run, sessions and the Box runtime. */
#ifndef LBBOX_SPEC_IMAGE_H
#define LBBOX_SPEC_IMAGE_H

#include <stdbool.h>
#include <sys/types.h>

#include "lbbox/base/err.h"
#include "lbbox/sandbox/sandbox.h"

/*
 * Makes image the root of spec: NULL or "host" (the host's own userland, read-only), NAME for a
 * directory image ROOT/images/NAME/rootfs, anything else a store reference (its missing layers
 * unpacked first, by lbbox-image). Or keeps spec->rootfs when the caller set one (then image must
 * be NULL). The image config's Env, WorkingDir, User (by name, through the image's own files;
 * not when user_set) and Entrypoint + Cmd apply where spec leaves them unset; the caller's env
 * entries and argv win. PATH and HOME get defaults when still unset. spec->readonly_root must be
 * final: it decides whether a flattened tree is copied.
 */
int lb_spec_image(const struct lb_paths *paths, const char *image, bool user_set,
		  struct lb_spec *spec, struct lb_err **err);
/* overlayfs in this kernel? (LBBOX_NO_OVERLAY=1 pretends it is not, to test the fallback.) */
bool lb_overlay_available(void);
/* The image's User ("name", "uid", "name:group" ...) through its own /etc/passwd and /etc/group,
 * looked up in the layers of lowerdir (a ':'-separated list, top first). */
int lb_image_user(const char *lowerdir, const char *user, uid_t *uid, gid_t *gid,
		  struct lb_err **err);

#endif
