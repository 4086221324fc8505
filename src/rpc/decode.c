/*
 * Decoding a received message (§6.4) as LangBot's runtime does with Python's json.loads, which
 * reads some texts that jansson refuses: integers of any size, reals that overflow (to inf),
 * and "\u0000" in strings. Those are decoded too -- numbers clamped to the nearest value jansson
 * holds, so the validators refuse them with their own message -- and a NUL in a string is
 * refused with the path of the string, so such a request is answered rather than dropped. A
 * text that cannot be decoded at all still gives up its seq_id where a lenient scan finds one.
 */
#include <errno.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbbox/box/spec.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/rpc/rpc.h"
#include "lbbox/base/util.h"

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* The end of the string literal starting at text[i] (its opening quote), or len. */
static size_t skip_string(const char *text, size_t len, size_t i)
{
	for (i++; i < len && text[i] != '"'; i++)
		if (text[i] == '\\')
			i++;
	return i < len ? i + 1 : len;
}

static size_t skip_digits(const char *s, size_t n, size_t i)
{
	while (i < n && is_digit(s[i]))
		i++;
	return i;
}

/* The length of the JSON number (RFC 8259's grammar) at s, within n bytes; 0 when none is. */
static size_t number_len(const char *s, size_t n)
{
	size_t i = s[0] == '-';
	if (i < n && s[i] == '0')
		i++;
	else if (i < n && is_digit(s[i]))
		i = skip_digits(s, n, i);
	else
		return 0;
	if (i < n && s[i] == '.') {
		if (i + 1 >= n || !is_digit(s[i + 1]))
			return 0;
		i = skip_digits(s, n, i + 1);
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i += i + 1 < n && (s[i + 1] == '+' || s[i + 1] == '-');
		if (i + 1 >= n || !is_digit(s[i + 1]))
			return 0;
		i = skip_digits(s, n, i + 1);
	}
	return i;
}

/*
 * The replacement of a number token jansson cannot hold, or NULL when it can. Only a token that
 * is one JSON number is replaced: anything else ("0001", "1e5-") stays for jansson to refuse,
 * as Python does. A real's value decides, however long its text.
 */
static const char *clamped(const char *tok, size_t n)
{
	static const char imax[] = "9223372036854775807", imin[] = "9223372036854775808";
	if (number_len(tok, n) != n)
		return NULL;
	bool neg = tok[0] == '-';
	if (memchr(tok, '.', n) || memchr(tok, 'e', n) || memchr(tok, 'E', n)) {
		_cleanup_free_ char *buf = strndup(tok, n);
		if (!buf)
			return NULL; /* then jansson refuses it: answered, not misread */
		errno = 0;
		double d = strtod(buf, NULL);
		bool over = errno == ERANGE && (d > DBL_MAX || d < -DBL_MAX);
		return !over ? NULL : neg ? "-1.7976931348623157e308" : "1.7976931348623157e308";
	}
	const char *digits = tok + neg, *lim = neg ? imin : imax;
	size_t nd = n - neg, nl = sizeof(imax) - 1;
	if (nd < nl || (nd == nl && memcmp(digits, lim, nl) <= 0))
		return NULL;
	return neg ? "-9223372036854775808" : "9223372036854775807";
}

struct buf {
	char *p;
	size_t len, cap;
};

static int buf_add(struct buf *b, const char *s, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = (b->len + n) * 2;
		char *p = realloc(b->p, cap);
		if (!p)
			return -1;
		b->p = p, b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	return 0;
}

/* text with its out-of-range numbers clamped (see above); malloc'ed, NULL without memory. */
static char *clamp_numbers(const char *text, size_t len, size_t *out_len)
{
	struct buf b = {0};
	for (size_t i = 0; i < len;) {
		size_t j = i + 1;
		if (text[i] == '"')
			j = skip_string(text, len, i);
		else if (text[i] == '-' || is_digit(text[i]))
			while (j < len && text[j] &&
			       (is_digit(text[j]) || strchr("+-.eE", text[j])))
				j++;
		const char *c = text[i] != '"' && j > i + 1 ? clamped(text + i, j - i) : NULL;
		if (buf_add(&b, c ? c : text + i, c ? strlen(c) : j - i) < 0) {
			free(b.p);
			return NULL;
		}
		i = j;
	}
	*out_len = b.len;
	return b.p ? b.p : calloc(1, 1);
}

static int undecodable(const json_error_t *je, struct lb_err **err)
{
	/* Python reads a NUL in a key: refused like a NUL in a value */
	if (json_error_code(je) == json_error_null_byte_in_key)
		return lb_err_box(
		    err, LB_BOX_EVALIDATION,
		    "an object key must not contain NUL (\\u0000) (line %d, column %d)", je->line,
		    je->column);
	_cleanup_free_ char *why = lb_escape_ctl(je->text);
	return lb_err_box(err, "ValueError", "malformed request: %s (line %d, column %d)",
			  why ? why : "invalid JSON", je->line, je->column);
}

