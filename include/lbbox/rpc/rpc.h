/*
 * LangBot's Box RPC protocol (spec §6): stdio line framing with the chunk protocol, the
 * request / response shapes, error texts, the tenancy envelope (context -> physical session ids
 * and back, generation fences), the request models read from JSON, and the actions on the box
 * layer. Transport-free: callers feed bytes in and get replies to send out.
 */
#ifndef LBBOX_RPC_H
#define LBBOX_RPC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lbbox/box/box.h"
#include "lbbox/box/spec.h"
#include "lbbox/base/err.h"

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

/* ---- request models (§1) --------------------------------------------------------------------- */

/* A BoxSpec object (unknown keys ignored), coerced as pydantic's lax mode does and validated
 * field by field in declaration order; on failure *err has class BoxValidationError with
 * pydantic-equivalent text, and *out is left freed. */
int lb_rpc_spec_parse(const json_t *obj, struct lb_box_spec *out, struct lb_err **err);
/* The same for a BoxManagedProcessSpec. */
int lb_rpc_proc_spec_parse(const json_t *obj, struct lb_box_proc_spec *out, struct lb_err **err);

/* ---- reply shapes (§1.4, §1.5, §1.7, §3.7), datetimes as pydantic writes them ------------------
 */

json_t *lb_rpc_session_json(const struct lb_box_session *s);
json_t *lb_rpc_proc_json(const struct lb_box_proc_info *p);
/* §3.7 get_session: the session, plus its managed processes only once there are any. */
json_t *lb_rpc_session_details_json(struct lb_box *box, const char *id, struct lb_err **err);
json_t *lb_rpc_exec_result_json(const char *session_id, const struct lb_box_exec_result *r);

/* ^[A-Za-z0-9][A-Za-z0-9<extra>]{0,max-1}$: instance ids (§6.8, extra "._:-", 128), upload
 * keys (§6.6, extra "._-", 255). */
bool lb_rpc_name_valid(const char *v, const char *extra, size_t max);

/* ---- the runtime's state (§3.1, §6.7) -----------------------------------------------------------
 */

#define LB_RPC_MAX_FENCES 1024

/* The highest placement generation seen per instance + Workspace (§6.7). */
struct lb_rpc_fence {
	char key[80]; /* the Workspace's namespace "ws-<sha256[:24]>" */
	int64_t generation;
};

/* What the protocol keeps between requests; the transport owns one. */
struct lb_rpc_runtime;
struct lb_rpc_request;
/*
 * The skill store's work (§6.6, §6.11): its eleven actions and skill_name's package lookup. The
 * store needs libarchive and libyaml, so the Box runtime runs it in the helper lbbox-skill
 * (server/skill_client.c); lb_rpc_skills_local is the same work in this process (lbbox-skill
 * itself, the tests). A runtime without one (NULL) answers every skill action with an error.
 */
struct lb_rpc_skills {
	/* A skill action's result (*out) or error. */
	int (*action)(struct lb_rpc_runtime *rt, const struct lb_rpc_request *req, json_t **out,
		      struct lb_err **err);
	/* The canonical package directory of skill name in the caller's store (malloc'ed). */
	int (*package_root)(struct lb_rpc_runtime *rt, const struct lb_rpc_context *ctx,
			    const char *name, char **out, struct lb_err **err);
};
extern const struct lb_rpc_skills lb_rpc_skills_local;

struct lb_rpc_runtime {
	const struct lb_rpc_skills *skills;
	struct lb_box box;
	json_t *config;		/* LANGBOT_BOX_CONFIG merged with box_init payloads */
	json_t *features;	/* lb_host_features() at start */
	int64_t max_file_bytes; /* box.limits.max_rpc_file_bytes */
	char trusted[256];	/* the trusted LangBot instance, "" = none yet */
	/* The peer's working directory is not lbbox's (`lbbox serve`): relative paths in its config
	 * cannot be placed and are not used. */
	bool remote_peer;
	struct lb_rpc_fence fences[LB_RPC_MAX_FENCES];
	size_t n_fences;
};
/* An empty runtime with §3.1's defaults; the transport then fills box (lb_box_open_env),
 * features (lb_host_features) and trusted. lb_rpc_runtime_fini frees what it holds. */
void lb_rpc_runtime_init(struct lb_rpc_runtime *rt);
void lb_rpc_runtime_fini(struct lb_rpc_runtime *rt);
/* config.c: box_init / LANGBOT_BOX_CONFIG (§3.1), shallow-merged into rt.config: box.limits
 * (validated and applied atomically, LangBot's messages) and box.local (host_root, allowed mount
 * roots, the default workspace). */
