/*
 * Text a LangBot client sees byte for byte: captured command output (spec §4.1), the
 * 4000-character truncation of BoxService (§5.5), shlex.quote and pydantic's datetimes (§1.9).
 * The managed-process stderr preview (§3.6) lives in text_preview.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lbbox/box/text.h"
#include "lbbox/base/cleanup.h"
#include "text_internal.h"

#define CAPTURE_INITIAL (64 * 1024)

/* Allocation for n kept bytes: 64 KiB doubled as needed, at most the cap. The struct keeps no
 * capacity, so the size is always recomputed from len this way. */
static size_t capture_size(size_t n)
{
	size_t size = CAPTURE_INITIAL;

	while (size < n)
		size *= 2;
	return size < LB_BOX_CAPTURE_MAX ? size : LB_BOX_CAPTURE_MAX;
}

int lb_box_capture_add(struct lb_box_capture *c, const void *data, size_t n, struct lb_err **err)
{
	size_t room = LB_BOX_CAPTURE_MAX - c->len;
	size_t keep = n < room ? n : room;

	c->total += n; /* everything counts, for the "bytes discarded" notice */
	if (!keep)
		return 0;
	if (!c->buf || capture_size(c->len + keep) > capture_size(c->len)) {
		char *buf = realloc(c->buf, capture_size(c->len + keep));
		if (!buf)
			return lb_err_set(err, ENOMEM, "capture output");
		c->buf = buf;
	}
	memcpy(c->buf + c->len, data, keep);
	c->len += keep;
	return 0;
}

int lb_box_capture_text_len(const struct lb_box_capture *c, char **out, size_t *out_len,
			    struct lb_err **err)
{
	size_t dlen = 0, a, b;
	_cleanup_free_ char *decoded = lb_box_utf8_replace(c->buf ? c->buf : "", c->len, &dlen);
	_cleanup_free_ char *text = NULL;
	char notice[128] = "";

	if (!decoded)
		return lb_err_set(err, ENOMEM, "decode output");
	lb_box_py_strip(decoded, dlen, true, &a, &b);
	if (c->total > LB_BOX_CAPTURE_MAX)
		snprintf(notice, sizeof(notice),
			 "\n... [raw output clipped at %d bytes, %" PRIu64 " bytes discarded]",
			 LB_BOX_CAPTURE_MAX, c->total - LB_BOX_CAPTURE_MAX);
	size_t nlen = strlen(notice);
	text = malloc(b - a + nlen + 1);
	if (!text)
		return lb_err_set(err, ENOMEM, "decode output");
	memcpy(text, decoded + a, b - a);
	memcpy(text + (b - a), notice, nlen + 1);
	*out_len = b - a + nlen;
	*out = LB_TAKE_PTR(text);
	return 0;
}

int lb_box_capture_text(const struct lb_box_capture *c, char **out, struct lb_err **err)
{
	size_t len;

	return lb_box_capture_text_len(c, out, &len, err);
}

void lb_box_capture_free(struct lb_box_capture *c)
{
	free(c->buf);
	c->buf = NULL;
	c->len = 0;
	c->total = 0;
}