int lb_rpc_decode(const char *text, size_t len, json_t **out, struct lb_err **err)
{
	json_error_t je;
	json_t *j = json_loadb(text, len, 0, &je);
	if (!j) {
		size_t n = 0;
		_cleanup_free_ char *clamp = clamp_numbers(text, len, &n);
		json_error_t je2;
		j = clamp ? json_loadb(clamp, n, JSON_ALLOW_NUL, &je2) : NULL;
		if (!j && clamp)
			je = je2; /* why the lenient reading failed: the text's real fault */
	}
	if (!j)
		return undecodable(&je, err);
	if (!json_is_object(j)) {
		json_decref(j);
		return lb_err_box(err, "ValueError", "not a JSON object");
	}
	*out = j;
	return 0;
}

/* ---- NUL in strings ---------------------------------------------------------------------- */

static int nul_at(const char *path, const char *what, struct lb_err **err)
{
	_cleanup_free_ char *p = lb_escape_ctl(path);
	return lb_err_box(err, LB_BOX_EVALIDATION, "%s: %s must not contain NUL (\\u0000)",
			  p ? p : "?", what);
}

static int check_nul(const json_t *j, char *path, size_t len, size_t at, struct lb_err **err)
{
	const char *key;
	json_t *v;
	size_t i;
	if (json_is_string(j))
		return strlen(json_string_value(j)) != json_string_length(j)
			   ? nul_at(path, "a string", err)
			   : 0;
	json_object_foreach((json_t *)j, key, v)
	{
		snprintf(path + at, len - at, "%s%s", at ? "." : "", key);
		if (check_nul(v, path, len, strlen(path), err) < 0)
			return -1;
	}
	json_array_foreach(j, i, v)
	{
		snprintf(path + at, len - at, "%s%zu", at ? "." : "", i);
		if (check_nul(v, path, len, strlen(path), err) < 0)
			return -1;
	}
	path[at] = '\0';
	return 0;
}

int lb_rpc_check_nul(const json_t *msg, struct lb_err **err)
{
	char path[256] = "";
	return check_nul(msg, path, sizeof(path), 0, err);
}

/* ---- seq_id of an undecodable text -------------------------------------------------------- */

static size_t skip_space(const char *text, size_t len, size_t i)
{
	while (i < len && text[i] && strchr(" \t\r\n", text[i]))
		i++;
	return i;
}

/* The string at text[i], ending at end, is the key "name" (a ':' follows)? */
static bool key_is(const char *text, size_t len, size_t i, size_t end, const char *name)
{
	size_t n = strlen(name);
	end = skip_space(text, len, end);
	return i + n + 2 <= len && !memcmp(text + i + 1, name, n) && text[i + n + 1] == '"' &&
	       end < len && text[end] == ':';
}

/* The integer after the ':' that follows a key ending at text[i]; NULL when there is none. */
static json_t *int_after(const char *text, size_t len, size_t i)
{
	i = skip_space(text, len, i);
	if (i >= len || text[i] != ':')
		return NULL;
	i = skip_space(text, len, i + 1);
	char buf[24];
	size_t n = 0;
	while (i + n < len && n < sizeof(buf) - 1 &&
	       (is_digit(text[i + n]) || (!n && text[i] == '-')))
		n++;
	memcpy(buf, text + i, n);
	buf[n] = '\0';
	char *end = buf;
	errno = 0;
	long long v = n ? strtoll(buf, &end, 10) : 0;
	char next = i + n < len ? text[i + n] : ' '; /* an integer, whole: not 1.5, not cut */
	bool whole = !is_digit(next) && next != '.' && next != 'e' && next != 'E';
	return n && !errno && !*end && whole ? json_integer(v) : NULL;
}

json_t *lb_rpc_recover_seq_id(const char *text, size_t len)
{
	json_t *seq = NULL;
	int depth = 0;
	for (size_t i = 0; i < len; i++) {
		char c = text[i];
		if (c == '{' || c == '[')
			depth++;
		else if (c == '}' || c == ']')
			depth--;
		if (c != '"')
			continue;
		size_t end = skip_string(text, len, i);
		if (depth == 1 && key_is(text, len, i, end, "code")) {
			json_decref(seq); /* a response: never answered */
			return NULL;
		}
		if (depth == 1 && !seq && key_is(text, len, i, end, "seq_id"))
			seq = int_after(text, len, end);
		i = end - 1;
	}
	return seq;
}
