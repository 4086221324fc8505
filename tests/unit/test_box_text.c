/*
 * Unit tests for the Box text rules (spec §1.9, §3.6, §4.1, §5.5) and the workspace quota walk
 * (§5.6). The UTF-8 and shlex vectors were produced by CPython 3.11 (bytes.decode("utf-8",
 * "replace"), shlex.quote) on the same inputs.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lbbox/box/spec.h"
#include "lbbox/box/text.h"

static const struct {
	const char *in;
	size_t len;
	const char *out;
	size_t out_len;
} utf8_cases[] = {
    {"", 0, "", 0},
    {"plain", 5, "plain", 5},
    {"a\x80"
     "b",
     3,
     "a\xef\xbf\xbd"
     "b",
     5},
    {"\xe2\x82", 2, "\xef\xbf\xbd", 3},
    {"\xe2\x82x", 3, "\xef\xbf\xbdx", 4},
    {"\xf0\x9f", 2, "\xef\xbf\xbd", 3},
    {"\xf0\x9f\x98", 3, "\xef\xbf\xbd", 3},
    {"\xf0\x9f\x98\x80", 4, "\xf0\x9f\x98\x80", 4},
    {"\xe0\x80", 2, "\xef\xbf\xbd\xef\xbf\xbd", 6},
    {"\xe0\xa0\x80", 3, "\xe0\xa0\x80", 3},
    {"\xed\xa0\x80", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 9},
    {"\xed\x9f\xbf", 3, "\xed\x9f\xbf", 3},
    {"\xc0\xaf", 2, "\xef\xbf\xbd\xef\xbf\xbd", 6},
    {"\xc1\xbf", 2, "\xef\xbf\xbd\xef\xbf\xbd", 6},
    {"\xc2", 1, "\xef\xbf\xbd", 3},
    {"\xc2\xa9", 2, "\xc2\xa9", 2},
    {"\xf4\x90\x80\x80", 4, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 12},
    {"\xf4\x8f\xbf\xbf", 4, "\xf4\x8f\xbf\xbf", 4},
    {"\xf0\x80\x80", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 9},
    {"\xf5\x80", 2, "\xef\xbf\xbd\xef\xbf\xbd", 6},
    {"\xff\xfe", 2, "\xef\xbf\xbd\xef\xbf\xbd", 6},
    {"\xe1\x80\xe1\x80\x80", 5, "\xef\xbf\xbd\xe1\x80\x80", 6},
    {"\xf8\x88\x80\x80\x80", 5, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 15},
    {"\xef\xbf\xbd", 3, "\xef\xbf\xbd", 3},
    {"x\xf1\x80\x80", 4, "x\xef\xbf\xbd", 4},
    {"\xf1\x80\x80\xf1\x80\x80\x80", 7, "\xef\xbf\xbd\xf1\x80\x80\x80", 7},
    {"\x80\x80", 2, "\xef\xbf\xbd\xef\xbf\xbd", 6},
    {"\xdf\x7f", 2, "\xef\xbf\xbd\x7f", 4},
    {"\xe1\xc0\x80", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 9},
};
static const struct {
	const char *in, *out;
} quote_cases[] = {
    {"", "''"},
    {"abc", "abc"},
    {"a b", "'a b'"},
    {"it's", "'it'\"'\"'s'"},
    {"/workspace/a-b_c.d", "/workspace/a-b_c.d"},
    {"A@%+=:,./-_z", "A@%+=:,./-_z"},
    {"$HOME", "'$HOME'"},
    {"\xc3\xa9", "'\xc3\xa9'"},
    {"a\"b", "'a\"b'"},
    {"''", "''\"'\"''\"'\"''"},
    {"x\x0ay", "'x\x0ay'"},
    {"~user", "'~user'"},
    {"*", "'*'"},
    {"tab\x09", "'tab\x09'"},
};

/* The reported text of one captured stream holding exactly data[0..n). */
static char *captured(const void *data, size_t n, size_t *len)
{
	struct lb_box_capture c = {0};
	struct lb_err *err = NULL;
	char *out = NULL;

	cr_assert_eq(lb_box_capture_add(&c, data, n, &err), 0);
	cr_assert_eq(lb_box_capture_text_len(&c, &out, len, &err), 0);
	lb_box_capture_free(&c);
	return out;
}

