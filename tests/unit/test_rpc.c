// LangBot's Box RPC wire layer (spec §6.2, §6.4, §6.5, §6.7): framing and chunking both ways,
// reply shapes, error texts, tenancy ids.
#include <criterion/criterion.h>
#include <float.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbbox/rpc/rpc.h"

static char *lbt_strdupf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *lbt_strdupf(const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;
	va_start(ap, fmt);
	cr_assert_geq(vasprintf(&s, fmt, ap), 0);
	va_end(ap);
	return s;
}

struct got {
	json_t *msgs[64];
	int n;
	/* messages that did not decode: the seq_id found (-1: none) and why */
	long long bad_seq[64];
	char *bad[64];
	int nbad;
};

static void collect(void *ctx, json_t *msg, json_t *seq_id, const struct lb_err *bad)
{
	struct got *g = ctx;
	if (msg && g->n < 64)
		g->msgs[g->n++] = json_incref(msg);
	if (!msg && g->nbad < 64) {
		g->bad_seq[g->nbad] = seq_id ? json_integer_value(seq_id) : -1;
		g->bad[g->nbad++] = lbt_strdupf("%s: %s", bad->cls, bad->msg);
	}
}

static void got_free(struct got *g)
{
	for (int i = 0; i < g->n; i++)
		json_decref(g->msgs[i]);
	for (int i = 0; i < g->nbad; i++)
		free(g->bad[i]);
}

static int feed(struct lb_rpc_reader *r, const char *s, struct got *g)
{
	struct lb_err *err = NULL;
	int rc = lb_rpc_reader_feed(r, s, strlen(s), collect, g, &err);
	lb_err_free(&err);
	return rc;
}

// A message of about n bytes: {"seq_id": 1, "action": "box_exec", "data": {"cmd": "xxx…"}}.
static char *big_message(size_t n, const char *fill)
{
	size_t f = strlen(fill), k = 0;
	char *cmd = malloc(n + 8);
	while (k + f <= n)
		memcpy(cmd + k, fill, f), k += f;
	cmd[k] = '\0';
	json_t *j =
	    json_pack("{s:i, s:s, s:{s:s}}", "seq_id", 1, "action", "box_exec", "data", "cmd", cmd);
	free(cmd);
	char *s = json_dumps(j, 0);
	json_decref(j);
	return s;
}

Test(frame, small_message_is_one_line)
{
	char *out;
	size_t len;
	const char *m = "{\"seq_id\": 1}";
	cr_assert_eq(lb_rpc_frame(m, strlen(m), &out, &len, NULL), 0);
	cr_assert_str_eq(out, "{\"seq_id\": 1}\n");
	free(out);
}

static void check_roundtrip(const char *fill)
{
	char *m = big_message(200000, fill), *out;
	size_t len;
	cr_assert_eq(lb_rpc_frame(m, strlen(m), &out, &len, NULL), 0);
	// every line under Python's 64 KiB limit, the first a chunk_start with the total
	int lines = 0;
	for (char *p = out, *nl; (nl = strchr(p, '\n')); p = nl + 1, lines++) {
		cr_assert_lt(nl - p, 65536, "line %d is %td bytes", lines, nl - p);
		if (lines == 0)
			cr_assert_not_null(strstr(p, "\"chunk_start\""));
	}
	cr_assert_gt(lines, 12);
	struct lb_rpc_reader r = {0};
	struct got g = {0};
	cr_assert_eq(feed(&r, out, &g), 0);
	cr_assert_eq(g.n, 1);
	char *back = json_dumps(g.msgs[0], 0);
	cr_assert_str_eq(back, m, "reassembled message differs");
	free(back);
	got_free(&g);
	lb_rpc_reader_free(&r);
	free(out);
	free(m);
}

Test(frame, large_message_chunks_and_reassembles)
{
	check_roundtrip("ab\"\\c");
}

