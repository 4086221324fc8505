/*
 * Image reference grammar, after distribution/reference (what docker and podman use):
 *   [domain/]path[:tag][@digest]
 * The first component is a domain only when it looks like one (has a '.' or ':', is "localhost" or
 * a bracketed IPv6 address); otherwise the image lives on docker.io and single names get
 * "library/". Unlike docker, an upper-case first component is an error rather than a registry
 * host, so a typo such as "UPPER/case" fails clearly instead of trying to resolve "UPPER".
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/image/ref.h"

#define REF_MAX_LEN  1024 /* whole input; far above any valid reference */
#define NAME_MAX_LEN 255  /* domain + "/" + path, as distribution/reference */
#define TAG_MAX_LEN  128

static int ref_error(struct lb_err **err, const char *ref, const char *why)
{
	return lb_err_set(err, 0, "invalid image reference '%s': %s", ref, why);
}

static bool is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_word(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/* One path component: [a-z0-9]+((\.|_|__|-+)[a-z0-9]+)* over [s, s + n). */
static bool path_component_ok(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		if (!is_lower_alnum(s[i]))
			return false;
		while (i < n && is_lower_alnum(s[i]))
			i++;
		if (i == n)
			return true;
		size_t start = i;
		char sep = s[i];
		while (i < n && s[i] == sep && (sep == '-' || i - start < 2))
			i++;
		if (sep != '-' && sep != '_' && sep != '.')
			return false;
		if (sep == '.' && i - start != 1)
			return false;
		if (i == n)
			return false; /* trailing separator */
	}
	return false; /* empty component */
}

static int check_path(const char *ref, const char *path, struct lb_err **err)
{
	for (const char *p = path; *p; p++)
		if (isupper((unsigned char)*p))
			return ref_error(err, ref, "repository name must be lowercase");
	for (const char *p = path;;) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		if (n == 0)
			return ref_error(err, ref, "empty path component");
		if (!path_component_ok(p, n))
			return ref_error(err, ref, "invalid repository name");
		if (!slash)
			return 0;
		p = slash + 1;
	}
}

/* Host name components: [A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])? separated by dots. */
static bool hostname_ok(const char *s, size_t n)
{
	size_t start = 0;

	for (size_t i = 0; i <= n; i++) {
		if (i < n && s[i] != '.') {
			if (!isalnum((unsigned char)s[i]) && s[i] != '-')
				return false;
			continue;
		}
		if (i == start || s[start] == '-' || s[i - 1] == '-')
			return false;
		start = i + 1;
	}
	return n > 0;
}

static bool domain_ok(const char *d)
{
	const char *host_end;
	size_t hn;

	if (*d == '[') {
		const char *close = strchr(d, ']');
		char addr[INET6_ADDRSTRLEN + 1];
		struct in6_addr a6;
		hn = close ? (size_t)(close - d - 1) : 0;
		if (!close || hn == 0 || hn >= sizeof(addr))
			return false;
		memcpy(addr, d + 1, hn);
		addr[hn] = '\0';
		if (inet_pton(AF_INET6, addr, &a6) != 1)
			return false;
		host_end = close + 1;
	} else {
		host_end = d + strcspn(d, ":");
		if (!hostname_ok(d, (size_t)(host_end - d)))
			return false;
	}
	if (!*host_end)
		return true;
	if (*host_end != ':' || !host_end[1] || strlen(host_end + 1) > 5)
		return false;
	for (const char *p = host_end + 1; *p; p++)
		if (!isdigit((unsigned char)*p))
			return false;
	return true;
}

static int check_tag(const char *ref, const char *tag, struct lb_err **err)
{
	size_t n = strlen(tag);

	if (n == 0 || n > TAG_MAX_LEN || !is_word(tag[0]))
		return ref_error(err, ref, "invalid tag");
	for (size_t i = 1; i < n; i++)
		if (!is_word(tag[i]) && tag[i] != '.' && tag[i] != '-')
			return ref_error(err, ref, "invalid tag");
	return 0;
}