Test(box_text, utf8_replacement_like_python)
{
	for (size_t i = 0; i < sizeof(utf8_cases) / sizeof(utf8_cases[0]); i++) {
		size_t len = 0;
		char *out = captured(utf8_cases[i].in, utf8_cases[i].len, &len);
		cr_expect_eq(len, utf8_cases[i].out_len, "case %zu: length %zu", i, len);
		cr_expect(len == utf8_cases[i].out_len && !memcmp(out, utf8_cases[i].out, len),
			  "case %zu differs", i);
		free(out);
	}
}

Test(box_text, strip_uses_python_whitespace)
{
	/* every code point Python's str.isspace() accepts, in UTF-8 */
	static const char ws[] =
	    "\t\n\v\f\r\x1c\x1d\x1e\x1f \xc2\x85\xc2\xa0\xe1\x9a\x80\xe2\x80\x80\xe2\x80\x81\xe2\x80\x82\xe2\x80\x83\xe2\x80\x84\xe2\x80\x85\xe2\x80\x86\xe2\x80\x87\xe2\x80\x88\xe2\x80\x89\xe2\x80\x8a\xe2\x80\xa8\xe2\x80\xa9\xe2\x80\xaf\xe2\x81\x9f\xe3\x80\x80";
	char buf[256];
	size_t len;
	char *out;

	snprintf(buf, sizeof(buf), "%sx y%s", ws, ws);
	out = captured(buf, strlen(buf), &len);
	cr_assert_str_eq(out, "x y");
	free(out);
	/* not whitespace to Python: ZWSP, BOM, Mongolian vowel separator, NUL */
	static const char kept[] = "\xe2\x80\x8b"
				   "a\xef\xbb\xbf\xe1\xa0\x8e";
	out = captured(kept, sizeof(kept) - 1, &len);
	cr_assert_str_eq(out, kept);
	free(out);
	out = captured("\0 a \0", 5, &len);
	cr_assert_eq(len, 5);
	cr_assert(!memcmp(out, "\0 a \0", 5));
	free(out);
	out = captured(" \n\t ", 4, &len);
	cr_assert_str_eq(out, "");
	cr_assert_eq(len, 0);
	free(out);
}

static void add_repeated(struct lb_box_capture *c, char byte, size_t n)
{
	static char chunk[65536];
	struct lb_err *err = NULL;

	memset(chunk, byte, sizeof(chunk));
	while (n > 0) {
		size_t k = n < sizeof(chunk) ? n : sizeof(chunk);
		cr_assert_eq(lb_box_capture_add(c, chunk, k, &err), 0);
		n -= k;
	}
}

Test(box_text, capture_clip_notice)
{
	struct lb_box_capture c = {0};
	struct lb_err *err = NULL;
	char *out = NULL;
	size_t len;

	/* exactly the cap: no notice */
	add_repeated(&c, 'a', LB_BOX_CAPTURE_MAX);
	cr_assert_eq(lb_box_capture_text_len(&c, &out, &len, &err), 0);
	cr_assert_eq(len, LB_BOX_CAPTURE_MAX);
	free(out);
	/* one more chunk: kept bytes unchanged, everything counted */
	add_repeated(&c, 'b', 70000);
	cr_assert_eq(c.len, LB_BOX_CAPTURE_MAX);
	cr_assert_eq(c.total, LB_BOX_CAPTURE_MAX + 70000);
	cr_assert_eq(lb_box_capture_text_len(&c, &out, &len, &err), 0);
	static const char notice[] =
	    "\n... [raw output clipped at 1048576 bytes, 70000 bytes discarded]";
	cr_assert_eq(len, LB_BOX_CAPTURE_MAX + strlen(notice));
	cr_assert_eq(out[LB_BOX_CAPTURE_MAX - 1], 'a');
	cr_assert_str_eq(out + LB_BOX_CAPTURE_MAX, notice);
	free(out);
	lb_box_capture_free(&c);
	cr_assert_null(c.buf);
	cr_assert_eq(c.total, 0);

	/* the kept part is stripped before the notice is appended; a character cut at the cap
	 * becomes U+FFFD */
	add_repeated(&c, ' ', 10);
	add_repeated(&c, 'a', LB_BOX_CAPTURE_MAX - 11);
	cr_assert_eq(lb_box_capture_add(&c, "\xc3\xa9 tail", 7, &err), 0);
	cr_assert_eq(lb_box_capture_text_len(&c, &out, &len, &err), 0);
	cr_assert_eq(out[0], 'a');
	cr_assert(
	    !memcmp(out + LB_BOX_CAPTURE_MAX - 11,
		    "\xef\xbf\xbd\n... [raw output clipped at 1048576 bytes, 6 bytes discarded]",
		    len - (LB_BOX_CAPTURE_MAX - 11)));
	free(out);
	lb_box_capture_free(&c);

	/* whitespace-only output that was clipped: "" then the notice */
	add_repeated(&c, '\n', LB_BOX_CAPTURE_MAX + 1);
	cr_assert_eq(lb_box_capture_text(&c, &out, &err), 0);
	cr_assert_str_eq(out, "\n... [raw output clipped at 1048576 bytes, 1 bytes discarded]");
	free(out);
	lb_box_capture_free(&c);

	/* nothing captured at all */
	cr_assert_eq(lb_box_capture_text(&c, &out, &err), 0);
	cr_assert_str_eq(out, "");
	free(out);
}