Test(frame, chunks_cut_on_utf8_boundaries)
{
	// json_dumps without ENSURE_ASCII keeps the UTF-8: 3-byte characters straddle 16 KiB
	check_roundtrip("\xe2\x82\xac");
	const char *text = "\xe2\x82\xac\xe2\x82\xac";
	char *m = malloc(20001);
	for (int i = 0; i < 20000; i++)
		m[i] = text[i % 3];
	m[20000] = '\0';
	char *out;
	size_t len;
	cr_assert_eq(lb_rpc_frame(m, 19998, &out, &len, NULL), 0);
	json_t *first = json_loads(strchr(out, '\n') + 1, JSON_DISABLE_EOF_CHECK, NULL);
	cr_assert_not_null(first);
	cr_assert_eq(json_string_length(json_object_get(first, "data")) % 3, 0,
		     "piece cut inside a character");
	cr_assert_leq(json_string_length(json_object_get(first, "data")), 16384);
	json_decref(first);
	free(out);
	free(m);
}

Test(frame, reader_skips_noise_and_splits_lines_anywhere)
{
	struct lb_rpc_reader r = {0};
	struct got g = {0};
	const char *s = "hello\n\n  {\"a\": 1}  \n{not json}\n[1]\n{\"b\"";
	cr_assert_eq(feed(&r, s, &g), 0);
	cr_assert_eq(feed(&r, ": 2}\n", &g), 0);
	cr_assert_eq(g.n, 2);
	cr_assert_eq(json_integer_value(json_object_get(g.msgs[1], "b")), 2);
	got_free(&g);
	lb_rpc_reader_free(&r);
}

static int chunked(const char *lines)
{
	struct lb_rpc_reader r = {0};
	struct got g = {0};
	int rc = feed(&r, lines, &g);
	got_free(&g);
	lb_rpc_reader_free(&r);
	return rc;
}

Test(frame, chunk_protocol_violations_close)
{
	cr_assert_eq(chunked("{\"type\": \"chunk_start\", \"total_size\": 16777217}\n"), -1);
	cr_assert_eq(chunked("{\"type\": \"chunk_start\", \"total_size\": -1}\n"), -1);
	cr_assert_eq(chunked("{\"type\": \"chunk_data\", \"data\": \"x\", \"offset\": 0}\n"), -1);
	cr_assert_eq(chunked("{\"type\": \"chunk_start\", \"total_size\": 4}\n"
			     "{\"type\": \"chunk_data\", \"data\": \"{}\", \"offset\": 1}\n"),
		     -1, "offset must be the bytes received so far");
	cr_assert_eq(chunked("{\"type\": \"chunk_start\", \"total_size\": 2}\n"
			     "{\"type\": \"chunk_data\", \"data\": \"{}{}\", \"offset\": 0}\n"),
		     -1, "overflow");
	cr_assert_eq(chunked("{\"type\": \"chunk_start\", \"total_size\": 4}\n"
			     "{\"type\": \"chunk_data\", \"data\": \"{}\", \"offset\": 0}\n"
			     "{\"type\": \"chunk_end\"}\n"),
		     -1, "ended early");
	cr_assert_eq(chunked("{\"type\": \"chunk_end\"}\n"), -1);
}

Test(frame, too_many_fragments_close)
{
	struct lb_rpc_reader r = {0};
	struct got g = {0};
	cr_assert_eq(feed(&r, "{\"type\": \"chunk_start\", \"total_size\": 5000}\n", &g), 0);
	int rc = 0;
	for (int i = 0; i < 4097 && rc == 0; i++) {
		char line[128];
		snprintf(line, sizeof(line),
			 "{\"type\": \"chunk_data\", \"data\": \"x\", \"offset\": %d}\n", i);
		rc = feed(&r, line, &g);
	}
	cr_assert_eq(rc, -1);
	lb_rpc_reader_free(&r);
}

Test(frame, message_inside_a_chunked_one_is_dropped)
{
	struct lb_rpc_reader r = {0};
	struct got g = {0};
	cr_assert_eq(feed(&r,
			  "{\"type\": \"chunk_start\", \"total_size\": 8}\n"
			  "{\"seq_id\": 5}\n"
			  "{\"type\": \"chunk_data\", \"data\": \"{\\\"a\\\": \", \"offset\": 0}\n"
			  "{\"type\": \"chunk_data\", \"data\": \"1}\", \"offset\": 6}\n"
			  "{\"type\": \"chunk_end\"}\n",
			  &g),
		     0);
	cr_assert_eq(g.n, 1);
	cr_assert_eq(json_integer_value(json_object_get(g.msgs[0], "a")), 1);
	got_free(&g);
	lb_rpc_reader_free(&r);
}

