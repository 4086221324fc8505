/* Registry failures as one clear line each: what the user can act on (log in, check the name, wait
 * until the rate limit lifts, check the network), with the registry's own words when it gave any.
 */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "registry_internal.h"
#include "lbbox/base/cleanup.h"

#define DETAIL_MAX 200

/* Like lb_err_set, but without the strerror suffix: "rate limited ...; retry after 42 s" must stay
 * the end of the line, and "Permission denied" after a 403 adds nothing. errnum is still set, for
 * callers that branch on it. */
__attribute__((format(printf, 3, 4))) static int reg_err(struct lb_err **err, int errnum,
							 const char *fmt, ...)
{
	va_list ap;
	_cleanup_free_ char *msg = NULL;

	va_start(ap, fmt);
	int n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (n < 0)
		return lb_err_set(err, errnum, "registry error");
	bool fresh = err && !*err;
	lb_err_set(err, 0, "%s", msg);
	if (fresh && *err)
		(*err)->errnum = errnum;
	return -1;
}

long reg_retry_after_seconds(const char *value)
{
	char *end = NULL;

	if (!value || !*value)
		return -1;
	if (isdigit((unsigned char)*value)) {
		long v = strtol(value, &end, 10);
		return *end == '\0' || isspace((unsigned char)*end) ? v : -1;
	}
	time_t when = curl_getdate(value, NULL);
	if (when < 0)
		return -1;
	time_t now = time(NULL);
	return when > now ? (long)(when - now) : 0;
}

/* The distribution spec's error body: {"errors": [{"code": ..., "message": ...}]}. */
static void registry_detail(const struct reg_response *resp, char *out, size_t n)
{
	json_t *j = resp->errlen ? json_loadb(resp->errbody, resp->errlen, 0, NULL) : NULL;
	json_t *e = json_array_get(json_object_get(j, "errors"), 0);
	const char *code = json_string_value(json_object_get(e, "code"));
	const char *msg = json_string_value(json_object_get(e, "message"));

	out[0] = '\0';
	if (code || msg)
		snprintf(out, n, ": %.*s%s%.*s", DETAIL_MAX, code ? code : "",
			 code && msg ? ": " : "", DETAIL_MAX, msg ? msg : "");
	/* Strings come from the network: keep the message one printable line. */
	for (char *p = out; *p; p++)
		if (!isprint((unsigned char)*p))
			*p = ' ';
	json_decref(j);
}

static int rate_limited(struct reg_client *c, const struct reg_response *resp, const char *what,
			struct lb_err **err)
{
	long secs = reg_retry_after_seconds(resp->retry_after);

	if (secs >= 0)
		return reg_err(err, EAGAIN,
			       "registry %s: %s: rate limited (HTTP 429); retry after %ld s",
			       c->display, what, secs);
	return reg_err(err, EAGAIN, "registry %s: %s: rate limited (HTTP 429); retry later",
		       c->display, what);
}

int reg_status_error(struct reg_client *c, const struct reg_response *resp, const char *what,
		     struct lb_err **err)
{
	char d[2 * DETAIL_MAX + 8];
	long s = resp->status;

	registry_detail(resp, d, sizeof(d));
	switch (s) {
	case 401:
		return reg_err(err, EACCES, "registry %s: %s: %s (HTTP 401)%s", c->display, what,
			       c->auth.basic ? "authentication failed" : "authentication required",
			       d);
	case 403:
		return reg_err(err, EACCES, "registry %s: %s: access denied (HTTP 403)%s",
			       c->display, what, d);
	case 404:
		return reg_err(err, ENOENT, "registry %s: %s: not found (HTTP 404)%s", c->display,
			       what, d);
	case 429:
		return rate_limited(c, resp, what, err);
	default:
		break;
	}
	if (s >= 500)
		return reg_err(err, EIO, "registry %s: %s: server error (HTTP %ld)%s", c->display,
			       what, s, d);
	return reg_err(err, EPROTO, "registry %s: %s: unexpected HTTP status %ld%s", c->display,
		       what, s, d);
}

static int curl_errno(CURLcode code)
{
	switch (code) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		return EHOSTUNREACH;
	case CURLE_COULDNT_CONNECT:
		return ECONNREFUSED;
	case CURLE_OPERATION_TIMEDOUT:
		return ETIMEDOUT;
	case CURLE_PARTIAL_FILE:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
		return ECONNRESET;
	case CURLE_OUT_OF_MEMORY:
		return ENOMEM;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
		return EPROTO;
	default:
		return EIO;
	}
}

static const char *curl_what(CURLcode code)
{
	switch (code) {
	case CURLE_COULDNT_RESOLVE_HOST:
		return "cannot resolve host";
	case CURLE_COULDNT_CONNECT:
		return "cannot connect";
	case CURLE_OPERATION_TIMEDOUT:
		return "timed out";
	case CURLE_PARTIAL_FILE:
		return "connection closed before the whole response arrived (truncated)";
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CONNECT_ERROR:
		return "TLS handshake failed (use --insecure-registry only for plain-HTTP test registries)";
	default:
		return "network error";
	}
}

int reg_curl_error(struct reg_client *c, CURLcode code, const char *url, struct lb_err **err)
{
	const char *detail = c->curl_err[0] ? c->curl_err : curl_easy_strerror(code);
	_cleanup_free_ char *origin = strdup(url);

	/* Name the host, not the whole URL: signed redirect URLs carry credentials in the query. */
	if (origin)
		origin[strcspn(origin, "?#")] = '\0';
	return reg_err(err, curl_errno(code), "registry %s: %s (%s): %s", c->display,
		       curl_what(code), origin ? origin : "", detail);
}