/* n code points: a repeating alphabet of ASCII, or of "é" (2 bytes each) when wide. */
static char *make_text(size_t n, bool wide)
{
	char *s = malloc(n * 2 + 1), *o = s;

	for (size_t i = 0; i < n; i++) {
		if (wide) {
			*o++ = '\xc3';
			*o++ = (char)(0xa0 + i % 26);
		} else {
			*o++ = (char)('A' + i % 26);
		}
	}
	*o = '\0';
	return s;
}

static size_t count_chars(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xC0) != 0x80;
	return n;
}

/* text[:head] + "\n\n... [omitted characters truncated] ...\n\n" + text[-tail:] */
static void expect_truncated(size_t n, bool wide, size_t head, size_t omitted)
{
	char *text = make_text(n, wide), *out = NULL, notice[64];
	size_t per = wide ? 2 : 1, nlen;
	bool truncated = false;
	struct lb_err *err = NULL;

	cr_assert_eq(lb_box_truncate(text, 4000, &out, &truncated, &err), 0);
	cr_assert(truncated);
	cr_assert_eq(count_chars(out), 4000, "%zu chars: result has %zu", n, count_chars(out));
	snprintf(notice, sizeof(notice), "\n\n... [%zu characters truncated] ...\n\n", omitted);
	nlen = strlen(notice);
	cr_assert(!memcmp(out, text, head * per), "%zu: head", n);
	cr_assert(!memcmp(out + head * per, notice, nlen), "%zu: notice %.50s", n,
		  out + head * per);
	size_t tail = 4000 - head - nlen;
	cr_assert_str_eq(out + head * per + nlen, text + (n - tail) * per, "%zu: tail", n);
	free(out);
	free(text);
}

Test(box_text, truncate_spec_examples)
{
	char *text = make_text(4000, false), *out = NULL;
	bool truncated = true;
	struct lb_err *err = NULL;

	cr_assert_eq(lb_box_truncate(text, 4000, &out, &truncated, &err), 0);
	cr_assert_not(truncated);
	cr_assert_str_eq(out, text);
	free(out);
	free(text);
	/* §5.5: len 4001 -> head 2377, omitted 38; len 10000 -> head 2376, omitted 6039 */
	expect_truncated(4001, false, 2377, 38);
	expect_truncated(10000, false, 2376, 6039);
	expect_truncated(1000000, false, 2375, 996041);
	/* characters, not bytes */
	expect_truncated(5000, true, 2376, 1039);
}

