/*
 * The managed-process stderr preview (spec §3.6): each read is decoded on its own (a character
 * split across two reads becomes U+FFFD, as in LangBot's drain task), right-stripped and kept
 * unless empty; the oldest chunks go while the sum of (characters + 1) exceeds 4000 (one
 * chunk longer than that keeps its tail; LangBot's would vanish).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lbbox/box/text.h"
#include "lbbox/base/cleanup.h"
#include "text_internal.h"

static void preview_drop_oldest(struct lb_box_preview *p)
{
	p->chars -= lb_box_utf8_count(p->chunks[0], p->lens[0]) + 1;
	free(p->chunks[0]);
	memmove(p->chunks, p->chunks + 1, (p->n - 1) * sizeof(*p->chunks));
	memmove(p->lens, p->lens + 1, (p->n - 1) * sizeof(*p->lens));
	p->n--;
}

static int preview_reserve(struct lb_box_preview *p)
{
	if (p->n < p->cap)
		return 0;
	size_t cap = p->cap ? p->cap * 2 : 16;
	char **chunks = realloc(p->chunks, cap * sizeof(*chunks));
	if (!chunks)
		return -1;
	p->chunks = chunks;
	size_t *lens = realloc(p->lens, cap * sizeof(*lens));
	if (!lens)
		return -1;
	p->lens = lens;
	p->cap = cap;
	return 0;
}

/*
 * LangBot drops whole chunks from the oldest side, so one read longer than the preview (a burst
 * of lines read at once) would empty it. lbbox keeps that chunk's last characters instead,
 * starting at a line when there is one: the preview is then what it claims to be, the last
 * <= 4000 characters of stderr. Returns the new byte length.
 */
static size_t keep_tail(char *text, size_t len)
{
	size_t chars = lb_box_utf8_count(text, len), i = 0, seen = 0;
	if (chars + 1 <= LB_BOX_PREVIEW_MAX)
		return len;
	size_t skip = chars - (LB_BOX_PREVIEW_MAX - 1);
	for (; i < len; i++) /* to the first byte of character number `skip` */
		if (((unsigned char)text[i] & 0xC0) != 0x80 && seen++ == skip)
			break;
	const char *nl = memchr(text + i, '\n', len - i);
	if (nl && nl + 1 < text + len)
		i = (size_t)(nl + 1 - text);
	memmove(text, text + i, len - i + 1);
	return len - i;
}

int lb_box_preview_add(struct lb_box_preview *p, const void *data, size_t n, struct lb_err **err)
{
	size_t len = 0, a, b;
	_cleanup_free_ char *text = lb_box_utf8_replace(data, n, &len);

	if (!text)
		return lb_err_set(err, ENOMEM, "stderr preview");
	lb_box_py_strip(text, len, false, &a, &b);
	if (b == 0)
		return 0; /* whitespace only: LangBot skips it */
	text[b] = '\0';
	b = keep_tail(text, b);
	/* the decode buffer is sized for the worst case (3 bytes per input byte): keep only the
	 * text, or thousands of kept chunks could pin hundreds of MiB */
	char *small = realloc(text, b + 1);
	if (small)
		text = small;
	if (preview_reserve(p) < 0)
		return lb_err_set(err, ENOMEM, "stderr preview");
	p->chunks[p->n] = LB_TAKE_PTR(text);
	p->lens[p->n] = b;
	p->n++;
	p->chars += lb_box_utf8_count(p->chunks[p->n - 1], b) + 1; /* +1: the "\n" joining it */
	while (p->chars > LB_BOX_PREVIEW_MAX && p->n > 0)
		preview_drop_oldest(p);
	return 0;
}

int lb_box_preview_text_len(const struct lb_box_preview *p, char **out, size_t *out_len,
			    struct lb_err **err)
{
	size_t size = 1, o = 0;

	for (size_t i = 0; i < p->n; i++)
		size += p->lens[i] + 1;
	char *s = malloc(size);
	if (!s)
		return lb_err_set(err, ENOMEM, "stderr preview");
	for (size_t i = 0; i < p->n; i++) {
		if (i)
			s[o++] = '\n';
		memcpy(s + o, p->chunks[i], p->lens[i]);
		o += p->lens[i];
	}
	s[o] = '\0';
	*out = s;
	*out_len = o;
	return 0;
}

int lb_box_preview_text(const struct lb_box_preview *p, char **out, struct lb_err **err)
{
	size_t len;

	return lb_box_preview_text_len(p, out, &len, err);
}

void lb_box_preview_free(struct lb_box_preview *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->chunks[i]);
	free(p->chunks);
	free(p->lens);
	*p = (struct lb_box_preview){0};
}
