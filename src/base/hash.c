/*
 * SHA-256 through OpenSSL's low-level interface. OpenSSL 3's EVP interface initialises its
 * provider machinery on first use, ~1 ms per process (measured), which the `lbbox run` paths
 * that hash (image manifests, chain ids) cannot afford; SHA256_Init & co. do not, and are only
 * deprecated, not removed.
 */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>
#include <stdlib.h>

#include "lbbox/base/hash.h"

struct lb_sha256 {
	SHA256_CTX ctx;
};

struct lb_sha256 *lb_sha256_new(void)
{
	struct lb_sha256 *h = malloc(sizeof(*h));
	if (h)
		SHA256_Init(&h->ctx);
	return h;
}

void lb_sha256_update(struct lb_sha256 *h, const void *data, size_t len)
{
	SHA256_Update(&h->ctx, data, len);
}

static void to_hex(const unsigned char md[32], char hex[65])
{
	static const char digits[] = "0123456789abcdef";
	for (int i = 0; i < 32; i++) {
		hex[2 * i] = digits[md[i] >> 4];
		hex[2 * i + 1] = digits[md[i] & 0xf];
	}
	hex[64] = '\0';
}

void lb_sha256_final_hex(struct lb_sha256 *h, char hex[65])
{
	unsigned char md[32];
	SHA256_Final(md, &h->ctx);
	to_hex(md, hex);
	free(h);
}

void lb_sha256_free(struct lb_sha256 *h)
{
	free(h);
}

void lb_sha256_hex(const void *data, size_t len, char hex[65])
{
	unsigned char md[32];
	SHA256_CTX ctx;
	SHA256_Init(&ctx);
	SHA256_Update(&ctx, data, len);
	SHA256_Final(md, &ctx);
	to_hex(md, hex);
}
