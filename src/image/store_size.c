/*
 * Uncompressed layer sizes, what `lbbox images` shows as an image's SIZE (podman shows the same:
 * the unpacked layers, not the download). Measuring one means decompressing the layer, which only
 * lbbox-image can do, so each is measured once and remembered in ROOT/layer-sizes/<DiffID hex>:
 * a DiffID names the uncompressed stream, so its size never changes.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store_internal.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"

#define SIZES_DIR "layer-sizes"

int lb_store_layer_size_get(struct lb_store *s, const char *diff_id, uint64_t *size)
{
	const char *hex = NULL;
	char path[LB_PATH_BUF], buf[32] = "";
	if (store_digest_hex(diff_id, &hex, NULL) < 0)
		return -1;
	snprintf(path, sizeof(path), SIZES_DIR "/%s", hex);
	_cleanup_close_ int fd = openat(s->root_fd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = lb_read_all(fd, buf, sizeof(buf) - 1);
	char *end = NULL;
	errno = 0;
	unsigned long long v = n > 0 ? strtoull(buf, &end, 10) : 0;
	if (n <= 0 || errno || end == buf || (*end && *end != '\n'))
		return -1;
	*size = v;
	return 0;
}

int lb_store_layer_size_set(struct lb_store *s, const char *diff_id, uint64_t size,
			    struct lb_err **err)
{
	const char *hex = NULL;
	char buf[32];
	if (store_digest_hex(diff_id, &hex, err) < 0)
		return -1;
	if (mkdirat(s->root_fd, SIZES_DIR, 0755) < 0 && errno != EEXIST)
		return lb_err_set(err, errno, "mkdir %s/" SIZES_DIR, s->root);
	_cleanup_close_ int dfd =
	    openat(s->root_fd, SIZES_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return lb_err_set(err, errno, "open %s/" SIZES_DIR, s->root);
	int n = snprintf(buf, sizeof(buf), "%" PRIu64 "\n", size);
	return store_write_atomic(s, dfd, hex, buf, (size_t)n, err);
}
