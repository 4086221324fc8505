/* Shared between the registry client's files: the HTTP client, its auth state, error mapping. */
#ifndef LBBOX_REGISTRY_INTERNAL_H
#define LBBOX_REGISTRY_INTERNAL_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stdint.h>

#include "lbbox/image/registry.h"

/* Bounds on what a registry may make lbbox do. */
#define REG_MAX_REDIRECTS 5
#define REG_ERRBODY_MAX	  8192
#define REG_TOKEN_MAX	  (64u << 10)
#define REG_MAX_TOKENS	  8
/* Token lifetime when the token endpoint gives none (the distribution spec's default). */
#define REG_TOKEN_DEFAULT_TTL 60

/* A parsed WWW-Authenticate challenge. */
struct reg_challenge {
	char *scheme; /* "Bearer" or "Basic" */
	char *realm, *service, *scope, *error;
};

struct reg_token {
	char *scope;
	char *token;
	uint64_t expires_ns; /* lb_now_ns() clock */
};

struct reg_auth {
	char *basic;		     /* base64 "user:pass" from the auth file; NULL: anonymous */
	struct reg_challenge bearer; /* last Bearer challenge: where tokens come from */
	bool have_bearer;
	bool use_basic; /* the registry challenged with Basic */
	struct reg_token tokens[REG_MAX_TOKENS];
	size_t n_tokens;
};

/* Where a response body goes: memory (bounded) or a blob writer (exact size known). */
struct reg_sink {
	char *buf;
	size_t len, max;
	struct lb_blob_writer *w;
	uint64_t want_size; /* blob sinks: the descriptor's size, checked first */
	bool size_known;    /* memory sinks: a descriptor size is known too */
	struct lb_err *err; /* why the write callback stopped the transfer */
	uint64_t offset;    /* blob sinks: bytes the writer already has; asked for with Range */
	bool restart;	    /* the registry ignored the Range: the writer must start over */
	struct lb_image_progress *progress;
	const char *what; /* for messages; set by reg_get */
};

struct reg_response {
	long status;
	char *www_authenticate;
	char *retry_after;
	char *content_type;
	char *docker_digest;
	char *redirect; /* absolute Location of a 3xx */
	char errbody[REG_ERRBODY_MAX + 1];
	size_t errlen;
	/* The failure may pass on a second try: the connection broke off, or a 5xx. */
	bool transient;
};

struct reg_client {
	CURL *curl;
	const struct lb_pull_opts *opts;
	char *host;	  /* API host[:port] */
	char *display;	  /* the reference's domain, for messages */
	char *repository; /* "library/alpine" */
	const char *scheme;
	struct reg_auth auth;
	char curl_err[CURL_ERROR_SIZE];
};

int reg_client_init(struct reg_client *c, const char *host, const char *display,
		    const char *repository, const struct lb_pull_opts *opts, struct lb_err **err);
void reg_client_clear(struct reg_client *c);

/* GET path ("/v2/...") on the registry, authenticating and following redirects; the 2xx body goes
 * to sink. Any other final status is turned into an error by reg_status_error. */
int reg_get(struct reg_client *c, const char *path, const char *accept, struct reg_sink *sink,
	    struct reg_response *resp, const char *what, struct lb_err **err);
/* One request to an absolute URL, no redirects followed; auth NULL: no Authorization header. */
int reg_request(struct reg_client *c, const char *url, const char *accept, const char *auth,
		struct reg_sink *sink, struct reg_response *resp, struct lb_err **err);
void reg_response_clear(struct reg_response *r);
/* Whether url points at the registry itself (same scheme, host and port). */
bool reg_same_origin(struct reg_client *c, const char *url);

/* Auth: "Authorization: ..." header for the next request (NULL: none); handling of a 401. */
int reg_auth_header(struct reg_client *c, char **header, struct lb_err **err);
/* After a 401: learns the challenge and fetches a fresh token. *retry false: nothing new to try. */
int reg_auth_challenged(struct reg_client *c, const struct reg_response *resp, bool *retry,
			struct lb_err **err);
int reg_challenge_parse(const char *header, struct reg_challenge *out, struct lb_err **err);
void reg_challenge_clear(struct reg_challenge *ch);
/* Basic credentials for host from a Docker-style config.json; *out NULL when none. */
int reg_auth_file_lookup(const char *path, const char *host, char **out, struct lb_err **err);
void reg_auth_clear(struct reg_auth *a);

/* Errors: a final non-2xx response, a failed transfer. what: "manifest latest", "blob sha256:..".
 */
int reg_status_error(struct reg_client *c, const struct reg_response *resp, const char *what,
		     struct lb_err **err);
int reg_curl_error(struct reg_client *c, CURLcode code, const char *url, struct lb_err **err);
/* Seconds until the time Retry-After names (delta seconds or an HTTP date); -1 when unparsable. */
long reg_retry_after_seconds(const char *value);

#endif
