/* How lbbox prints: its own messages (one line each, on stderr, control characters escaped),
 * JSON results (one per line), and names escaped for a terminal. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"

void cli_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	_cleanup_free_ char *text = lb_vformat_line(fmt, ap);
	va_end(ap);
	fprintf(stderr, "lbbox: %s\n", text ? text : "out of memory");
}

int cli_box_error(const struct lb_err *err)
{
	if (err->cls)
		cli_error("%s: %s", err->cls, err->msg);
	else
		cli_error("%s", err->msg);
	return LB_EXIT_SETUP;
}

void cli_print_escaped(const char *s, int width)
{
	_cleanup_free_ char *e = lb_escape_ctl(s);
	printf("%-*s", width, e ? e : "?");
}

void cli_print_json(json_t *j)
{
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	if (s)
		printf("%s\n", s);
	free(s);
	json_decref(j);
	fflush(stdout);
}
