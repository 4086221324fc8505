/*
 * Fuzz target: the Box RPC wire layer as a peer's bytes reach it -- the stdio reader
 * (src/rpc/frame.c), the message decoder with its lenient number, NUL and seq_id handling
 * (src/rpc/decode.c), and what the server does next with each message: the envelope checks
 * and routing (src/rpc/envelope.c: lb_rpc_request_open, as server_handle calls it), the tenancy
 * ids (src/rpc/tenancy.c) and the replies (src/rpc/message.c). The input is what arrives on
 * stdin; the same bytes are also decoded whole, as one /rpc/ws text message is.
 *
 * Properties checked besides the sanitizers:
 * - the reader delivers the same messages and fails at the same point whether the bytes come in
 *   one read or split across many (a pipe splits them anywhere);
 * - every delivered message, written back with lb_rpc_dumps and lb_rpc_frame (chunked when over
 *   16 KiB), is read back as exactly one equal message;
 * - lb_rpc_decode accepts only JSON: what it reads must still parse once each number token of
 *   JSON's grammar is replaced by 0 (numbers out of jansson's range are the only leniency);
 *   and what jansson reads itself (with "\u0000" allowed) it decodes to the same value;
 * - the envelope either answers (a reply that dumps), ignores with a reason, or routes with the
 *   request's data an object; a tenant action with a context always has its fence.
 */
#include <ctype.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "lbbox/rpc/rpc.h"

#define MAX_MSGS 256

struct got {
	char *text[MAX_MSGS]; /* each message dumped canonically, or why it did not decode */
	size_t n, dropped;
};

static void collect(void *ctx, json_t *msg, json_t *seq_id, const struct lb_err *bad)
{
	struct got *g = ctx;
	if (g->n == MAX_MSGS) {
		g->dropped++;
		return;
	}
	if (msg) {
		g->text[g->n] = json_dumps(msg, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY);
	} else {
		FUZZ_CHECK(bad && bad->msg, "an undecodable message without a reason");
		FUZZ_CHECK(!seq_id || json_is_integer(seq_id), "a recovered seq_id not an integer");
		if (asprintf(&g->text[g->n], "undecodable, seq_id %lld: %s",
			     seq_id ? (long long)json_integer_value(seq_id) : -1LL, bad->msg) < 0)
			g->text[g->n] = NULL;
	}
	FUZZ_CHECK(g->text[g->n], "a delivered message cannot be dumped");
	g->n++;
}

static void got_free(struct got *g)
{
	for (size_t i = 0; i < g->n; i++)
		free(g->text[i]);
}

/* Feeds data in pieces of the sizes in steps (cycled); returns the reader's result. */
static int feed_split(const uint8_t *data, size_t size, const size_t *steps, size_t nsteps,
		      struct got *g)
{
	struct lb_rpc_reader r = {0};
	struct lb_err *err = NULL;
	int rc = 0;
	for (size_t off = 0, i = 0; off < size && rc == 0; i++) {
		size_t n = steps[i % nsteps];
		if (n > size - off)
			n = size - off;
		rc = lb_rpc_reader_feed(&r, (const char *)data + off, n, collect, g, &err);
		FUZZ_CHECK((rc < 0) == (err != NULL), "reader result %d with error %s", rc,
			   err ? err->msg : "(none)");
		off += n;
	}
	lb_err_free(&err);
	lb_rpc_reader_free(&r);
	return rc;
}

struct one {
	json_t *msg;
	int n;
};

static void take_one(void *ctx, json_t *msg, json_t *seq_id, const struct lb_err *bad)
{
	struct one *o = ctx;
	if (o->n++ == 0)
		o->msg = json_incref(msg);
}

/* What the server sends back must come through the peer's reader unchanged. */
static void check_roundtrip(json_t *msg)
{
	const char *type = json_string_value(json_object_get(msg, "type"));
	/* a reassembled message may itself look like a chunk line: no one frames those */
	if (type && (!strcmp(type, "chunk_start") || !strcmp(type, "chunk_data") ||
		     !strcmp(type, "chunk_end")))
		return;
	char *text = lb_rpc_dumps(msg), *framed = NULL;
	size_t len = 0;
	struct lb_err *err = NULL;
	FUZZ_CHECK(text, "lb_rpc_dumps failed");
	FUZZ_CHECK(lb_rpc_frame(text, strlen(text), &framed, &len, &err) == 0, "lb_rpc_frame: %s",
		   err ? err->msg : "?");
	/* Python's reader refuses lines of 64 KiB or more */
	for (char *p = framed, *nl; (nl = memchr(p, '\n', len - (size_t)(p - framed))); p = nl + 1)
		FUZZ_CHECK(nl - p < 65536, "framed line of %td bytes", nl - p);
	struct lb_rpc_reader r = {0};
	struct one o = {0};
	int rc = lb_rpc_reader_feed(&r, framed, len, take_one, &o, &err);
	FUZZ_CHECK(rc == 0, "framed message refused: %s", err ? err->msg : "?");
	FUZZ_CHECK(o.n == 1, "framed message read back as %d messages", o.n);
	FUZZ_CHECK(o.msg && json_equal(o.msg, msg), "framed message read back different: %s", text);
	json_decref(o.msg);
	lb_rpc_reader_free(&r);
	free(framed);
	free(text);
}

