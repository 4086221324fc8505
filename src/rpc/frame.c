/*
 * stdio framing (§6.2): one JSON object per line; messages over 16 KiB travel as chunk_start,
 * chunk_data pieces (byte offsets checked) and chunk_end. The reader enforces the SDK's checks
 * (total <= 16 MiB, offsets contiguous, no overflow, <= 4096 fragments, total reached at the
 * end); any violation means the connection must close. Lines that are not "{...}" are skipped;
 * the others are decoded as lb_rpc_decode does, and those that do not decode are handed on too,
 * with why and their seq_id, to be answered.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/rpc/rpc.h"

/* A single line may hold a whole unchunked message; anything longer is not a peer we serve. */
#define MAX_LINE (LB_RPC_MAX_MESSAGE + 65536u)

static int chunk_start(struct lb_rpc_reader *r, json_t *j, struct lb_err **err)
{
	json_t *t = json_object_get(j, "total_size");
	if (r->in_chunk)
		return lb_err_set(err, EPROTO, "chunk_start inside a chunked message");
	if (!json_is_integer(t) || json_integer_value(t) < 0 ||
	    json_integer_value(t) > (json_int_t)LB_RPC_MAX_MESSAGE)
		return lb_err_set(err, EPROTO, "chunk_start: invalid total_size");
	r->msg_total = (size_t)json_integer_value(t);
	r->msg = malloc(r->msg_total + 1);
	if (!r->msg)
		return lb_err_set(err, ENOMEM, "chunked message");
	r->msg_len = 0;
	r->frags = 0;
	r->in_chunk = true;
	return 0;
}

static int chunk_data(struct lb_rpc_reader *r, json_t *j, struct lb_err **err)
{
	json_t *d = json_object_get(j, "data"), *off = json_object_get(j, "offset");
	if (!r->in_chunk)
		return lb_err_set(err, EPROTO, "chunk_data outside a chunked message");
	if (!json_is_string(d) || !json_is_integer(off))
		return lb_err_set(err, EPROTO, "chunk_data: data and offset required");
	size_t n = json_string_length(d);
	if (json_integer_value(off) != (json_int_t)r->msg_len)
		return lb_err_set(err, EPROTO, "chunk_data: offset %lld, expected %zu",
				  (long long)json_integer_value(off), r->msg_len);
	if (n > r->msg_total - r->msg_len)
		return lb_err_set(err, EPROTO, "chunk_data: more than total_size");
	if (++r->frags > LB_RPC_MAX_FRAGMENTS)
		return lb_err_set(err, EPROTO, "too many chunk fragments");
	memcpy(r->msg + r->msg_len, json_string_value(d), n);
	r->msg_len += n;
	return 0;
}

static void reset_chunk(struct lb_rpc_reader *r)
{
	free(r->msg);
	r->msg = NULL;
	r->msg_len = r->msg_total = 0;
	r->in_chunk = false;
}

/* A message text to fn, decoded, or with why it could not be and the seq_id found in it. */
static void deliver(const char *text, size_t len, lb_rpc_msg_fn fn, void *ctx)
{
	json_t *j = NULL;
	struct lb_err *bad = NULL;
	if (lb_rpc_decode(text, len, &j, &bad) == 0) {
		fn(ctx, j, NULL, NULL);
		json_decref(j);
		return;
	}
	json_t *seq = lb_rpc_recover_seq_id(text, len);
	fn(ctx, NULL, seq, bad);
	json_decref(seq);
	lb_err_free(&bad);
}

