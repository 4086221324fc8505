// lb_escape_ctl: what reaches a terminal or a log line from a request (ids, error texts).
#include <criterion/criterion.h>
#include <stdlib.h>

#include "lbbox/base/util.h"

static void expect(const char *in, const char *want)
{
	char *got = lb_escape_ctl(in);
	cr_assert_not_null(got);
	cr_expect_str_eq(got, want, "escaping \"%s\"", want);
	free(got);
}

Test(escape, printable_text_and_utf8_are_kept)
{
	expect("", "");
	expect("person_12345 ws-1-g1", "person_12345 ws-1-g1");
	expect("caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80",
	       "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80");
	expect("a\\x1b", "a\\x1b"); // a backslash is not an escape
}

Test(escape, control_characters_and_terminal_escapes)
{
	expect("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m");
	expect("a\nb\tc\rd\x7f", "a\\x0ab\\x09c\\x0dd\\x7f");
	expect("\x1b]0;title\x07", "\\x1b]0;title\\x07");
	expect("csi \xc2\x9b"
	       "31m",
	       "csi \\xc2\\x9b31m");		// U+009B, the 8-bit CSI
	expect("\xc2\xa0nbsp", "\xc2\xa0nbsp"); // U+00A0 is printable
}

Test(escape, bytes_that_are_not_utf8)
{
	expect("\x9b"
	       "31m",
	       "\\x9b31m");				    // a lone continuation byte
	expect("\xc3", "\\xc3");			    // cut short
	expect("\xc0\xaf", "\\xc0\\xaf");		    // overlong '/'
	expect("\xed\xa0\x80", "\\xed\\xa0\\x80");	    // a surrogate
	expect("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"); // beyond U+10FFFF
	expect("\xe2\x82 x", "\\xe2\\x82 x");
}

/* Bidirectional overrides and isolates reorder what a terminal shows: "session-\u202egnp.exe"
 * would pose as "session-exe.png". */
Test(escape, bidirectional_controls)
{
	expect("a\xe2\x80\xae"
	       "b",
	       "a\\xe2\\x80\\xaeb"); /* U+202E RIGHT-TO-LEFT OVERRIDE */
	expect("a\xe2\x81\xa6"
	       "b",
	       "a\\xe2\\x81\\xa6b"); /* U+2066 LEFT-TO-RIGHT ISOLATE */
	expect("a\xe2\x80\xa9"
	       "b",
	       "a\xe2\x80\xa9"
	       "b"); /* U+2029 PARAGRAPH SEPARATOR: no reordering */
}
