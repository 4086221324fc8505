/* Validators of the Box models used only inside the box layer (box_spec_mount.c). */
#ifndef LBBOX_BOX_SPEC_INTERNAL_H
#define LBBOX_BOX_SPEC_INTERNAL_H

#include <stddef.h>

#include "lbbox/box/spec.h"
#include "lbbox/base/err.h"

/* Strips; "" becomes NULL; at most 64 characters, each alphanumeric (Python) or - or _. */
int lb_box_check_skill_name(char **field, struct lb_err **err);
/* BoxMountSpec's validators on extra_mounts[index]. */
int lb_box_check_mount(struct lb_box_mount *m, size_t index, struct lb_err **err);

#endif
