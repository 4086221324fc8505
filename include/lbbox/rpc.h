/*
 * LangBot's Box RPC wire protocol (spec §6): stdio line framing with the chunk protocol, the
 * request / response shapes, error texts, and the tenancy envelope (context -> physical session
 * ids and back). Transport-free: callers feed bytes in and get lines to write out.
 */
#ifndef LBBOX_RPC_H
#define LBBOX_RPC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lbbox/err.h"

#define LB_RPC_MAX_MESSAGE   (16u << 20) /* MAX_MESSAGE_BYTES */
#define LB_RPC_CHUNK_SIZE    16384u	 /* larger messages are chunked */
#define LB_RPC_MAX_FRAGMENTS 4096u
#define LB_RPC_MAX_INFLIGHT  128

/* ---- stdio framing (§6.2) ------------------------------------------------------------------ */

/* Reassembles incoming lines into messages. Zero-initialise; lb_rpc_reader_free at the end. */
struct lb_rpc_reader {
	char *line; /* the line being read */
	size_t line_len, line_cap;
	bool in_chunk; /* between chunk_start and chunk_end */
	char *msg;     /* the chunked message being reassembled */
	size_t msg_len, msg_total;
	unsigned frags;
};
/* One complete message: msg, a JSON object (borrowed; valid until return), or NULL when its
 * text could not be decoded (lb_rpc_decode): then bad says why and seq_id is the one recovered
 * from it (borrowed; NULL when none was). */
typedef void (*lb_rpc_msg_fn)(void *ctx, json_t *msg, json_t *seq_id, const struct lb_err *bad);
/*
 * Feeds bytes read from the peer. Calls fn for every complete message, decoded or not. Lines
 * that are not "{...}" are skipped, as LangBot's reader does, and so is anything but the chunk
 * protocol inside a chunked message. Returns -1 (with err) on a violation of the chunk protocol
 * or an oversized line: the connection must then be closed.
 */
int lb_rpc_reader_feed(struct lb_rpc_reader *r, const char *data, size_t n, lb_rpc_msg_fn fn,
		       void *ctx, struct lb_err **err);
void lb_rpc_reader_free(struct lb_rpc_reader *r);

/*
 * The lines (each ending in "\n") that carry one message: itself when it is at most 16 KiB,
 * else chunk_start, chunk_data pieces of at most 16 KiB cut on UTF-8 boundaries with their byte
 * offsets, chunk_end. Every line stays under 64 KiB (Python's reader limit). malloc'ed.
 */
int lb_rpc_frame(const char *text, size_t len, char **out, size_t *out_len, struct lb_err **err);

/* ---- messages (§6.4, §6.5) --------------------------------------------------------------------
 */

/*
 * A received message text as a JSON object, read as Python's json.loads reads it (integers of
 * any size and overflowing reals come out clamped to int64 / double, "\u0000" is kept). -1 with
 * err (ValueError, or BoxValidationError for a NUL in a key) when it cannot be decoded or is not
 * an object.
 */
int lb_rpc_decode(const char *text, size_t len, json_t **out, struct lb_err **err);
/* BoxValidationError "<path>: a string must not contain NUL (\u0000)" when a string in msg
 * holds a NUL, which no C string downstream could carry. */
int lb_rpc_check_nul(const json_t *msg, struct lb_err **err);
/* The integer seq_id of a top-level object in a text that does not decode, found by a lenient
 * scan; NULL when there is none, or when the text is a response (has "code"). New reference. */
json_t *lb_rpc_recover_seq_id(const char *text, size_t len);

/* ASCII JSON as Python's json.dumps writes it (", " and ": "); malloc'ed. */
char *lb_rpc_dumps(const json_t *j);
/* {"seq_id", "code": 0, "message": "success", "data", "chunk_status": "continue"}; steals data. */
json_t *lb_rpc_reply_ok(json_t *seq_id, json_t *data);
/* code 1, message "<Class>: <text>" (class from err->cls, else cls_default), the text cut at
 * 4096 characters + "... [protocol error truncated]", data {}. */
json_t *lb_rpc_reply_err(json_t *seq_id, const struct lb_err *e, const char *cls_default);
/* The same from a class and a text. */
json_t *lb_rpc_reply_error(json_t *seq_id, const char *cls, const char *text);

/* ---- tenancy (§6.7) -------------------------------------------------------------------------- */

struct lb_rpc_context {
	char instance[256];
	char workspace[257];
	int64_t generation;
	char prefix[64]; /* "ws-<sha256[:24]>-g<generation>" */
};
/* Parses a request's "context" object (PermissionError texts of §6.7 on failure). */
int lb_rpc_context_parse(const json_t *ctx, struct lb_rpc_context *out, struct lb_err **err);
/* "<prefix>-<sanitised logical id>"; ValueError when nothing valid is left. malloc'ed. */
int lb_rpc_physical_id(const struct lb_rpc_context *c, const char *logical, char **out,
		       struct lb_err **err);
/* Rewrites, in place and recursively, every "session_id" string starting with "<prefix>-" to
 * the part after it. */
void lb_rpc_map_back(json_t *j, const char *prefix);

#endif