Test(box_text, truncate_small_limits)
{
	char *text = make_text(100, false), *out = NULL;
	bool truncated = false;
	struct lb_err *err = NULL;
	size_t len;

	for (size_t i = 0; i < 100; i++)
		text[i] = 'x';
	cr_assert_eq(lb_box_truncate(text, 10, &out, &truncated, &err), 0);
	cr_assert_str_eq(out, "\n\n... [100"); /* the notice alone, cut */
	cr_assert(truncated);
	free(out);
	cr_assert_eq(lb_box_truncate(text, 40, &out, &truncated, &err), 0);
	cr_assert_str_eq(out, "x\n\n... [97 characters truncated] ...\n\nxx"); /* sic */
	free(out);
	cr_assert_eq(lb_box_truncate(text, 0, &out, &truncated, &err), 0);
	cr_assert_str_eq(out, "");
	cr_assert(truncated);
	free(out);
	cr_assert_eq(lb_box_truncate("", 0, &out, &truncated, &err), 0);
	cr_assert_not(truncated);
	free(out);
	free(text);
	/* NUL characters count and survive */
	cr_assert_eq(lb_box_truncate_len("ab\0cd", 5, 4000, &out, &len, &truncated, &err), 0);
	cr_assert_eq(len, 5);
	cr_assert(!memcmp(out, "ab\0cd", 5));
	free(out);
}

static char *preview_of(struct lb_box_preview *p)
{
	struct lb_err *err = NULL;
	char *out = NULL;

	cr_assert_eq(lb_box_preview_text(p, &out, &err), 0);
	return out;
}

static void preview_add(struct lb_box_preview *p, const char *s)
{
	struct lb_err *err = NULL;

	cr_assert_eq(lb_box_preview_add(p, s, strlen(s), &err), 0);
}

Test(box_text, preview_chunks)
{
	struct lb_box_preview p = {0};
	char *t;

	preview_add(&p, "  first line  \n");
	preview_add(&p, " \n\t ");
	preview_add(&p, "");
	preview_add(&p, "second\xff\r\n");
	t = preview_of(&p);
	cr_assert_str_eq(t, "  first line\nsecond\xef\xbf\xbd"); /* rstrip only */
	free(t);
	cr_assert_eq(p.n, 2);
	cr_assert_eq(p.chars, 13 + 8);
	lb_box_preview_free(&p);
	t = preview_of(&p);
	cr_assert_str_eq(t, "");
	free(t);
}

Test(box_text, preview_trims_oldest)
{
	struct lb_box_preview p = {0};
	char *a = make_text(1999, false), *b = make_text(1999, true), *t;

	a[0] = 'a';
	preview_add(&p, a);
	preview_add(&p, b);
	/* (1999 + 1) * 2 == 4000: both kept */
	cr_assert_eq(p.n, 2);
	cr_assert_eq(p.chars, 4000);
	preview_add(&p, "x");
	/* 4002 > 4000: the oldest goes */
	cr_assert_eq(p.n, 2);
	cr_assert_eq(p.chars, 2002);
	t = preview_of(&p);
	cr_assert_eq(strlen(t), 1999 * 2 + 2);
	cr_assert_eq(strncmp(t, b, strlen(b)), 0);
	cr_assert_str_eq(t + strlen(b), "\nx");
	free(t);
	/* a chunk longer than the whole budget pushes everything else out and keeps its own last
	 * 3999 characters (LangBot drops it too and shows nothing: lbbox does not copy that) */
	char *big = make_text(4000, false);
	preview_add(&p, big);
	cr_assert_eq(p.n, 1);
	cr_assert_eq(p.chars, 4000);
	t = preview_of(&p);
	cr_assert_str_eq(t, big + 1);
	free(t);
	preview_add(&p, "after");
	t = preview_of(&p);
	cr_assert_str_eq(t, "after"); /* 4000 + 6 > 4000: the big one goes */
	free(t);
	lb_box_preview_free(&p);
	free(a);
	free(b);
	free(big);
}

Test(box_text, shell_quote_like_shlex)
{
	for (size_t i = 0; i < sizeof(quote_cases) / sizeof(quote_cases[0]); i++) {
		char *q = lb_box_shell_quote(quote_cases[i].in);
		cr_expect_str_eq(q, quote_cases[i].out, "%s", quote_cases[i].in);
		free(q);
	}
}