// Lines LangBot's Python reader decodes and jansson does not: handed on, not dropped.
Test(frame, undecodable_lines_are_handed_on_with_their_seq_id)
{
	struct lb_rpc_reader r = {0};
	struct got g = {0};
	cr_assert_eq(feed(&r,
			  "not json\n"
			  "{\"seq_id\": 4, \"action\": \"x\", \"data\": {\"v\": NaN}}\n"
			  "{broken}\n"
			  "{\"seq_id\": 5, \"data\": {\"k\\u0000\": 1}}\n"
			  "{\"seq_id\": 6, \"action\": \"x\", \"data\": {\"n\": 1e999}}\n",
			  &g),
		     0);
	cr_assert_eq(g.nbad, 3);
	cr_assert_eq(g.bad_seq[0], 4);
	cr_assert(strstr(g.bad[0], "ValueError: malformed request: invalid token near 'NaN'"), "%s",
		  g.bad[0]);
	cr_assert_eq(g.bad_seq[1], -1, "nothing to recover from {broken}");
	cr_assert_eq(g.bad_seq[2], 5);
	cr_assert(strstr(g.bad[2], "BoxValidationError: an object key must not contain NUL"), "%s",
		  g.bad[2]);
	cr_assert_eq(g.n, 1, "1e999 is a real that overflows: clamped, delivered");
	cr_assert_float_eq(
	    json_real_value(json_object_get(json_object_get(g.msgs[0], "data"), "n")),
	    1.7976931348623157e308, 1e292);
	got_free(&g);
	lb_rpc_reader_free(&r);
}

static json_t *decoded(const char *text)
{
	json_t *j = NULL;
	struct lb_err *err = NULL;
	cr_assert_eq(lb_rpc_decode(text, strlen(text), &j, &err), 0, "%s: %s", text,
		     err ? err->msg : "");
	return j;
}

Test(decode, integers_beyond_int64_are_clamped)
{
	json_t *j = decoded("{\"a\": 99999999999999999999999, \"b\": -99999999999999999999999, "
			    "\"c\": 9223372036854775807, \"d\": -9223372036854775808, "
			    "\"e\": 9223372036854775808, \"s\": \"99999999999999999999999\", "
			    "\"f\": [1, 0.5, -12e3]}");
	cr_assert_eq(json_integer_value(json_object_get(j, "a")), INT64_MAX);
	cr_assert_eq(json_integer_value(json_object_get(j, "b")), INT64_MIN);
	cr_assert_eq(json_integer_value(json_object_get(j, "c")), INT64_MAX);
	cr_assert_eq(json_integer_value(json_object_get(j, "d")), INT64_MIN);
	cr_assert_eq(json_integer_value(json_object_get(j, "e")), INT64_MAX);
	cr_assert_str_eq(json_string_value(json_object_get(j, "s")), "99999999999999999999999",
			 "strings are left alone");
	json_t *f = json_object_get(j, "f");
	cr_assert_eq(json_integer_value(json_array_get(f, 0)), 1);
	cr_assert_float_eq(json_real_value(json_array_get(f, 2)), -12000.0, 1e-9);
	json_decref(j);
}

// Only a token of JSON's number grammar is clamped: "0001" or "1e5-" stay malformed, as for
// Python (tests/fuzz/regressions/rpc/decode-leading-zeros was read as seq_id INT64_MAX).
Test(decode, only_json_numbers_are_clamped)
{
	static const char *const bad[] = {"{\"seq_id\": 000000000001617034348}",
					  "{\"a\": 99999999999999999999-}",
					  "{\"a\": -99999999999999999999e}", "{\"a\": 1e99999.5}"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *j = NULL;
		struct lb_err *err = NULL;
		cr_assert_eq(lb_rpc_decode(bad[i], strlen(bad[i]), &j, &err), -1, "%s", bad[i]);
		cr_assert_str_eq(err->cls, "ValueError", "%s", bad[i]);
		lb_err_free(&err);
	}
}

