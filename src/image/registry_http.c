/* HTTP for the registry client: one libcurl easy handle per pull (connections are reused), bodies
 * streamed into bounded memory or straight into a store blob writer, redirects followed by hand so
 * that Authorization never reaches another host. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "registry_internal.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/image/store.h"

bool lb_registry_insecure(const struct lb_pull_opts *opts, const char *host)
{
	for (const char *const *h = opts ? opts->insecure_registries : NULL; h && *h; h++)
		if (strcasecmp(*h, host) == 0)
			return true;
	return false;
}

#define DEFAULT_CONNECT_TIMEOUT_S 30
#define DEFAULT_STALL_TIMEOUT_S	  60

/* One transfer in flight: where its body goes depends on the status, known at the first byte. */
struct xfer {
	struct reg_client *c;
	struct reg_sink *sink;
	struct reg_response *resp;
	bool started, ok;
};

static bool is_2xx(long status)
{
	return status >= 200 && status < 300;
}

static bool is_redirect(long status)
{
	return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

static void set_common_opts(struct reg_client *c)
{
	const struct lb_pull_opts *o = c->opts;
	CURL *h = c->curl;
	long connect = o->connect_timeout_s > 0 ? o->connect_timeout_s : DEFAULT_CONNECT_TIMEOUT_S;
	long stall = o->stall_timeout_s > 0 ? o->stall_timeout_s : DEFAULT_STALL_TIMEOUT_S;

	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->curl_err);
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L); /* see fetch_following() */
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, connect);
	/* Layers can take long; a transfer that stops moving cannot. */
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, stall);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "lbbox");
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	if (o->ca_file)
		curl_easy_setopt(h, CURLOPT_CAINFO, o->ca_file);
}

int reg_client_init(struct reg_client *c, const char *host, const char *display,
		    const char *repository, const struct lb_pull_opts *opts, struct lb_err **err)
{
	*c = (struct reg_client){.opts = opts};
	c->scheme = lb_registry_insecure(opts, host) || lb_registry_insecure(opts, display)
			? "http"
			: "https";
	c->host = strdup(host);
	c->display = strdup(display);
	c->repository = strdup(repository);
	if (!c->host || !c->display || !c->repository)
		return lb_err_set(err, ENOMEM, "registry client");
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return lb_err_set(err, 0, "libcurl initialisation failed");
	c->curl = curl_easy_init();
	if (!c->curl)
		return lb_err_set(err, ENOMEM, "libcurl handle");
	set_common_opts(c);
	return 0;
}

void reg_client_clear(struct reg_client *c)
{
	if (c->curl)
		curl_easy_cleanup(c->curl);
	reg_auth_clear(&c->auth);
	free(c->host);
	free(c->display);
	free(c->repository);
	*c = (struct reg_client){0};
}

void reg_response_clear(struct reg_response *r)
{
	free(r->www_authenticate);
	free(r->retry_after);
	free(r->content_type);
	free(r->docker_digest);
	free(r->redirect);
	*r = (struct reg_response){0};
}

