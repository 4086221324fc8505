/*
 * Python string primitives shared by the Box text rules and the BoxSpec validators: UTF-8
 * decoding with replacement, str.isspace() / str.isalnum() and str.strip() on UTF-8 buffers.
 */
#ifndef LBBOX_BOX_TEXT_INTERNAL_H
#define LBBOX_BOX_TEXT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lbbox/box/text.h"

/* Next code point of valid UTF-8 at *pos (advanced); the input is trusted. */
uint32_t lb_box_utf8_next(const char *s, size_t len, size_t *pos);
/* Code points in valid UTF-8. */
size_t lb_box_utf8_count(const char *s, size_t len);
/* Byte offset of code point number chars (len when the text is shorter). */
size_t lb_box_utf8_offset(const char *s, size_t len, size_t chars);

bool lb_box_py_isspace(uint32_t cp);
bool lb_box_py_isalnum(uint32_t cp);

/* str.strip() (left = true) or str.rstrip() (left = false) of valid UTF-8 s[0..len): the kept
 * part is s[*start..*end). */
void lb_box_py_strip(const char *s, size_t len, bool left, size_t *start, size_t *end);

#endif
