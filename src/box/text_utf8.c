/*
 * UTF-8 the way CPython reads it: bytes.decode("utf-8", "replace") replaces each maximal
 * subpart of an ill-formed sequence with one U+FFFD (surrogates, overlongs and values above
 * U+10FFFF are ill-formed), and str.isspace() / str.strip() use Unicode White_Space plus the
 * four ASCII separators U+001C..U+001F.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "text_internal.h"

/*
 * Length of the valid sequence at p (> 0, *cp set), or 0 with *bad = bytes of the maximal
 * ill-formed subpart (>= 1). The second byte's range excludes overlongs (E0, F0), surrogates
 * (ED) and code points above U+10FFFF (F4), as CPython's decoder does.
 */
static size_t utf8_seq(const uint8_t *p, size_t n, uint32_t *cp, size_t *bad)
{
	uint8_t b0 = p[0];
	uint8_t lo = 0x80, hi = 0xBF;
	size_t need, i;

	if (b0 < 0x80) {
		*cp = b0;
		return 1;
	}
	if (b0 < 0xC2 || b0 > 0xF4) {
		*bad = 1;
		return 0;
	}
	need = b0 < 0xE0 ? 1 : b0 < 0xF0 ? 2 : 3;
	if (b0 == 0xE0)
		lo = 0xA0;
	else if (b0 == 0xED)
		hi = 0x9F;
	else if (b0 == 0xF0)
		lo = 0x90;
	else if (b0 == 0xF4)
		hi = 0x8F;
	*cp = b0 & (0x3F >> need);
	for (i = 1; i <= need; i++) {
		uint8_t c = i < n ? p[i] : 0;
		bool ok = i == 1 ? c >= lo && c <= hi : c >= 0x80 && c <= 0xBF;
		if (i >= n || !ok) {
			*bad = i;
			return 0;
		}
		*cp = (*cp << 6) | (c & 0x3F);
	}
	return need + 1;
}

char *lb_box_utf8_replace(const void *data, size_t n, size_t *out_len)
{
	const uint8_t *p = data;
	size_t o = 0;

	/* each invalid byte may become the 3 bytes of U+FFFD */
	if (n > (SIZE_MAX - 1) / 3)
		return NULL;
	char *out = malloc(n * 3 + 1);
	if (!out)
		return NULL;
	for (size_t i = 0; i < n;) {
		uint32_t cp;
		size_t bad = 0, len = utf8_seq(p + i, n - i, &cp, &bad);
		if (len) {
			memcpy(out + o, p + i, len);
			o += len;
			i += len;
			continue;
		}
		memcpy(out + o, "\xEF\xBF\xBD", 3);
		o += 3;
		i += bad;
	}
	out[o] = '\0';
	*out_len = o;
	return out;
}

uint32_t lb_box_utf8_next(const char *s, size_t len, size_t *pos)
{
	uint32_t cp = 0;
	size_t bad = 0, n = utf8_seq((const uint8_t *)s + *pos, len - *pos, &cp, &bad);

	*pos += n ? n : bad; /* never stalls, even on input that is not valid after all */
	return n ? cp : 0xFFFD;
}

size_t lb_box_utf8_count(const char *s, size_t len)
{
	size_t count = 0;

	for (size_t i = 0; i < len; i++)
		count += ((uint8_t)s[i] & 0xC0) != 0x80;
	return count;
}

size_t lb_box_utf8_offset(const char *s, size_t len, size_t chars)
{
	size_t pos = 0;

	while (chars-- > 0 && pos < len)
		lb_box_utf8_next(s, len, &pos);
	return pos;
}

bool lb_box_py_isspace(uint32_t cp)
{
	if (cp < 0x80)
		return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20);
	switch (cp) {
	case 0x85:
	case 0xA0:
	case 0x1680:
	case 0x2028:
	case 0x2029:
	case 0x202F:
	case 0x205F:
	case 0x3000:
		return true;
	default:
		return cp >= 0x2000 && cp <= 0x200A;
	}
}

/* Start of the code point that ends at end (exclusive), not before start. */
static size_t utf8_prev(const char *s, size_t start, size_t end)
{
	size_t p = end - 1;

	while (p > start && ((uint8_t)s[p] & 0xC0) == 0x80)
		p--;
	return p;
}

void lb_box_py_strip(const char *s, size_t len, bool left, size_t *start, size_t *end)
{
	size_t a = 0, b = len;

	while (left && a < len) {
		size_t next = a;
		if (!lb_box_py_isspace(lb_box_utf8_next(s, len, &next)))
			break;
		a = next;
	}
	while (b > a) {
		size_t p = utf8_prev(s, a, b), q = p;
		if (!lb_box_py_isspace(lb_box_utf8_next(s, b, &q)))
			break;
		b = p;
	}
	*start = a;
	*end = b;
}

bool lb_box_py_is_blank(const char *s)
{
	size_t a, b;

	lb_box_py_strip(s, strlen(s), true, &a, &b);
	return a == b;
}

char *lb_box_py_strip_dup(const char *s)
{
	size_t a, b;

	lb_box_py_strip(s, strlen(s), true, &a, &b);
	return strndup(s + a, b - a);
}
