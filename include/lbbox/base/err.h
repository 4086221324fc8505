/* Error values: every fallible function is int f(..., struct lb_err **err), returns < 0 and fills
 * *err. */
#ifndef LBBOX_ERR_H
#define LBBOX_ERR_H

#include <stdarg.h>

struct lb_err {
	int errnum; /* errno value, 0 when not a system error */
	char *msg;  /* full message, context first: "mount /proc: Operation not permitted" */
	/* LangBot Box error class ("BoxSessionNotFoundError"), NULL for plain errors; static. */
	const char *cls;
};

/* Sets *err (when err != NULL and *err is NULL) and returns -1. errnum 0 means no strerror suffix.
 */
int lb_err_set(struct lb_err **err, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prefixes context to an existing error ("ctx: old message"); returns -1. */
int lb_err_wrap(struct lb_err **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Like lb_err_set, tagged with a Box error class (a static string); the message gets no errno. */
int lb_err_box(struct lb_err **err, const char *cls, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Replaces *err (if any) with a Box-classed one: a lower layer's reason gives way to the class
 * and text the caller promises (e.g. "session x is not running"). Returns -1. */
int lb_err_reclass(struct lb_err **err, const char *cls, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void lb_err_free(struct lb_err **err);

static inline void lb_err_freep(struct lb_err **err)
{
	lb_err_free(err);
}

#endif