static int chunk_end(struct lb_rpc_reader *r, lb_rpc_msg_fn fn, void *ctx, struct lb_err **err)
{
	if (!r->in_chunk)
		return lb_err_set(err, EPROTO, "chunk_end outside a chunked message");
	if (r->msg_len != r->msg_total)
		return lb_err_set(err, EPROTO, "chunk_end after %zu of %zu bytes", r->msg_len,
				  r->msg_total);
	r->msg[r->msg_len] = '\0';
	deliver(r->msg, r->msg_len, fn, ctx);
	reset_chunk(r);
	return 0;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

static int on_line(struct lb_rpc_reader *r, char *s, size_t n, lb_rpc_msg_fn fn, void *ctx,
		   struct lb_err **err)
{
	while (n && is_space(*s))
		s++, n--;
	while (n && is_space(s[n - 1]))
		n--;
	if (n < 2 || s[0] != '{' || s[n - 1] != '}')
		return 0; /* stray output on the pipe: skipped */
	json_t *j = NULL;
	if (lb_rpc_decode(s, n, &j, NULL) < 0) {
		if (!r->in_chunk) /* mid-chunk, only the chunk protocol counts */
			deliver(s, n, fn, ctx);
		return 0;
	}
	const char *type = json_string_value(json_object_get(j, "type"));
	int rc = 0;
	if (type && !strcmp(type, "chunk_start"))
		rc = chunk_start(r, j, err);
	else if (type && !strcmp(type, "chunk_data"))
		rc = chunk_data(r, j, err);
	else if (type && !strcmp(type, "chunk_end"))
		rc = chunk_end(r, fn, ctx, err);
	else if (!r->in_chunk) /* a message in the middle of a chunked one is dropped */
		fn(ctx, j, NULL, NULL);
	json_decref(j);
	return rc;
}

int lb_rpc_reader_feed(struct lb_rpc_reader *r, const char *data, size_t n, lb_rpc_msg_fn fn,
		       void *ctx, struct lb_err **err)
{
	while (n) {
		const char *nl = memchr(data, '\n', n);
		size_t take = nl ? (size_t)(nl - data) : n;
		if (r->line_len + take > MAX_LINE)
			return lb_err_set(err, EMSGSIZE, "line longer than %u bytes", MAX_LINE);
		if (r->line_len + take + 1 > r->line_cap) {
			size_t cap = (r->line_len + take + 1) * 2;
			char *p = realloc(r->line, cap);
			if (!p)
				return lb_err_set(err, ENOMEM, "line");
			r->line = p, r->line_cap = cap;
		}
		memcpy(r->line + r->line_len, data, take);
		r->line_len += take;
		data += take, n -= take;
		if (!nl)
			break;
		data++, n--;
		r->line[r->line_len] = '\0';
		size_t len = r->line_len;
		r->line_len = 0;
		if (on_line(r, r->line, len, fn, ctx, err) < 0) {
			reset_chunk(r);
			return -1;
		}
	}
	return 0;
}

void lb_rpc_reader_free(struct lb_rpc_reader *r)
{
	reset_chunk(r);
	free(r->line);
	memset(r, 0, sizeof(*r));
}

/* Longest prefix of s (at most max bytes) that ends on a UTF-8 character boundary. */
static size_t utf8_cut(const char *s, size_t len, size_t max)
{
	if (len <= max)
		return len;
	size_t n = max;
	while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
		n--;
	return n ? n : max;
}

static int append(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
	if (*len + n + 1 > *cap) {
		size_t c = (*len + n + 1) * 2;
		char *p = realloc(*buf, c);
		if (!p)
			return -1;
		*buf = p, *cap = c;
	}
	memcpy(*buf + *len, s, n);
	*len += n;
	(*buf)[*len] = '\0';
	return 0;
}

static int append_json_line(char **buf, size_t *len, size_t *cap, json_t *j)
{
	_cleanup_free_ char *s = lb_rpc_dumps(j);
	json_decref(j);
	if (!s || append(buf, len, cap, s, strlen(s)) < 0 || append(buf, len, cap, "\n", 1) < 0)
		return -1;
	return 0;
}

int lb_rpc_frame(const char *text, size_t len, char **out, size_t *out_len, struct lb_err **err)
{
	char *buf = NULL;
	size_t n = 0, cap = 0, off = 0;
	int r = 0;
	if (len <= LB_RPC_CHUNK_SIZE) {
		r = append(&buf, &n, &cap, text, len) | append(&buf, &n, &cap, "\n", 1);
	} else {
		r = append_json_line(
		    &buf, &n, &cap,
		    json_pack("{s:s, s:I}", "type", "chunk_start", "total_size", (json_int_t)len));
		while (r == 0 && off < len) {
			size_t piece = utf8_cut(text + off, len - off, LB_RPC_CHUNK_SIZE);
			r = append_json_line(&buf, &n, &cap,
					     json_pack("{s:s, s:s%, s:I}", "type", "chunk_data",
						       "data", text + off, piece, "offset",
						       (json_int_t)off));
			off += piece;
		}
		if (r == 0)
			r = append_json_line(&buf, &n, &cap,
					     json_pack("{s:s}", "type", "chunk_end"));
	}
	if (r < 0) {
		free(buf);
		return lb_err_set(err, ENOMEM, "frame a message");
	}
	*out = buf;
	*out_len = n;
	return 0;
}