static int check_digest(const char *ref, const char *digest, struct lb_err **err)
{
	const char *colon = strchr(digest, ':');

	if (!colon || colon == digest)
		return ref_error(err, ref, "invalid digest");
	if ((size_t)(colon - digest) != 6 || strncmp(digest, "sha256", 6) != 0)
		return lb_err_set(
		    err, 0,
		    "invalid image reference '%s': unsupported digest algorithm '%.*s' "
		    "(only sha256)",
		    ref, (int)(colon - digest), digest);
	const char *hex = colon + 1;
	if (strlen(hex) != 64)
		return ref_error(err, ref, "invalid sha256 digest: want 64 hex digits");
	for (const char *p = hex; *p; p++)
		if (!isdigit((unsigned char)*p) && !(*p >= 'a' && *p <= 'f'))
			return ref_error(err, ref, "invalid sha256 digest: want lowercase hex");
	return 0;
}

/* The first component names a registry only when it cannot be a repository path component. */
static bool looks_like_domain(const char *first, size_t n)
{
	if (n == 9 && strncmp(first, "localhost", 9) == 0)
		return true;
	for (size_t i = 0; i < n; i++)
		if (first[i] == '.' || first[i] == ':' || first[i] == '[')
			return true;
	return false;
}

/* Splits name into domain and path, applying docker.io's defaults. */
static int split_name(const char *ref, const char *name, struct lb_image_ref *r,
		      struct lb_err **err)
{
	const char *slash = strchr(name, '/');

	if (slash && looks_like_domain(name, (size_t)(slash - name))) {
		r->domain = strndup(name, (size_t)(slash - name));
		name = slash + 1;
		if (r->domain && !domain_ok(r->domain))
			return ref_error(err, ref, "invalid registry host");
		if (r->domain && strcmp(r->domain, "index.docker.io") == 0) {
			free(r->domain);
			r->domain = strdup(LB_IMAGE_REF_DEFAULT_DOMAIN);
		}
	} else {
		r->domain = strdup(LB_IMAGE_REF_DEFAULT_DOMAIN);
	}
	if (!r->domain)
		return lb_err_set(err, ENOMEM, "parse image reference");
	bool official = strcmp(r->domain, LB_IMAGE_REF_DEFAULT_DOMAIN) == 0 && !strchr(name, '/');
	if (asprintf(&r->path, "%s%s", official ? "library/" : "", name) < 0) {
		r->path = NULL;
		return lb_err_set(err, ENOMEM, "parse image reference");
	}
	if (check_path(ref, r->path, err) < 0)
		return -1;
	if (strlen(r->domain) + 1 + strlen(r->path) > NAME_MAX_LEN)
		return ref_error(err, ref, "name longer than 255 characters");
	return 0;
}

/* Splits off "@digest" and ":tag" (a colon after the last slash; before it, it is a port). */
static int split_suffixes(const char *ref, char *buf, struct lb_image_ref *r, struct lb_err **err)
{
	char *at = strchr(buf, '@');
	if (at) {
		*at = '\0';
		if (check_digest(ref, at + 1, err) < 0)
			return -1;
		if (!(r->digest = strdup(at + 1)))
			return lb_err_set(err, ENOMEM, "parse image reference");
	}
	char *last_slash = strrchr(buf, '/');
	char *colon = strrchr(last_slash ? last_slash : buf, ':');
	if (colon) {
		*colon = '\0';
		if (check_tag(ref, colon + 1, err) < 0)
			return -1;
		r->tag = strdup(colon + 1);
	} else if (!r->digest) {
		r->tag = strdup(LB_IMAGE_REF_DEFAULT_TAG);
	}
	if ((colon || !r->digest) && !r->tag)
		return lb_err_set(err, ENOMEM, "parse image reference");
	return 0;
}

int lb_image_ref_parse(const char *s, struct lb_image_ref *out, struct lb_err **err)
{
	struct lb_image_ref r = {0};

	if (!s || !*s)
		return ref_error(err, "", "empty reference");
	if (strlen(s) > REF_MAX_LEN)
		return lb_err_set(err, 0, "invalid image reference '%.64s...': too long", s);
	for (const char *p = s; *p; p++)
		if (!isgraph((unsigned char)*p))
			return ref_error(err, s, "contains whitespace or control characters");
	_cleanup_free_ char *buf = strdup(s);
	if (!buf)
		return lb_err_set(err, ENOMEM, "parse image reference");
	if (split_suffixes(s, buf, &r, err) < 0 || (!*buf && ref_error(err, s, "missing name")) ||
	    split_name(s, buf, &r, err) < 0) {
		lb_image_ref_clear(&r);
		return -1;
	}
	*out = r;
	return 0;
}

