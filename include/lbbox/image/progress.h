/* What a pull or a load is copying, for the caller's progress display (the library never prints:
 * lbbox-image draws it, as podman's "Copying blob 3f2a1b... 3.5 MiB / 50.4 MiB"). */
#ifndef LBBOX_IMAGE_PROGRESS_H
#define LBBOX_IMAGE_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct lb_image_progress {
	const char *what;   /* "manifest", "config", "layer" or (load) "blob" */
	const char *digest; /* the blob being copied ("sha256:..."); NULL while resolving a tag */
	size_t index;	    /* layer number, 1-based (0 when not a layer of a known list) */
	size_t count;	    /* number of layers (0 when not known) */
	uint64_t done;	    /* bytes of this blob copied so far */
	uint64_t total;	    /* its size; 0 when not yet known */
	bool cached;	    /* already in the store: nothing is copied */
};

/* Called from inside the copy, at its start, for each chunk, and (done == total) at its end. */
typedef void (*lb_image_progress_fn)(const struct lb_image_progress *p, void *ctx);

#endif
