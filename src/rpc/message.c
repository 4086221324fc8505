/* Request / response shapes and error texts (§6.4, §6.5), JSON written as Python writes it. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbbox/box/text.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/rpc/rpc.h"

#define ERROR_TEXT_MAX 4096 /* characters */

char *lb_rpc_dumps(const json_t *j)
{
	/* no JSON_COMPACT: ", " and ": " separators; ASCII only, like json.dumps */
	char *s = json_dumps(j, JSON_ENSURE_ASCII | JSON_ENCODE_ANY);
	/* and Python's lowercase \u escapes (jansson writes uppercase hex) */
	for (char *p = s; p && *p; p++) {
		if (*p != '\\')
			continue;
		if (p[1] == 'u')
			for (int i = 2; i < 6 && p[i]; i++)
				p[i] = (char)tolower((unsigned char)p[i]);
		if (*++p == '\0')
			break;
	}
	return s;
}

json_t *lb_rpc_reply_ok(json_t *seq_id, json_t *data)
{
	return json_pack("{s:O?, s:i, s:s, s:o, s:s}", "seq_id", seq_id, "code", 0, "message",
			 "success", "data", data ? data : json_object(), "chunk_status",
			 "continue");
}

/* Byte length of the first max code points of s. */
static size_t utf8_prefix(const char *s, size_t max, bool *cut)
{
	size_t i = 0, chars = 0;
	while (s[i]) {
		if (((unsigned char)s[i] & 0xC0) != 0x80 && chars++ == max) {
			*cut = true;
			return i;
		}
		i++;
	}
	*cut = false;
	return i;
}

json_t *lb_rpc_reply_error(json_t *seq_id, const char *cls, const char *text)
{
	bool cut;
	char *msg = NULL;
	size_t len;
	/* a text that is not UTF-8 could not be sent at all: the request would go unanswered */
	_cleanup_free_ char *valid = lb_box_utf8_replace(text, strlen(text), &len);
	text = valid ? valid : "(unprintable error text)";
	size_t n = utf8_prefix(text, ERROR_TEXT_MAX, &cut);
	if (asprintf(&msg, "%s%s%.*s%s", cls ? cls : "", cls ? ": " : "", (int)n, text,
		     cut ? "... [protocol error truncated]" : "") < 0)
		msg = NULL;
	json_t *r =
	    json_pack("{s:O?, s:i, s:s, s:{}, s:s}", "seq_id", seq_id, "code", 1, "message",
		      msg ? msg : "BoxError: out of memory", "data", "chunk_status", "continue");
	free(msg);
	return r;
}

json_t *lb_rpc_reply_err(json_t *seq_id, const struct lb_err *e, const char *cls_default)
{
	return lb_rpc_reply_error(seq_id, e && e->cls ? e->cls : cls_default,
				  e && e->msg ? e->msg : "unknown error");
}
