/* Registry auth: the anonymous (or Basic-authenticated) Bearer token flow of the distribution
 * spec, tokens cached per registry + scope for this pull, and Basic credentials from a
 * Docker-style config.json. */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "registry_internal.h"
#include "lbbox/base/cleanup.h"
#include "lbbox/base/util.h"

void reg_challenge_clear(struct reg_challenge *ch)
{
	free(ch->scheme);
	free(ch->realm);
	free(ch->service);
	free(ch->scope);
	free(ch->error);
	*ch = (struct reg_challenge){0};
}

static void token_clear(struct reg_token *t)
{
	free(t->scope);
	free(t->token);
	*t = (struct reg_token){0};
}

void reg_auth_clear(struct reg_auth *a)
{
	free(a->basic);
	reg_challenge_clear(&a->bearer);
	for (size_t i = 0; i < a->n_tokens; i++)
		token_clear(&a->tokens[i]);
	*a = (struct reg_auth){0};
}

/* One auth-param value: a token, or a quoted string with backslash escapes. */
static const char *param_value(const char *p, char **out)
{
	size_t cap = strlen(p) + 1, n = 0;
	char *v = malloc(cap);

	if (!v)
		return NULL;
	if (*p == '"') {
		for (p++; *p && *p != '"'; p++) {
			if (*p == '\\' && p[1])
				p++;
			v[n++] = *p;
		}
		if (*p == '"')
			p++;
	} else {
		while (*p && *p != ',' && !isspace((unsigned char)*p))
			v[n++] = *p++;
	}
	v[n] = '\0';
	*out = v;
	return p;
}

static char **param_slot(struct reg_challenge *ch, const char *key, size_t n)
{
	static const struct {
		const char *name;
		size_t off;
	} keys[] = {
	    {"realm", offsetof(struct reg_challenge, realm)},
	    {"service", offsetof(struct reg_challenge, service)},
	    {"scope", offsetof(struct reg_challenge, scope)},
	    {"error", offsetof(struct reg_challenge, error)},
	};

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strlen(keys[i].name) == n && strncasecmp(keys[i].name, key, n) == 0)
			return (char **)((char *)ch + keys[i].off);
	return NULL;
}

/* `Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="..."`. */
int reg_challenge_parse(const char *header, struct reg_challenge *out, struct lb_err **err)
{
	struct reg_challenge ch = {0};
	const char *p = header + strspn(header, " \t");
	size_t n = strcspn(p, " \t");

	if (!n || !(ch.scheme = strndup(p, n)))
		return lb_err_set(err, EPROTO, "empty WWW-Authenticate challenge");
	for (p += n; *p;) {
		p += strspn(p, " \t,");
		size_t k = strcspn(p, "= \t,");
		if (!k || p[k] != '=')
			break;
		char *v = NULL, **slot = param_slot(&ch, p, k);
		if (!(p = param_value(p + k + 1, &v))) {
			reg_challenge_clear(&ch);
			return lb_err_set(err, ENOMEM, "parse WWW-Authenticate");
		}
		if (slot && !*slot)
			*slot = v;
		else
			free(v);
	}
	*out = ch;
	return 0;
}

static struct reg_token *token_find(struct reg_auth *a, const char *scope)
{
	for (size_t i = 0; i < a->n_tokens; i++)
		if (strcmp(a->tokens[i].scope, scope) == 0)
			return &a->tokens[i];
	return NULL;
}

static int token_store(struct reg_auth *a, const char *scope, const char *token, long ttl,
		       uint64_t issued_ns, struct lb_err **err)
{
	struct reg_token *t = token_find(a, scope);

	if (!t && a->n_tokens == REG_MAX_TOKENS)
		token_clear(t = &a->tokens[0]); /* a pull uses one or two scopes: evict any */
	else if (!t)
		t = &a->tokens[a->n_tokens++];
	else
		token_clear(t);
	t->scope = strdup(scope);
	t->token = strdup(token);
	t->expires_ns = issued_ns + (uint64_t)ttl * 1000000000ull;
	if (!t->scope || !t->token)
		return lb_err_set(err, ENOMEM, "token cache");
	return 0;
}

static int token_parse(const char *buf, size_t len, const char **token, long *ttl, json_t **doc,
		       struct lb_err **err)
{
	json_t *j = json_loadb(buf, len, 0, NULL);
	json_t *t = json_object_get(j, "token");
	json_t *exp = json_object_get(j, "expires_in");

	/* Docker Hub sends both; OAuth2-style servers only access_token. */
	if (!json_is_string(t) || !*json_string_value(t))
		t = json_object_get(j, "access_token");
	if (!json_is_string(t) || !*json_string_value(t)) {
		json_decref(j);
		return lb_err_set(err, 0, "token response holds no token");
	}
	*token = json_string_value(t);
	*ttl = json_is_integer(exp) && json_integer_value(exp) > 0 ? (long)json_integer_value(exp)
								   : REG_TOKEN_DEFAULT_TTL;
	*doc = j;
	return 0;
}