/* Size first: a body whose announced length disagrees with the descriptor is refused unread. */
static int sink_check_length(struct xfer *x)
{
	struct reg_sink *s = x->sink;
	curl_off_t cl = -1;

	curl_easy_getinfo(x->c->curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
	if (cl < 0)
		return 0;
	if ((s->w || s->size_known) && (uint64_t)cl != s->want_size - s->offset)
		return lb_err_set(&s->err, 0, "registry announced %lld bytes, the descriptor %llu",
				  (long long)cl, (unsigned long long)s->want_size);
	if (!s->w && (uint64_t)cl > s->max)
		return lb_err_set(&s->err, EFBIG, "%lld bytes is over the limit of %zu",
				  (long long)cl, s->max);
	return 0;
}

static void sink_progress(struct reg_client *c, struct reg_sink *s, size_t len)
{
	if (!s->progress)
		return;
	s->progress->done += len;
	if (c->opts->progress)
		c->opts->progress(s->progress, c->opts->progress_ctx);
}

static int sink_write(struct reg_sink *s, const char *data, size_t len)
{
	if (s->w)
		return lb_blob_writer_write(s->w, data, len, &s->err);
	if (len > s->max - s->len)
		return lb_err_set(&s->err, EFBIG, "more than %zu bytes", s->max);
	char *b = realloc(s->buf, s->len + len + 1);
	if (!b)
		return lb_err_set(&s->err, ENOMEM, "response body");
	memcpy(b + s->len, data, len);
	s->buf = b;
	s->len += len;
	s->buf[s->len] = '\0';
	return 0;
}

static void errbody_append(struct reg_response *r, const char *data, size_t len)
{
	size_t n = len < REG_ERRBODY_MAX - r->errlen ? len : REG_ERRBODY_MAX - r->errlen;
	memcpy(r->errbody + r->errlen, data, n);
	r->errlen += n;
	r->errbody[r->errlen] = '\0';
}

static size_t write_cb(char *data, size_t size, size_t n, void *ctx)
{
	struct xfer *x = ctx;
	size_t len = size * n;

	if (!x->started) {
		x->started = true;
		curl_easy_getinfo(x->c->curl, CURLINFO_RESPONSE_CODE, &x->resp->status);
		x->ok = is_2xx(x->resp->status);
		/* asked for the rest and got the whole: the blob is read again from its start */
		if (x->ok && x->sink->offset && x->resp->status != 206) {
			x->sink->restart = true;
			lb_err_set(&x->sink->err, 0, "the registry ignored the Range request");
			return 0;
		}
		if (x->ok && sink_check_length(x) < 0)
			return 0;
	}
	if (!x->ok) {
		errbody_append(x->resp, data, len);
		return len;
	}
	if (sink_write(x->sink, data, len) < 0)
		return 0;
	sink_progress(x->c, x->sink, len);
	return len;
}

static char *header_dup(CURL *h, const char *name)
{
	struct curl_header *hd = NULL;

	if (curl_easy_header(h, name, 0, CURLH_HEADER, -1, &hd) != CURLHE_OK || !hd->value)
		return NULL;
	return strdup(hd->value);
}

static void collect_response(struct reg_client *c, struct reg_response *r)
{
	char *loc = NULL;

	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &r->status);
	r->www_authenticate = header_dup(c->curl, "WWW-Authenticate");
	r->retry_after = header_dup(c->curl, "Retry-After");
	r->content_type = header_dup(c->curl, "Content-Type");
	r->docker_digest = header_dup(c->curl, "Docker-Content-Digest");
	/* libcurl resolves a relative Location against the request URL even when not following. */
	if (curl_easy_getinfo(c->curl, CURLINFO_REDIRECT_URL, &loc) == CURLE_OK && loc)
		r->redirect = strdup(loc);
}

static int add_header(struct curl_slist **l, const char *h, struct lb_err **err)
{
	struct curl_slist *n = curl_slist_append(*l, h);
	if (!n) {
		curl_slist_free_all(*l);
		*l = NULL;
		return lb_err_set(err, ENOMEM, "request headers");
	}
	*l = n;
	return 0;
}

static int build_headers(const char *accept, const char *auth, uint64_t offset,
			 struct curl_slist **out, struct lb_err **err)
{
	_cleanup_free_ char *a = NULL, *range = NULL;
	struct curl_slist *l = NULL;

	if ((accept && asprintf(&a, "Accept: %s", accept) < 0) ||
	    (offset && asprintf(&range, "Range: bytes=%llu-", (unsigned long long)offset) < 0))
		return lb_err_set(err, ENOMEM, "request headers");
	if ((a && add_header(&l, a, err) < 0) || (auth && add_header(&l, auth, err) < 0) ||
	    (range && add_header(&l, range, err) < 0))
		return -1;
	*out = l;
	return 0;
}

/* Failures worth a second try: the connection broke off or stalled. */
static bool transient_curl(CURLcode rc)
{
	return rc == CURLE_PARTIAL_FILE || rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR ||
	       rc == CURLE_GOT_NOTHING || rc == CURLE_OPERATION_TIMEDOUT;
}

int reg_request(struct reg_client *c, const char *url, const char *accept, const char *auth,
		struct reg_sink *sink, struct reg_response *resp, struct lb_err **err)
{
	struct xfer x = {.c = c, .sink = sink, .resp = resp};
	struct curl_slist *hdrs = NULL;