int lb_rpc_apply_config(struct lb_rpc_runtime *rt, json_t *update, struct lb_err **err);

/* The Workspace namespace "ws-<sha256[:24]>" of a context's prefix "ws-<hash>-g<N>". */
void lb_rpc_namespace_of(const struct lb_rpc_context *c, char *out, size_t len);
/* The fence of a Workspace namespace; create: add it when new. NULL when absent / full. */
struct lb_rpc_fence *lb_rpc_fence(struct lb_rpc_runtime *rt, const char *ns, bool create);
/* A higher generation seen: removes the sessions of ns's older generations (those not under
 * prefix). Slow: transports run it in the background. */
void lb_rpc_fence_cleanup(struct lb_rpc_runtime *rt, const char *ns, const char *prefix);

/* ---- requests (§6.4 - §6.7)
 * ---------------------------------------------------------------------- */

/* Where a request goes once its envelope passed. */
enum lb_rpc_route {
	LB_RPC_DONE,   /* answered (*reply) or ignored (*ignored says why) */
	LB_RPC_INLINE, /* lb_rpc_inline_action: no sandbox work, answer at once */
	LB_RPC_UPLOAD, /* __file_chunk: into an upload the connection owns (lb_rpc_chunk_parse) */
	LB_RPC_JOB,    /* lb_rpc_run_action, away from the event loop (it may take minutes) */
	LB_RPC_QUICK,  /* lb_rpc_run_action at once: a tenant action that only counts (box_status)
			* from what the runtime keeps in memory, reading the indexes on a change */
};

struct lb_rpc_request {
	const char *action;
	json_t *data;	/* the request's object (a new reference; {} when absent) */
	json_t *seq_id; /* borrowed from the message */
	bool has_ctx;	/* false: the legacy protocol (no context) */
	struct lb_rpc_context ctx;
	char fence[80];	     /* a tenant action's Workspace namespace, "" otherwise */
	bool fence_advanced; /* a higher generation: lb_rpc_fence_cleanup is due */
	/* The zip skill actions' upload (lb_rpc_action_reads_upload): a read-only descriptor the
	 * transport opened on the caller's upload of data.file_key before removing it; -1 for
	 * none. The transport closes it. */
	int upload_fd;
};
/*
 * The envelope checks of a received message, in LangBot's order: responses and messages without
 * an action are ignored; a NUL in a string, a non-string action, non-object data, a runtime
 * shutting down, an unknown action, a bad or stale context are answered with LangBot's error.
 * Otherwise req is filled (lb_rpc_request_close frees it) and the route returned.
 */
enum lb_rpc_route lb_rpc_request_open(struct lb_rpc_runtime *rt, json_t *msg, bool shutting_down,
				      struct lb_rpc_request *req, json_t **reply,
				      const char **ignored);
void lb_rpc_request_close(struct lb_rpc_request *req);

/* actions.c: an LB_RPC_INLINE request's reply. */
json_t *lb_rpc_inline_action(struct lb_rpc_runtime *rt, const struct lb_rpc_request *req);
/* An LB_RPC_JOB request, run to its reply: session ids made physical on the way in and mapped
 * back on the way out, errors with LangBot's classes. */
json_t *lb_rpc_run_action(struct lb_rpc_runtime *rt, const struct lb_rpc_request *req);
/* The action reads a __file_chunk upload (data.file_key): the transport hands it over in
 * req->upload_fd and removes it, whatever the action's outcome. */
bool lb_rpc_action_reads_upload(const char *action);
/* Creates, deletes, starts and stops, and the skill actions: a shutdown lets them finish. */
bool lb_rpc_action_waits_on_shutdown(const char *action);
/* {"name": "lbbox", "available"}: available when a session with LangBot's limits can really be
 * built on this host. */
json_t *lb_rpc_backend_info(const struct lb_rpc_runtime *rt);

/* chunk.c: a __file_chunk request's fields, checked as the SDK's handler checks them, its bytes
 * decoded (strict base64; malloc'ed, the caller frees). */
struct lb_rpc_chunk {
	const char *key; /* borrowed from the request */
	int64_t length, index, amount;
	unsigned char *bytes;
	size_t n;
};
int lb_rpc_chunk_parse(const struct lb_rpc_runtime *rt, const json_t *data, struct lb_rpc_chunk *c,
		       struct lb_err **err);

#endif