static char *token_url(struct reg_client *c, const char *scope)
{
	const struct reg_challenge *ch = &c->auth.bearer;
	char *svc = ch->service ? curl_easy_escape(c->curl, ch->service, 0) : NULL;
	char *sc = curl_easy_escape(c->curl, scope, 0);
	char *url = NULL;

	if (sc &&
	    asprintf(&url, "%s%s%s%s%sscope=%s", ch->realm, strchr(ch->realm, '?') ? "&" : "?",
		     svc ? "service=" : "", svc ? svc : "", svc ? "&" : "", sc) < 0)
		url = NULL;
	curl_free(svc);
	curl_free(sc);
	return url;
}

static int basic_header(struct reg_client *c, char **out, struct lb_err **err)
{
	if (asprintf(out, "Authorization: Basic %s", c->auth.basic) < 0)
		return lb_err_set(err, ENOMEM, "auth header");
	return 0;
}

static int token_fetch(struct reg_client *c, const char *scope, struct lb_err **err)
{
	_cleanup_free_ char *url = token_url(c, scope), *basic = NULL;
	struct reg_sink sink = {.max = REG_TOKEN_MAX};
	struct reg_response resp = {0};
	json_t *doc = NULL;
	const char *token = NULL;
	long ttl = REG_TOKEN_DEFAULT_TTL;
	uint64_t start = lb_now_ns();
	int r = -1;

	if (!url)
		return lb_err_set(err, ENOMEM, "token URL");
	/* Credentials, when configured, go to the token service: that is where they are checked. */
	if (c->auth.basic && basic_header(c, &basic, err) < 0)
		return -1;
	if (reg_request(c, url, "application/json", basic, &sink, &resp, err) < 0)
		goto out;
	if (resp.status < 200 || resp.status >= 300) {
		reg_status_error(c, &resp, "token", err);
		goto out;
	}
	if (token_parse(sink.buf ? sink.buf : "", sink.len, &token, &ttl, &doc, err) < 0) {
		lb_err_wrap(err, "registry %s: token from %s", c->display, c->auth.bearer.realm);
		goto out;
	}
	r = token_store(&c->auth, scope, token, ttl, start, err);
out:
	json_decref(doc);
	free(sink.buf);
	reg_response_clear(&resp);
	return r;
}

static const char *bearer_scope(struct reg_client *c, char **owned)
{
	if (c->auth.bearer.scope)
		return c->auth.bearer.scope;
	if (asprintf(owned, "repository:%s:pull", c->repository) < 0)
		return NULL;
	return *owned;
}

int reg_auth_header(struct reg_client *c, char **header, struct lb_err **err)
{
	_cleanup_free_ char *own = NULL;
	const char *scope;
	struct reg_token *t;

	*header = NULL;
	if (c->auth.use_basic && c->auth.basic)
		return basic_header(c, header, err);
	if (!c->auth.have_bearer)
		return 0;
	if (!(scope = bearer_scope(c, &own)))
		return lb_err_set(err, ENOMEM, "token scope");
	t = token_find(&c->auth, scope);
	/* Expired: refresh before asking, rather than collect a 401 first. */
	if ((!t || lb_now_ns() >= t->expires_ns) && token_fetch(c, scope, err) < 0)
		return -1;
	t = token_find(&c->auth, scope);
	if (asprintf(header, "Authorization: Bearer %s", t->token) < 0)
		return lb_err_set(err, ENOMEM, "auth header");
	return 0;
}

static void token_drop(struct reg_auth *a, const char *scope)
{
	struct reg_token *t = scope ? token_find(a, scope) : NULL;

	if (t)
		t->expires_ns = 0;
}

int reg_auth_challenged(struct reg_client *c, const struct reg_response *resp, bool *retry,
			struct lb_err **err)
{
	struct reg_challenge ch = {0};
	_cleanup_free_ char *own = NULL;

	*retry = false;
	if (!resp->www_authenticate || reg_challenge_parse(resp->www_authenticate, &ch, NULL) < 0)
		return 0;
	if (strcasecmp(ch.scheme, "Basic") == 0) {
		*retry = c->auth.basic && !c->auth.use_basic;
		c->auth.use_basic = c->auth.basic != NULL;
		reg_challenge_clear(&ch);
		return 0;
	}
	if (strcasecmp(ch.scheme, "Bearer") != 0 || !ch.realm) {
		reg_challenge_clear(&ch);
		return 0;
	}
	/* The token we sent (if any) was refused: whatever its expiry said, fetch another. */
	token_drop(&c->auth, bearer_scope(c, &own));
	reg_challenge_clear(&c->auth.bearer);
	c->auth.bearer = ch;
	c->auth.have_bearer = true;
	token_drop(&c->auth, ch.scope);
	*retry = true;
	return 0;
}
