/*
 * Text rules of LangBot Box that a client can observe byte for byte: output capture (1 MiB cap,
 * clip notice, UTF-8 with replacement, Python str.strip()), the 4000-character truncation of
 * §5.5, the stderr preview of §3.6, shell quoting (Python shlex.quote) and datetimes (§1.9).
 */
#ifndef LBBOX_BOX_TEXT_H
#define LBBOX_BOX_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lbbox/base/err.h"

#define LB_BOX_CAPTURE_MAX (1024 * 1024)

/* One captured stream: keeps the first LB_BOX_CAPTURE_MAX bytes, counts all of them. */
struct lb_box_capture {
	char *buf;
	size_t len;	/* bytes kept, <= LB_BOX_CAPTURE_MAX */
	uint64_t total; /* bytes seen */
};
int lb_box_capture_add(struct lb_box_capture *c, const void *data, size_t n, struct lb_err **err);
/* The stream as LangBot reports it: kept bytes decoded as UTF-8 with U+FFFD for invalid
 * sequences (Python's errors="replace" rules), .strip()ped (Python's Unicode whitespace), plus
 * "\n... [raw output clipped at 1048576 bytes, <total-1048576> bytes discarded]" when total
 * exceeded the cap. Result is valid UTF-8, malloc'ed. */
int lb_box_capture_text(const struct lb_box_capture *c, char **out, struct lb_err **err);
/* The same text with its length: a NUL byte in the output is U+0000, which LangBot keeps ("\u0000"
 * in JSON), so a caller that must be byte-exact uses the length, not strlen(). */
int lb_box_capture_text_len(const struct lb_box_capture *c, char **out, size_t *out_len,
			    struct lb_err **err);
void lb_box_capture_free(struct lb_box_capture *c);

/* bytes.decode("utf-8", "replace"): malloc'ed, NUL-terminated (the text itself may hold NULs),
 * *out_len bytes; NULL on ENOMEM. */
char *lb_box_utf8_replace(const void *data, size_t n, size_t *out_len);

/* §5.5: truncation to limit characters (code points) with the head/tail notice; *truncated says
 * whether anything was cut. Input and output valid UTF-8. */
int lb_box_truncate(const char *text, size_t limit_chars, char **out, bool *truncated,
		    struct lb_err **err);
/* The same on text[0..len), which may hold NULs; *out_len is the result's length. */
int lb_box_truncate_len(const char *text, size_t len, size_t limit_chars, char **out,
			size_t *out_len, bool *truncated, struct lb_err **err);

/* §3.6 stderr preview: chunks (each right-stripped, empty skipped) kept while the sum of
 * (chars + 1) <= 4000, oldest dropped first; text = chunks joined with "\n". */
#define LB_BOX_PREVIEW_MAX 4000
struct lb_box_preview {
	char **chunks;
	size_t *lens; /* byte length of each chunk (a chunk may hold NULs) */
	size_t n, cap;
	size_t chars; /* sum of (code points + 1) */
};
/* data is raw bytes of one read (decoded with replacement here). */
int lb_box_preview_add(struct lb_box_preview *p, const void *data, size_t n, struct lb_err **err);
int lb_box_preview_text(const struct lb_box_preview *p, char **out, struct lb_err **err);
int lb_box_preview_text_len(const struct lb_box_preview *p, char **out, size_t *out_len,
			    struct lb_err **err);
void lb_box_preview_free(struct lb_box_preview *p);

/* Python shlex.quote: bare when it matches [A-Za-z0-9@%+=:,./_-]+, else single-quoted with each
 * ' written as '"'"'; "" -> "''". malloc'ed, NULL on ENOMEM. */
char *lb_box_shell_quote(const char *s);

/* The words of argv, each shell-quoted, joined by spaces ("" for none). malloc'ed. */
char *lb_box_shell_join(char *const *argv);

/* Pydantic's UTC datetime: "2026-08-21T03:04:05.123456Z", no fraction when microseconds are 0.
 * buf needs 32 bytes. */
void lb_box_format_time(uint64_t unix_ns, char *buf, size_t len);

/* §5.6 workspace quota walk of realpath(host_path): -1 with BoxValidationError and LangBot's
 * message when bytes > quota_mb MiB or entries > max_entries; phase is "before execution" or
 * "after execution". */
int lb_box_quota_check(const char *host_path, int64_t quota_mb, uint64_t max_entries,
		       const char *phase, const char *session_id, struct lb_err **err);

/* Python's str.strip() on UTF-8: s.strip() == "", and a malloc'ed copy of s.strip() (NULL on
 * ENOMEM). */
bool lb_box_py_is_blank(const char *s);
char *lb_box_py_strip_dup(const char *s);

#endif