static void send_reply(json_t *reply)
{
	FUZZ_CHECK(reply, "no reply");
	char *text = lb_rpc_dumps(reply);
	FUZZ_CHECK(text, "dump a reply");
	free(text);
	json_decref(reply);
}

/* The runtime's envelope checks and routing, on a runtime with no sessions (fences only). */
static void envelope(json_t *msg)
{
	static struct lb_rpc_runtime rt;
	static bool ready;
	struct lb_rpc_request req;
	json_t *reply;
	const char *why;
	if (!ready)
		lb_rpc_runtime_init(&rt), rt.skills = &lb_rpc_skills_local, ready = true;
	if (rt.n_fences > LB_RPC_MAX_FENCES / 2)
		rt.n_fences = 0; /* keep the table from filling across runs */
	enum lb_rpc_route route = lb_rpc_request_open(&rt, msg, false, &req, &reply, &why);
	if (route == LB_RPC_DONE) {
		FUZZ_CHECK(!reply || !why, "both answered and ignored");
		if (reply)
			send_reply(reply);
	} else {
		FUZZ_CHECK(json_is_object(req.data), "a routed request without an object");
		FUZZ_CHECK(req.action && *req.action, "a routed request without an action");
		if (req.has_ctx && (route == LB_RPC_JOB || route == LB_RPC_QUICK) &&
		    strcmp(req.action, "box_shutdown"))
			FUZZ_CHECK(req.fence[0], "a tenant action without its fence");
	}
	lb_rpc_request_close(&req);
}

/* The server's steps on a request: the NUL check, the tenancy envelope, session ids, replies. */
static void serve(json_t *msg)
{
	envelope(msg);

	json_t *seq = json_object_get(msg, "seq_id");
	json_t *data = json_object_get(msg, "data");
	struct lb_rpc_context ctx;
	struct lb_err *err = NULL;

	if (lb_rpc_check_nul(msg, &err) < 0) {
		send_reply(lb_rpc_reply_err(seq, err, "BoxValidationError"));
		lb_err_free(&err);
		return;
	}
	if (lb_rpc_context_parse(json_object_get(msg, "context"), &ctx, &err) == 0) {
		const char *id = json_string_value(json_object_get(data, "session_id"));
		char *phys = NULL;
		if (id && lb_rpc_physical_id(&ctx, id, &phys, &err) == 0) {
			FUZZ_CHECK(!strncmp(phys, ctx.prefix, strlen(ctx.prefix)),
				   "physical id %s outside %s", phys, ctx.prefix);
			/* mapped back in a reply, it is the logical id again, sanitised */
			json_t *reply = json_pack("{s:s}", "session_id", phys);
			lb_rpc_map_back(reply, ctx.prefix);
			const char *back = json_string_value(json_object_get(reply, "session_id"));
			FUZZ_CHECK(back && !strcmp(back, phys + strlen(ctx.prefix) + 1),
				   "map back of %s gave %s", phys, back ? back : "(null)");
			json_decref(reply);
			free(phys);
		}
		json_t *copy = json_deep_copy(msg);
		lb_rpc_map_back(copy, ctx.prefix);
		json_decref(copy);
	}
	lb_err_free(&err);
	const char *action = json_string_value(json_object_get(msg, "action"));
	send_reply(lb_rpc_reply_error(seq, "BoxError", action ? action : "no action"));
	send_reply(lb_rpc_reply_ok(seq, json_incref(data)));
}

static void on_msg(void *ctx, json_t *msg, json_t *seq_id, const struct lb_err *bad)
{
	collect(ctx, msg, seq_id, bad);
	if (msg) {
		check_roundtrip(msg);
		serve(msg);
	} else if (seq_id) { /* answered with why, as server_receive does */
		send_reply(lb_rpc_reply_err(seq_id, bad, "ValueError"));
	}
}

