/* SHA-256 for digests and cache keys. */
#ifndef LBBOX_HASH_H
#define LBBOX_HASH_H

#include <stddef.h>

struct lb_sha256;

/* Streaming: NULL on allocation failure. */
struct lb_sha256 *lb_sha256_new(void);
void lb_sha256_update(struct lb_sha256 *h, const void *data, size_t len);
/* Writes 64 lowercase hex digits + NUL and frees h. */
void lb_sha256_final_hex(struct lb_sha256 *h, char hex[65]);
void lb_sha256_free(struct lb_sha256 *h);
/* One shot. */
void lb_sha256_hex(const void *data, size_t len, char hex[65]);

#endif