static char *memdup_z(const char *s, size_t n)
{
	char *d = malloc(n + 1);

	if (d) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

/* text[:head] + notice + text[-tail:], cut to limit code points (BoxService._truncate). */
static int truncate_join(const char *text, size_t len, size_t head, const char *notice, size_t tail,
			 size_t limit, char **out, size_t *out_len)
{
	size_t hb = lb_box_utf8_offset(text, len, head);
	size_t chars = lb_box_utf8_count(text, len);
	size_t tb = tail ? len - lb_box_utf8_offset(text, len, chars - tail) : 0;
	size_t nlen = strlen(notice);
	char *s = malloc(hb + nlen + tb + 1);

	if (!s)
		return -1;
	memcpy(s, text, hb);
	memcpy(s + hb, notice, nlen);
	memcpy(s + hb + nlen, text + len - tb, tb);
	*out_len = lb_box_utf8_offset(s, hb + nlen + tb, limit);
	s[*out_len] = '\0';
	*out = s;
	return 0;
}

int lb_box_truncate_len(const char *text, size_t len, size_t limit_chars, char **out,
			size_t *out_len, bool *truncated, struct lb_err **err)
{
	size_t chars = lb_box_utf8_count(text, len);
	size_t head = 0, tail = 0;
	char notice[96] = "";

	*truncated = chars > limit_chars;
	if (!*truncated || limit_chars == 0) {
		size_t keep = *truncated ? 0 : len;
		*out = memdup_z(text, keep); /* not strndup: the text may hold NULs */
		*out_len = keep;
		return *out ? 0 : lb_err_set(err, ENOMEM, "truncate output");
	}
	/* the notice's own length depends on the omitted count: iterate to a fixed point, at
	 * most 4 rounds, exactly like LangBot (whose reported count can be stale) */
	for (int round = 0; round < 4; round++) {
		size_t omitted = chars > head + tail ? chars - head - tail : 0;
		snprintf(notice, sizeof(notice), "\n\n... [%zu characters truncated] ...\n\n",
			 omitted);
		size_t nlen = strlen(notice);
		if (nlen >= limit_chars) {
			*out = strndup(notice, limit_chars);
			*out_len = limit_chars;
			return *out ? 0 : lb_err_set(err, ENOMEM, "truncate output");
		}
		size_t available = limit_chars - nlen;
		size_t new_head =
		    (size_t)((double)available * 0.6); /* Python int(available * 0.6) */
		size_t new_tail = available - new_head;
		if (new_head == head && new_tail == tail)
			break;
		head = new_head;
		tail = new_tail;
	}
	if (truncate_join(text, len, head, notice, tail, limit_chars, out, out_len) < 0)
		return lb_err_set(err, ENOMEM, "truncate output");
	return 0;
}

int lb_box_truncate(const char *text, size_t limit_chars, char **out, bool *truncated,
		    struct lb_err **err)
{
	size_t len;

	return lb_box_truncate_len(text, strlen(text), limit_chars, out, &len, truncated, err);
}

/* shlex's _find_unsafe: [^\w@%+=:,./-] with re.ASCII. */
static bool shell_safe(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("_@%+=:,./-", c));
}

char *lb_box_shell_quote(const char *s)
{
	size_t len = strlen(s), quotes = 0;
	bool safe = len > 0;

	for (size_t i = 0; i < len; i++) {
		safe = safe && shell_safe((unsigned char)s[i]);
		quotes += s[i] == '\'';
	}
	if (safe)
		return strdup(s);
	/* each ' becomes '"'"' (4 more bytes), plus the two outer quotes */
	char *q = malloc(len + quotes * 4 + 3), *o = q;
	if (!q)
		return NULL;
	*o++ = '\'';
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '\'') {
			memcpy(o, "'\"'\"'", 5);
			o += 5;
		} else {
			*o++ = s[i];
		}
	}
	*o++ = '\'';
	*o = '\0';
	return q;
}

void lb_box_format_time(uint64_t unix_ns, char *buf, size_t len)
{
	time_t secs = (time_t)(unix_ns / 1000000000ULL);
	unsigned usec = (unsigned)(unix_ns % 1000000000ULL / 1000);
	struct tm tm;

	gmtime_r(&secs, &tm);
	/* pydantic: six fraction digits when the microseconds are non-zero, none otherwise */
	if (usec)
		snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%06uZ", tm.tm_year + 1900,
			 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, usec);
	else
		snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900,
			 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

char *lb_box_shell_join(char *const *argv)
{
	char *s = strdup("");
	for (size_t i = 0; s && argv && argv[i]; i++) {
		char *q = lb_box_shell_quote(argv[i]), *t = NULL;
		if (!q || asprintf(&t, "%s%s%s", s, i ? " " : "", q) < 0)
			t = NULL;
		free(q);
		free(s);
		s = t;
	}
	return s;
}
