/* The sealed forms of lbbox's executable (sealed_view.c), for sealed.c. */
#ifndef LBBOX_SEALED_H
#define LBBOX_SEALED_H

#include <fcntl.h>

#include "lbbox/base/err.h"

#define LB_SEALED_MEMFD "lbbox-sealed"
#define LB_SEALS	(F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)

/* An O_PATH descriptor of the running binary seen through a detached read-only overlayfs, and
 * one of that overlay's root (the binary's whole directory) in *dir. */
int lb_sealed_view(int *out, int *dir, struct lb_err **err);
/* A sealed memfd holding a copy of the running binary. */
int lb_sealed_copy(int *out, struct lb_err **err);
/* A sealed memfd holding a copy of the regular file src (name: for errors). */
int lb_sealed_copy_of(int src, const char *name, int *out, struct lb_err **err);

#endif