Test(box_text, pydantic_datetimes)
{
	char buf[32];

	lb_box_format_time(1787281445ULL * 1000000000ULL + 123456789ULL, buf, sizeof(buf));
	cr_assert_str_eq(buf, "2026-08-21T03:04:05.123456Z");
	lb_box_format_time(1787281445ULL * 1000000000ULL, buf, sizeof(buf));
	cr_assert_str_eq(buf, "2026-08-21T03:04:05Z");
	/* below a microsecond is dropped, and with it the fraction */
	lb_box_format_time(1787281445ULL * 1000000000ULL + 999ULL, buf, sizeof(buf));
	cr_assert_str_eq(buf, "2026-08-21T03:04:05Z");
	lb_box_format_time(946684799ULL * 1000000000ULL + 120000000ULL, buf, sizeof(buf));
	cr_assert_str_eq(buf, "1999-12-31T23:59:59.120000Z");
	lb_box_format_time(951825600ULL * 1000000000ULL + 1000ULL, buf, sizeof(buf));
	cr_assert_str_eq(buf, "2000-02-29T12:00:00.000001Z");
	lb_box_format_time(0, buf, sizeof(buf));
	cr_assert_str_eq(buf, "1970-01-01T00:00:00Z");
}

/* A scratch workspace under /tmp/box-helper-quota-*, removed by the test. */
static char quota_dir[64];

static void quota_setup(void)
{
	strcpy(quota_dir, "/tmp/box-helper-quota-XXXXXX");
	cr_assert_not_null(mkdtemp(quota_dir));
}

static void quota_teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", quota_dir);
	cr_assert_eq(system(cmd), 0);
}

/* A sparse file of size bytes: lstat reports the size, the disk holds nothing. */
static void make_file(const char *rel, off_t size)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", quota_dir, rel);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cr_assert_geq(fd, 0, "%s", path);
	cr_assert_eq(ftruncate(fd, size), 0);
	close(fd);
}

static void make_dir(const char *rel)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", quota_dir, rel);
	cr_assert_eq(mkdir(path, 0755), 0);
}

static char *quota_error(const char *path, int64_t mb, uint64_t max_entries)
{
	struct lb_err *err = NULL;
	char *msg;

	if (lb_box_quota_check(path, mb, max_entries, "before execution", "sess", &err) == 0) {
		cr_assert_null(err);
		return NULL;
	}
	cr_assert_not_null(err);
	cr_assert_str_eq(err->cls, LB_BOX_EVALIDATION);
	msg = strdup(err->msg);
	lb_err_free(&err);
	return msg;
}

Test(box_quota, bytes, .init = quota_setup, .fini = quota_teardown)
{
	char want[512], *m;

	make_dir("d");
	make_dir("d/e");
	make_file("d/e/f", 600 * 1024);
	make_file("g", 400 * 1024);
	cr_assert_null(quota_error(quota_dir, 1, 100000)); /* 1000 KiB <= 1 MiB */
	make_file("h", 24 * 1024 + 1);			   /* 1 MiB + 1 byte */
	m = quota_error(quota_dir, 1, 100000);
	snprintf(
	    want, sizeof(want),
	    "workspace quota exceeded before execution: used=1048577 bytes limit=1048576 bytes entries=5 host_path=%s session_id=sess",
	    quota_dir);
	cr_assert_str_eq(m, want);
	free(m);
	cr_assert_null(quota_error(quota_dir, 2, 100000));
	/* 0 = unlimited, and a missing directory is not checked */
	cr_assert_null(quota_error(quota_dir, 0, 1));
	cr_assert_null(quota_error("/tmp/box-helper-quota-does-not-exist", 1, 1));
	cr_assert_null(quota_error(NULL, 1, 1));
}

Test(box_quota, phase_and_realpath, .init = quota_setup, .fini = quota_teardown)
{
	struct lb_err *err = NULL;
	char link[128], want[512];

	make_file("big", 3 * 1024 * 1024);
	snprintf(link, sizeof(link), "%s-link", quota_dir);
	cr_assert_eq(symlink(quota_dir, link), 0);
	cr_assert_eq(lb_box_quota_check(link, 2, 100000, "after execution", "s2", &err), -1);
	unlink(link);
	/* the message names the resolved directory, as LangBot's realpath() does */
	snprintf(
	    want, sizeof(want),
	    "workspace quota exceeded after execution: used=3145728 bytes limit=2097152 bytes entries=1 host_path=%s session_id=s2",
	    quota_dir);
	cr_assert_str_eq(err->msg, want);
	lb_err_free(&err);
}

