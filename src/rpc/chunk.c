/*
 * A __file_chunk request (§6.6): LangBot uploads a file in base64 pieces of 16 KiB. Its fields
 * are checked as the SDK's handler indexes and checks them, the piece decoded; where the bytes
 * go (an upload its connection owns) is the transport's part.
 */
#include <errno.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "lbbox/rpc/rpc.h"

static int int_field(const json_t *data, const char *key, int64_t min, int64_t *out,
		     struct lb_err **err)
{
	json_t *v = json_object_get(data, key);
	if (!json_is_integer(v) || json_integer_value(v) < min)
		return lb_err_box(err, "ValueError", "%s must be an integer >= %lld", key,
				  (long long)min);
	*out = json_integer_value(v);
	return 0;
}

/* Strict base64 (padding included): the decoded bytes, malloc'ed. */
static int decode(const char *b64, unsigned char **out, size_t *len, struct lb_err **err)
{
	size_t n = strlen(b64);
	size_t body =
	    strspn(b64, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/");
	if (n % 4 || n - body > 2 || strspn(b64 + body, "=") != n - body)
		return lb_err_box(err, "ValueError", "chunk_base64 is not valid base64");
	unsigned char *buf = malloc(n / 4 * 3 + 1);
	if (!buf)
		return lb_err_set(err, ENOMEM, "chunk");
	int got = n ? EVP_DecodeBlock(buf, (const unsigned char *)b64, (int)n) : 0;
	if (got < 0) {
		free(buf);
		return lb_err_box(err, "ValueError", "chunk_base64 is not valid base64");
	}
	size_t pad = n && b64[n - 1] == '=' ? (n > 1 && b64[n - 2] == '=' ? 2 : 1) : 0;
	*out = buf, *len = (size_t)got - pad;
	return 0;
}

/* The request's fields, checked as the SDK's handler indexes and checks them. */
int lb_rpc_chunk_parse(const struct lb_rpc_runtime *rt, const json_t *data, struct lb_rpc_chunk *c,
		       struct lb_err **err)
{
	static const char *const keys[] = {"file_key", "file_length", "chunk_base64", "chunk_index",
					   "chunk_amount"};
	for (size_t i = 0; i < 5; i++)
		if (!json_object_get(data, keys[i]))
			return lb_err_box(err, "KeyError", "'%s'", keys[i]);
	c->key = json_string_value(json_object_get(data, "file_key"));
	if (!c->key || !lb_rpc_name_valid(c->key, "._-", 255))
		return lb_err_box(err, "ValueError", "invalid file_key");
	if (!json_is_string(json_object_get(data, "chunk_base64")))
		return lb_err_box(err, "ValueError", "chunk_base64 must be a string");
	if (int_field(data, "file_length", 0, &c->length, err) < 0 ||
	    int_field(data, "chunk_index", 0, &c->index, err) < 0 ||
	    int_field(data, "chunk_amount", 1, &c->amount, err) < 0)
		return -1;
	if (c->index >= c->amount)
		return lb_err_box(err, "ValueError", "chunk_index must be below chunk_amount");
	if (c->length > rt->max_file_bytes)
		return lb_err_box(err, "ValueError", "file exceeds max_rpc_file_bytes (%lld)",
				  (long long)rt->max_file_bytes);
	return decode(json_string_value(json_object_get(data, "chunk_base64")), &c->bytes, &c->n,
		      err);
}
