/* lbbox-image's commands beyond main.c. */
#ifndef LBBOX_IMAGETOOL_H
#define LBBOX_IMAGETOOL_H

#include "lbbox/base/err.h"
#include "lbbox/image/store.h"

/* `sizes`: measures (decompresses) every stored layer whose uncompressed size is not remembered
 * yet, and remembers it (lb_store_layer_size_set) for `lbbox images`. */
int tool_sizes(struct lb_store *s, struct lb_err **err);

#endif