Test(box_quota, entries, .init = quota_setup, .fini = quota_teardown)
{
	char want[512], *m;

	make_dir("a");
	make_file("a/1", 0);
	make_file("a/2", 0);
	make_file("b", 0);
	cr_assert_null(quota_error(quota_dir, 1, 4)); /* a, a/1, a/2, b */
	m = quota_error(quota_dir, 1, 3);
	snprintf(
	    want, sizeof(want),
	    "workspace entry limit exceeded before execution: entries>3 host_path=%s session_id=sess",
	    quota_dir);
	cr_assert_str_eq(m, want);
	free(m);
}

Test(box_quota, symlinks_count_their_own_size, .init = quota_setup, .fini = quota_teardown)
{
	char big[256], link[256], ws[256], want[512];

	/* ws holds: a link to a 5 MiB file, a link to the directory above (a loop if followed),
	 * and padding so that the links' own sizes put it exactly 1 byte over 1 MiB */
	make_dir("ws");
	make_file("big", 5 * 1024 * 1024);
	snprintf(big, sizeof(big), "%s/big", quota_dir);
	snprintf(link, sizeof(link), "%s/ws/link", quota_dir);
	cr_assert_eq(symlink(big, link), 0);
	snprintf(link, sizeof(link), "%s/ws/dirlink", quota_dir);
	cr_assert_eq(symlink(quota_dir, link), 0);
	make_file("ws/pad", 1024 * 1024 - (off_t)strlen(big) - (off_t)strlen(quota_dir));
	snprintf(ws, sizeof(ws), "%s/ws", quota_dir);
	cr_assert_null(quota_error(ws, 1, 100000)); /* exactly 1 MiB */

	make_file("ws/pad", 1024 * 1024 - (off_t)strlen(big) - (off_t)strlen(quota_dir) + 1);
	char *m = quota_error(ws, 1, 100000);
	snprintf(
	    want, sizeof(want),
	    "workspace quota exceeded before execution: used=1048577 bytes limit=1048576 bytes entries=3 host_path=%s session_id=sess",
	    ws);
	cr_assert_str_eq(m, want);
	free(m);
}

// One read longer than the preview (a burst of lines): its tail is kept from a line start,
// where LangBot's deque would drop the whole chunk and show nothing.
Test(box_text, preview_keeps_the_tail_of_an_oversized_read)
{
	struct lb_box_preview p = {0};
	char burst[300 * 41 + 1], *text = NULL;
	size_t o = 0;
	for (int i = 0; i < 300; i++)
		o += (size_t)snprintf(burst + o, sizeof(burst) - o,
				      "line %03d xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n", i);
	cr_assert_eq(lb_box_preview_add(&p, burst, o, NULL), 0);
	cr_assert_eq(lb_box_preview_text(&p, &text, NULL), 0);
	cr_assert_leq(strlen(text) + 1, LB_BOX_PREVIEW_MAX);
	cr_assert_gt(strlen(text), 3900);
	cr_assert(strncmp(text, "line ", 5) == 0, "starts at a line: %.20s", text);
	cr_assert_str_eq(text + strlen(text) - 39, "line 299 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
	free(text);
	lb_box_preview_free(&p);
}

/* What is mounted inside the workspace is another file system: the walk does not enter it (it
 * could be the host's, bound in by whoever set up the workspace, or huge). */
Test(box_quota, mounts_below_are_not_entered, .init = quota_setup, .fini = quota_teardown)
{
	char path[256];

	if (geteuid() != 0)
		cr_skip_test("mounting a tmpfs needs root");
	make_dir("m");
	snprintf(path, sizeof(path), "%s/m", quota_dir);
	cr_assert_eq(mount("lbt-quota", path, "tmpfs", 0, "size=8m"), 0);
	make_file("m/big", 4 << 20);
	char *m = quota_error(quota_dir, 1, 100000);
	umount2(path, MNT_DETACH);
	cr_assert_null(m, "the walk entered a mount: %s", m);
}