	reg_response_clear(resp);
	if (build_headers(accept, auth, sink->offset, &hdrs, err) < 0)
		return -1;
	c->curl_err[0] = '\0';
	curl_easy_setopt(c->curl, CURLOPT_URL, url);
	curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, write_cb);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &x);
	CURLcode rc = curl_easy_perform(c->curl);
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(hdrs);
	if (sink->err) {
		if (err && !*err)
			*err = LB_TAKE_PTR(sink->err);
		lb_err_free(&sink->err);
		return lb_err_wrap(err, "registry %s: %s", c->display,
				   sink->what ? sink->what : "response");
	}
	if (rc != CURLE_OK) {
		resp->transient = transient_curl(rc);
		return reg_curl_error(c, rc, url, err);
	}
	collect_response(c, resp);
	/* An empty 2xx body never reached write_cb: check its length here. */
	if (!x.started && is_2xx(resp->status) && sink_check_length(&x) < 0) {
		if (err && !*err)
			*err = LB_TAKE_PTR(sink->err);
		lb_err_free(&sink->err);
		return lb_err_wrap(err, "registry %s: %s", c->display,
				   sink->what ? sink->what : "response");
	}
	return 0;
}

/* "scheme://host:port" of url, lowercased, with the scheme's default port filled in. */
static char *origin_of(const char *url)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL, *out = NULL;

	if (u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK &&
	    asprintf(&out, "%s://%s:%s", scheme, host, port) < 0)
		out = NULL;
	for (char *p = out; p && *p; p++)
		*p = (char)tolower((unsigned char)*p);
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_url_cleanup(u);
	return out;
}

bool reg_same_origin(struct reg_client *c, const char *url)
{
	_cleanup_free_ char *base = NULL, *a = NULL, *b = NULL;

	if (asprintf(&base, "%s://%s/", c->scheme, c->host) < 0)
		return false;
	a = origin_of(base);
	b = origin_of(url);
	return a && b && strcmp(a, b) == 0;
}

static int check_redirect(struct reg_client *c, const char *from, const char *to,
			  struct lb_err **err)
{
	/* A redirect must not silently drop TLS; an insecure registry is plain HTTP already. */
	if (strncasecmp(from, "https:", 6) == 0 && strncasecmp(to, "https:", 6) != 0)
		return lb_err_set(err, EPROTO, "registry %s redirected from HTTPS to '%s'",
				  c->display, to);
	return 0;
}

/* Follows redirects, sending auth only while the URL stays on the registry's own origin. */
static int fetch_following(struct reg_client *c, const char *start, const char *accept,
			   const char *auth, struct reg_sink *sink, struct reg_response *resp,
			   struct lb_err **err)
{
	_cleanup_free_ char *url = strdup(start);
	bool send_auth = auth != NULL;

	for (int hops = 0; url; hops++) {
		if (reg_request(c, url, accept, send_auth ? auth : NULL, sink, resp, err) < 0)
			return -1;
		if (!is_redirect(resp->status))
			return 0;
		if (hops >= REG_MAX_REDIRECTS)
			return lb_err_set(err, ELOOP, "registry %s: too many redirects",
					  c->display);
		if (!resp->redirect)
			return lb_err_set(err, EPROTO, "registry %s: redirect without a Location",
					  c->display);
		if (check_redirect(c, url, resp->redirect, err) < 0)
			return -1;
		free(url);
		url = LB_TAKE_PTR(resp->redirect);
		send_auth = send_auth && reg_same_origin(c, url);
	}
	return lb_err_set(err, ENOMEM, "redirect");
}

int reg_get(struct reg_client *c, const char *path, const char *accept, struct reg_sink *sink,
	    struct reg_response *resp, const char *what, struct lb_err **err)
{
	_cleanup_free_ char *url = NULL;

	if (asprintf(&url, "%s://%s%s", c->scheme, c->host, path) < 0)
		return lb_err_set(err, ENOMEM, "registry URL");
	sink->what = what;
	/* The second attempt carries what a 401 taught us: a fresh token or Basic credentials. */
	for (int attempt = 0; attempt < 2; attempt++) {
		_cleanup_free_ char *auth = NULL;
		bool retry = false;

		if (reg_auth_header(c, &auth, err) < 0 ||
		    fetch_following(c, url, accept, auth, sink, resp, err) < 0)
			return -1;
		if (resp->status != 401 || attempt > 0)
			break;
		if (reg_auth_challenged(c, resp, &retry, err) < 0)
			return -1;
		if (!retry)
			break;
	}
	if (!is_2xx(resp->status)) {
		resp->transient = resp->status >= 500;
		return reg_status_error(c, resp, what, err);
	}
	return 0;
}