// A real is clamped by its value, however long its text: 1.000... (600 digits) beside a
// "\u0000" (which sends the text down the lenient path) is 1.0, not 1.8e308.
Test(decode, long_reals_keep_their_value)
{
	char text[2048];
	int n = snprintf(text, sizeof(text), "{\"s\": \"\\u0000\", \"r\": 1.");
	memset(text + n, '0', 600);
	strcpy(text + n + 600, ", \"big\": 1e999, \"long_big\": 1");
	n += 600 + (int)strlen(text + n + 600);
	memset(text + n, '0', 600);
	strcpy(text + n + 600, "}");
	json_t *j = decoded(text);
	cr_assert_eq(json_real_value(json_object_get(j, "r")), 1.0);
	cr_assert_eq(json_real_value(json_object_get(j, "big")), DBL_MAX);
	cr_assert_eq(json_integer_value(json_object_get(j, "long_big")), INT64_MAX);
	json_decref(j);
}

Test(decode, nul_in_a_string_is_kept_then_refused_with_its_path)
{
	json_t *j = decoded("{\"seq_id\": 3, \"data\": {\"env\": {\"K\": \"a\\u0000b\"}}}");
	struct lb_err *err = NULL;
	cr_assert_eq(lb_rpc_check_nul(j, &err), -1);
	cr_assert_str_eq(err->cls, "BoxValidationError");
	cr_assert_str_eq(err->msg, "data.env.K: a string must not contain NUL (\\u0000)");
	lb_err_free(&err);
	json_decref(j);
	j = decoded("{\"data\": {\"args\": [\"x\", \"\\u0000\"]}}");
	cr_assert_eq(lb_rpc_check_nul(j, &err), -1);
	cr_assert_str_eq(err->msg, "data.args.1: a string must not contain NUL (\\u0000)");
	lb_err_free(&err);
	json_decref(j);
	j = decoded("{\"data\": {\"cmd\": \"echo \\u00e9\"}}");
	cr_assert_eq(lb_rpc_check_nul(j, &err), 0);
	json_decref(j);
}

Test(decode, what_is_not_an_object_or_not_json_is_a_value_error)
{
	static const char *const bad[] = {"[1, 2]", "42", "\"x\"", "{broken", "{\"a\": NaN}", ""};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *j = NULL;
		struct lb_err *err = NULL;
		cr_assert_eq(lb_rpc_decode(bad[i], strlen(bad[i]), &j, &err), -1, "%s", bad[i]);
		cr_assert_null(j);
		cr_assert_str_eq(err->cls, "ValueError", "%s", bad[i]);
		lb_err_free(&err);
	}
}

static long long recovered(const char *text)
{
	json_t *s = lb_rpc_recover_seq_id(text, strlen(text));
	long long v = s ? json_integer_value(s) : -1;
	json_decref(s);
	return v;
}

Test(decode, seq_id_of_an_undecodable_text)
{
	cr_assert_eq(recovered("{\"seq_id\": 12, \"action\": NaN"), 12);
	cr_assert_eq(
	    recovered("{\"action\": \"x\", \"data\": {\"v\": \"}\\\"{\"}, \"seq_id\" : -3 ,"), -3,
	    "braces and quotes inside strings do not count");
	cr_assert_eq(recovered("{\"data\": {\"seq_id\": 9}, \"v\": NaN}"), -1,
		     "only the top level's seq_id");
	cr_assert_eq(recovered("{\"action\": \"seq_id\", \"x\": 4, NaN}"), -1,
		     "a value \"seq_id\" is not the key");
	cr_assert_eq(recovered("{\"seq_id\": 7, \"code\": 0, NaN}"), -1, "a response");
	cr_assert_eq(recovered("{\"seq_id\": \"7\", NaN}"), -1);
	cr_assert_eq(recovered("{\"seq_id\": 99999999999999999999999999, NaN}"), -1);
	cr_assert_eq(recovered("{\"seq_id\": 1.5, NaN}"), -1);
}

// A reply carries the request's strings; cut or not UTF-8, it must still be sent.
Test(message, error_text_that_is_not_utf8_is_still_sent)
{
	json_t *e = lb_rpc_reply_error(NULL, "ValueError", "Action \xe2\x82 not found");
	cr_assert_not_null(e);
	cr_assert_str_eq(json_string_value(json_object_get(e, "message")),
			 "ValueError: Action \xef\xbf\xbd not found");
	json_decref(e);
}