/* Length of the JSON number (RFC 8259 grammar) at s, or 0 when s does not start with one. */
static size_t json_number(const char *s, size_t n)
{
	size_t i = 0;
	if (i < n && s[i] == '-')
		i++;
	if (i < n && s[i] == '0')
		i++;
	else if (i < n && s[i] >= '1' && s[i] <= '9')
		while (i < n && isdigit((unsigned char)s[i]))
			i++;
	else
		return 0;
	if (i < n && s[i] == '.') {
		if (++i >= n || !isdigit((unsigned char)s[i]))
			return 0;
		while (i < n && isdigit((unsigned char)s[i]))
			i++;
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		if (++i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		if (i >= n || !isdigit((unsigned char)s[i]))
			return 0;
		while (i < n && isdigit((unsigned char)s[i]))
			i++;
	}
	return i;
}

/* text with every grammatical number outside strings replaced by 0: jansson reads any of those. */
static char *numbers_zeroed(const char *text, size_t len, size_t *out_len)
{
	char *out = malloc(len + 1);
	size_t o = 0;
	if (!out)
		fuzz_setup_fail("malloc");
	for (size_t i = 0; i < len;) {
		if (text[i] == '"') { /* a string, copied whole */
			size_t j = i + 1;
			while (j < len && text[j] != '"')
				j += text[j] == '\\' ? 2 : 1;
			j = j < len ? j + 1 : len;
			memcpy(out + o, text + i, j - i);
			o += j - i, i = j;
			continue;
		}
		size_t n = (text[i] == '-' || isdigit((unsigned char)text[i]))
			       ? json_number(text + i, len - i)
			       : 0;
		if (n) {
			out[o++] = '0';
			i += n;
		} else {
			out[o++] = text[i++];
		}
	}
	*out_len = o;
	return out;
}

/* One /rpc/ws text message: decoded whole, or answered by its recovered seq_id. */
static void decode_whole(const uint8_t *data, size_t size)
{
	char *text = fuzz_strndup(data, size); /* as the server's buffers are: NUL after len */
	json_t *msg = NULL;
	struct lb_err *bad = NULL;
	int rc = lb_rpc_decode(text, size, &msg, &bad);
	json_t *direct = json_loadb(text, size, JSON_ALLOW_NUL, NULL);

	/* the leniency is for what jansson cannot hold; what it can, it holds unchanged */
	if (json_is_object(direct))
		FUZZ_CHECK(rc == 0 && json_equal(direct, msg),
			   "lb_rpc_decode changed or refused a text jansson reads: %s",
			   rc ? bad->msg : "the values differ");
	json_decref(direct);
	if (rc == 0) {
		size_t n = 0;
		char *zeroed = numbers_zeroed(text, size, &n);
		json_error_t je;
		json_t *strict = json_loadb(zeroed, n, JSON_ALLOW_NUL, &je);
		FUZZ_CHECK(strict, "lb_rpc_decode read a text that is not JSON (%s at column %d)",
			   je.text, je.column);
		json_decref(strict);
		free(zeroed);
		serve(msg);
		json_decref(msg);
	} else {
		FUZZ_CHECK(bad && bad->msg, "an undecodable text without a reason");
		json_t *seq = lb_rpc_recover_seq_id(text, size);
		if (seq)
			send_reply(lb_rpc_reply_err(seq, bad, "ValueError"));
		json_decref(seq);
	}
	lb_err_free(&bad);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t split[] = {1, 7, 2, 64, 3, 500};
	struct got a = {0}, b = {0};
	struct lb_rpc_reader r = {0};
	struct lb_err *err = NULL;

	/* the whole input in one read, with the server's steps on every message */
	int ra = lb_rpc_reader_feed(&r, (const char *)data, size, on_msg, &a, &err);
	lb_err_free(&err);
	lb_rpc_reader_free(&r);
	int rb = feed_split(data, size, split, sizeof(split) / sizeof(split[0]), &b);
	FUZZ_CHECK(ra == rb, "whole input: %d, split input: %d", ra, rb);
	FUZZ_CHECK(a.n == b.n && a.dropped == b.dropped, "whole input: %zu messages, split: %zu",
		   a.n + a.dropped, b.n + b.dropped);
	for (size_t i = 0; i < a.n; i++)
		FUZZ_CHECK(!strcmp(a.text[i], b.text[i]), "message %zu differs: %s / %s", i,
			   a.text[i], b.text[i]);
	got_free(&a);
	got_free(&b);
	decode_whole(data, size);
	return 0;
}
