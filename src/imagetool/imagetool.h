/* lbbox-image's commands beyond main.c. */
#ifndef LBBOX_IMAGETOOL_H
#define LBBOX_IMAGETOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lbbox/base/err.h"
#include "lbbox/image/progress.h"
#include "lbbox/image/store.h"

/* `sizes`: measures (decompresses) every stored layer whose uncompressed size is not remembered
 * yet, and remembers it (lb_store_layer_size_set) for `lbbox images`. */
int tool_sizes(struct lb_store *s, struct lb_err **err);

/* Receives a layer's decompressed bytes; < 0 (err filled) stops the stream. */
typedef int (*tool_sink_fn)(const void *buf, size_t len, void *ctx, struct lb_err **err);
/* Decompresses the stored layer blob digest into sink (NULL: only counts); *out: its size. */
int tool_layer_stream(struct lb_store *s, const char *digest, tool_sink_fn sink, void *ctx,
		      uint64_t *out, struct lb_err **err);
/* The uncompressed size of a layer: remembered by diff_id, else measured and remembered. */
int tool_layer_size(struct lb_store *s, const char *digest, const char *diff_id, uint64_t *out,
		    struct lb_err **err);

/* The progress display of pull and load (progress.c): tool_progress is the callback, with a
 * struct tool_progress as its context; tool_progress_end ends a line left open. */
struct tool_progress {
	bool tty;
	char digest[80]; /* the blob being shown */
	bool open;	 /* a terminal line being rewritten */
	bool printed;	 /* the blob's complete line is out */
	uint64_t drawn_ns;
};
void tool_progress_init(struct tool_progress *t);
void tool_progress(const struct lb_image_progress *p, void *ctx);
void tool_progress_end(struct tool_progress *t);

/* `save [-o FILE] [--format docker-archive|oci-archive] REF...` (save.c). */
int tool_save(struct lb_store *s, int argc, char **argv, struct lb_err **err);

#endif
