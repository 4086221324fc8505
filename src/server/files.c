/*
 * __file_chunk (§6.6): LangBot uploads a file in base64 pieces of 16 KiB before the zip skill
 * actions read it. Chunk 0 creates (truncates) the file, later chunks append; the file lives in
 * $LANGBOT_PLUGIN_FILE_STORAGE_DIR or ./data/temp/lbp (mode 0700), at most max_rpc_file_bytes,
 * at most 128 transfers at once. Answered in the loop: one small write.
 */
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lbbox/cleanup.h"
#include "lbbox/util.h"
#include "server/server.h"

#define TRANSFER_IDLE_NS (600ull * 1000 * 1000 * 1000)

static int int_field(json_t *data, const char *key, int64_t min, int64_t *out, struct lb_err **err)
{
	json_t *v = json_object_get(data, key);
	if (!json_is_integer(v) || json_integer_value(v) < min)
		return lb_err_box(err, "ValueError", "%s must be an integer >= %lld", key,
				  (long long)min);
	*out = json_integer_value(v);
	return 0;
}

/* The upload of key; create (chunk 0): a new one, or the same key restarted from zero. Uploads
 * idle for TRANSFER_IDLE_NS are forgotten, so abandoned ones do not hold the 128 slots. */
static struct file_transfer *transfer(struct server *s, const char *key, bool create)
{
	uint64_t now = lb_now_ns();
	struct file_transfer *t = NULL;
	for (size_t i = s->n_transfers; i-- > 0;)
		if (now - s->transfers[i].touched > TRANSFER_IDLE_NS)
			s->transfers[i] = s->transfers[--s->n_transfers];
	for (size_t i = 0; i < s->n_transfers && !t; i++)
		if (!strcmp(s->transfers[i].key, key))
			t = &s->transfers[i];
	if (!t && create && s->n_transfers < SERVER_MAX_TRANSFERS) {
		t = &s->transfers[s->n_transfers++];
		snprintf(t->key, sizeof(t->key), "%s", key);
	}
	if (t && create)
		t->received = 0;
	if (t)
		t->touched = now;
	return t;
}

static void transfer_end(struct server *s, struct file_transfer *t)
{
	*t = s->transfers[--s->n_transfers];
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

static int storage_dir(char *out, size_t len, struct lb_err **err)
{
	const char *env = getenv("LANGBOT_PLUGIN_FILE_STORAGE_DIR");
	snprintf(out, len, "%s", env && *env ? env : "data/temp/lbp");
	if (lb_mkdir_p(out, 0700, err) < 0)
		return -1;
	return 0;
}

/* The chunk's bytes into the file: created by chunk 0, appended to afterwards. */
static int store(const char *key, int64_t index, int64_t length, struct file_transfer *t,
		 json_t *data, struct lb_err **err)
{
	_cleanup_free_ unsigned char *bytes = NULL;
	size_t n = 0;
	char dir[4096], path[4400];
	if (decode(json_string_value(json_object_get(data, "chunk_base64")), &bytes, &n, err) < 0 ||
	    storage_dir(dir, sizeof(dir), err) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/%s", dir, key);
	if ((int64_t)(t->received + n) > length) {
		unlink(path);
		return lb_err_box(err, "ValueError", "file %s is longer than file_length %lld", key,
				  (long long)length);
	}
	int flags = O_WRONLY | O_CLOEXEC | O_NOFOLLOW | (index == 0 ? O_CREAT | O_TRUNC : O_APPEND);
	_cleanup_close_ int fd = open(path, flags, 0600);
	if (fd < 0 || lb_write_all(fd, bytes, n) < 0)
		return lb_err_set(err, errno, "write %s", path);
	t->received += n;
	return 0;
}

static int write_chunk(struct server *s, json_t *data, struct lb_err **err)
{
	int64_t length = 0, index = 0, amount = 0;
	static const char *const keys[] = {"file_key", "file_length", "chunk_base64", "chunk_index",
					   "chunk_amount"};
	for (size_t i = 0; i < 5; i++) /* as the SDK's handler indexes the payload */
		if (!json_object_get(data, keys[i]))
			return lb_err_box(err, "KeyError", "'%s'", keys[i]);
	const char *key = json_string_value(json_object_get(data, "file_key"));
	if (!key || !server_name_valid(key, "._-", 255))
		return lb_err_box(err, "ValueError", "invalid file_key");
	if (!json_is_string(json_object_get(data, "chunk_base64")))
		return lb_err_box(err, "ValueError", "chunk_base64 must be a string");
	if (int_field(data, "file_length", 0, &length, err) < 0 ||
	    int_field(data, "chunk_index", 0, &index, err) < 0 ||
	    int_field(data, "chunk_amount", 1, &amount, err) < 0)
		return -1;
	if (index >= amount)
		return lb_err_box(err, "ValueError", "chunk_index must be below chunk_amount");
	if (length > s->max_file_bytes)
		return lb_err_box(err, "ValueError", "file exceeds max_rpc_file_bytes (%lld)",
				  (long long)s->max_file_bytes);
	struct file_transfer *t = transfer(s, key, index == 0);
	if (!t)
		return lb_err_box(err, "ValueError",
				  index ? "no transfer in progress for file_key %s"
					: "too many file transfers in progress (%s)",
				  key);
	if (store(key, index, length, t, data, err) < 0) {
		transfer_end(s, t);
		return -1;
	}
	if (index == amount - 1)
		transfer_end(s, t);
	return 0;
}

json_t *server_file_chunk(struct server *s, json_t *data, json_t *seq_id)
{
	struct lb_err *err = NULL;
	if (write_chunk(s, data, &err) < 0) {
		json_t *r = lb_rpc_reply_err(seq_id, err, "ValueError");
		lb_err_free(&err);
		return r;
	}
	return lb_rpc_reply_ok(seq_id, json_object());
}