Test(message, shapes_and_python_separators)
{
	json_t *seq = json_integer(7);
	json_t *ok = lb_rpc_reply_ok(seq, json_pack("{s:[i,i]}", "x", 1, 2));
	char *s = lb_rpc_dumps(ok);
	cr_assert_str_eq(s, "{\"seq_id\": 7, \"code\": 0, \"message\": \"success\", \"data\": "
			    "{\"x\": [1, 2]}, \"chunk_status\": \"continue\"}");
	free(s);
	json_decref(ok);
	json_t *e = lb_rpc_reply_error(seq, "BoxSessionNotFoundError", "session x not found");
	s = lb_rpc_dumps(e);
	cr_assert_str_eq(s, "{\"seq_id\": 7, \"code\": 1, \"message\": \"BoxSessionNotFoundError: "
			    "session x not found\", \"data\": {}, \"chunk_status\": \"continue\"}");
	free(s);
	json_decref(e);
	json_t *u = json_pack("{s:s}", "t", "\xc3\xa9");
	s = lb_rpc_dumps(u);
	cr_assert_str_eq(s, "{\"t\": \"\\u00e9\"}", "ASCII only, as json.dumps");
	free(s);
	json_decref(u);
	json_decref(seq);
}

Test(message, long_error_text_is_cut_at_4096_characters)
{
	char *text = malloc(5001);
	memset(text, 'e', 5000);
	text[5000] = '\0';
	json_t *e = lb_rpc_reply_error(NULL, "BoxError", text);
	const char *m = json_string_value(json_object_get(e, "message"));
	cr_assert_eq(strlen(m),
		     strlen("BoxError: ") + 4096 + strlen("... [protocol error truncated]"));
	cr_assert_str_eq(m + strlen(m) - 30, "... [protocol error truncated]");
	json_decref(e);
	free(text);
}

Test(tenancy, physical_ids_as_the_sdk_makes_them)
{
	struct lb_rpc_context c;
	char *id = NULL;
	json_t *ctx = json_pack("{s:s, s:s, s:i}", "instance_uuid", "instance-a", "workspace_uuid",
				"workspace-a", "placement_generation", 1);
	cr_assert_eq(lb_rpc_context_parse(ctx, &c, NULL), 0);
	cr_assert_str_eq(c.prefix, "ws-695136eeae1cb9b6af4a8226-g1");
	cr_assert_eq(lb_rpc_physical_id(&c, "person_test user!", &id, NULL), 0);
	cr_assert_str_eq(id, "ws-695136eeae1cb9b6af4a8226-g1-person_test-user");
	free(id);
	cr_assert_eq(lb_rpc_physical_id(&c, "a-!b..c", &id, NULL), 0);
	cr_assert_str_eq(id, "ws-695136eeae1cb9b6af4a8226-g1-a--b..c");
	free(id);
	struct lb_err *err = NULL;
	cr_assert_eq(lb_rpc_physical_id(&c, " !!", &id, &err), -1);
	cr_assert_str_eq(err->cls, "ValueError");
	cr_assert_str_eq(err->msg, "Box session_id must contain a valid character");
	lb_err_free(&err);
	json_decref(ctx);
}

Test(tenancy, missing_context_is_a_permission_error)
{
	struct lb_rpc_context c;
	struct lb_err *err = NULL;
	cr_assert_eq(lb_rpc_context_parse(NULL, &c, &err), -1);
	cr_assert_str_eq(err->cls, "PermissionError");
	cr_assert_str_eq(err->msg, "Box tenant action requires a trusted Workspace context");
	lb_err_free(&err);
}

Test(tenancy, replies_are_mapped_back_recursively)
{
	json_t *j = json_pack("{s:s, s:[{s:s}, {s:s}], s:{s:{s:s}}}", "session_id", "ws-x-g1-a",
			      "sessions", "session_id", "ws-x-g1-b", "session_id", "other-c",
			      "managed_processes", "p", "session_id", "ws-x-g1-d");
	lb_rpc_map_back(j, "ws-x-g1");
	char *s = json_dumps(j, JSON_COMPACT);
	cr_assert_str_eq(s, "{\"session_id\":\"a\",\"sessions\":[{\"session_id\":\"b\"},"
			    "{\"session_id\":\"other-c\"}],\"managed_processes\":{\"p\":"
			    "{\"session_id\":\"d\"}}}");
	free(s);
	json_decref(j);
}