void lb_image_ref_clear(struct lb_image_ref *ref)
{
	free(ref->domain);
	free(ref->path);
	free(ref->tag);
	free(ref->digest);
	*ref = (struct lb_image_ref){0};
}

int lb_image_ref_canonical(const struct lb_image_ref *ref, char **out, struct lb_err **err)
{
	char *s = NULL;

	if (asprintf(&s, "%s/%s%s%s%s%s", ref->domain, ref->path, ref->tag ? ":" : "",
		     ref->tag ? ref->tag : "", ref->digest ? "@" : "",
		     ref->digest ? ref->digest : "") < 0)
		return lb_err_set(err, ENOMEM, "format image reference");
	*out = s;
	return 0;
}

const char *lb_image_ref_api_host(const struct lb_image_ref *ref)
{
	if (strcmp(ref->domain, LB_IMAGE_REF_DEFAULT_DOMAIN) == 0)
		return "registry-1.docker.io";
	return ref->domain;
}

const char *lb_image_ref_api_repository(const struct lb_image_ref *ref)
{
	return ref->path;
}

const char *lb_image_ref_manifest_ref(const struct lb_image_ref *ref)
{
	return ref->digest ? ref->digest : ref->tag;
}

/* A reference naming no registry ("alpine", "org/app:1"): docker.io was only the default. */
static bool ref_is_short(const char *s)
{
	const char *slash = strchr(s, '/');
	return !slash || !looks_like_domain(s, (size_t)(slash - s));
}

/* A short reference as a local one: "org/app:1" -> "localhost/org/app:1" (":latest" added when
 * neither tag nor digest was given). r is s parsed. */
static int local_form(const char *s, const struct lb_image_ref *r, char **out, struct lb_err **err)
{
	/* parse added "library/" exactly when the name had no '/' (tags and digests have none) */
	const char *path = strchr(s, '/') ? r->path : r->path + strlen("library/");
	struct lb_image_ref local = {.domain = (char *)"localhost",
				     .path = (char *)path,
				     .tag = r->tag,
				     .digest = r->digest};
	if (strlen("localhost/") + strlen(path) > NAME_MAX_LEN)
		return ref_error(err, s, "name longer than 255 characters");
	return lb_image_ref_canonical(&local, out, err);
}

int lb_image_name(const char *arg, char **out, struct lb_err **err)
{
	struct lb_image_ref ref;
	if (strncmp(arg, "sha256:", 7) == 0) {
		*out = strdup(arg);
		return *out ? 0 : lb_err_set(err, ENOMEM, "image name");
	}
	if (lb_image_ref_parse(arg, &ref, err) < 0)
		return -1;
	int r = 0;
	if (ref_is_short(arg))
		r = (*out = strdup(arg)) ? 0 : lb_err_set(err, ENOMEM, "image name");
	else
		r = lb_image_ref_canonical(&ref, out, err);
	lb_image_ref_clear(&ref);
	return r;
}

int lb_image_ref_candidates(const char *s, char *out[3], struct lb_err **err)
{
	struct lb_image_ref ref;
	char *v[3] = {NULL, NULL, NULL};
	if (lb_image_ref_parse(s, &ref, err) < 0)
		return -1;
	int r = 0;
	if (ref_is_short(s))
		r = local_form(s, &ref, &v[0], err);
	if (r == 0)
		r = lb_image_ref_canonical(&ref, &v[v[0] ? 1 : 0], err);
	lb_image_ref_clear(&ref);
	if (r < 0) {
		free(v[0]);
		return -1;
	}
	memcpy(out, v, sizeof(v));
	return 0;
}

int lb_image_tag_name(const char *s, char **out, struct lb_err **err)
{
	struct lb_image_ref ref;
	if (lb_image_ref_parse(s, &ref, err) < 0)
		return -1;
	int r = ref_is_short(s) ? local_form(s, &ref, out, err)
				: lb_image_ref_canonical(&ref, out, err);
	lb_image_ref_clear(&ref);
	return r;
}
