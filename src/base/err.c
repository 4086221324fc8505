/* Error values carried up the stack; only cli/ and server/ print them. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbbox/base/err.h"

/* printf-checked through its callers' format attributes */
static __attribute__((format(printf, 3, 0))) int err_vset(struct lb_err **err, int errnum,
							  const char *fmt, va_list ap)
{
	char *msg = NULL;

	if (!err || *err)
		return -1; /* keep the first (innermost) error */
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	struct lb_err *e = calloc(1, sizeof(*e));
	if (!e) {
		free(msg);
		return -1;
	}
	e->errnum = errnum;
	if (msg && errnum) {
		char *full = NULL;
		if (asprintf(&full, "%s: %s", msg, strerror(errnum)) >= 0) {
			free(msg);
			msg = full;
		}
	}
	e->msg = msg ? msg : strdup("out of memory");
	*err = e;
	return -1;
}

int lb_err_set(struct lb_err **err, int errnum, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	err_vset(err, errnum, fmt, ap);
	va_end(ap);
	return -1;
}

int lb_err_box(struct lb_err **err, const char *cls, const char *fmt, ...)
{
	va_list ap;
	bool fresh = err && !*err;
	va_start(ap, fmt);
	err_vset(err, 0, fmt, ap);
	va_end(ap);
	if (fresh && *err)
		(*err)->cls = cls;
	return -1;
}

int lb_err_reclass(struct lb_err **err, const char *cls, const char *fmt, ...)
{
	va_list ap;
	if (!err)
		return -1;
	lb_err_free(err);
	va_start(ap, fmt);
	err_vset(err, 0, fmt, ap);
	va_end(ap);
	if (*err)
		(*err)->cls = cls;
	return -1;
}

int lb_err_wrap(struct lb_err **err, const char *fmt, ...)
{
	char *ctx = NULL, *full = NULL;
	va_list ap;

	if (!err || !*err)
		return -1;
	va_start(ap, fmt);
	if (vasprintf(&ctx, fmt, ap) < 0)
		ctx = NULL;
	va_end(ap);
	if (ctx && asprintf(&full, "%s: %s", ctx, (*err)->msg) >= 0) {
		free((*err)->msg);
		(*err)->msg = full;
	}
	free(ctx);
	return -1;
}

void lb_err_free(struct lb_err **err)
{
	if (!err || !*err)
		return;
	free((*err)->msg);
	free(*err);
	*err = NULL;
}
