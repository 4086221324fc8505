/* Unit tests for image reference parsing and normalisation (docker / podman compatible). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "lbbox/image/ref.h"

#define D64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

Test(image_ref, good)
{
	struct {
		const char *in, *canonical, *host, *repo, *manifest_ref;
	} ok[] = {
	    {"alpine", "docker.io/library/alpine:latest", "registry-1.docker.io", "library/alpine",
	     "latest"},
	    {"alpine:3.20", "docker.io/library/alpine:3.20", "registry-1.docker.io",
	     "library/alpine", "3.20"},
	    {"library/alpine", "docker.io/library/alpine:latest", "registry-1.docker.io",
	     "library/alpine", "latest"},
	    {"docker.io/alpine", "docker.io/library/alpine:latest", "registry-1.docker.io",
	     "library/alpine", "latest"},
	    {"index.docker.io/library/alpine:edge", "docker.io/library/alpine:edge",
	     "registry-1.docker.io", "library/alpine", "edge"},
	    {"rockchin/langbot-sandbox:latest", "docker.io/rockchin/langbot-sandbox:latest",
	     "registry-1.docker.io", "rockchin/langbot-sandbox", "latest"},
	    {"python:3.11-slim", "docker.io/library/python:3.11-slim", "registry-1.docker.io",
	     "library/python", "3.11-slim"},
	    {"ghcr.io/org/img@sha256:" D64, "ghcr.io/org/img@sha256:" D64, "ghcr.io", "org/img",
	     "sha256:" D64},
	    {"ghcr.io/org/img:v1@sha256:" D64, "ghcr.io/org/img:v1@sha256:" D64, "ghcr.io",
	     "org/img", "sha256:" D64},
	    {"localhost:5000/a/b:tag", "localhost:5000/a/b:tag", "localhost:5000", "a/b", "tag"},
	    {"localhost/x", "localhost/x:latest", "localhost", "x", "latest"},
	    {"registry:5000/x@sha256:" D64, "registry:5000/x@sha256:" D64, "registry:5000", "x",
	     "sha256:" D64},
	    {"127.0.0.1:5000/x:y", "127.0.0.1:5000/x:y", "127.0.0.1:5000", "x", "y"},
	    {"[::1]:5000/x", "[::1]:5000/x:latest", "[::1]:5000", "x", "latest"},
	    {"[fe80::1]/x/y", "[fe80::1]/x/y:latest", "[fe80::1]", "x/y", "latest"},
	    {"a/b__c/d-e.f:T_1.x-y", "docker.io/a/b__c/d-e.f:T_1.x-y", "registry-1.docker.io",
	     "a/b__c/d-e.f", "T_1.x-y"},
	    {"my-reg.example.com/a--b/c_d", "my-reg.example.com/a--b/c_d:latest",
	     "my-reg.example.com", "a--b/c_d", "latest"},
	    /* docker reads this as the image "localhost" with tag "5000" */
	    {"localhost:5000", "docker.io/library/localhost:5000", "registry-1.docker.io",
	     "library/localhost", "5000"},
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct lb_image_ref r = {0};
		struct lb_err *err = NULL;
		char *s = NULL;
		cr_assert_eq(lb_image_ref_parse(ok[i].in, &r, &err), 0, "%s: %s", ok[i].in,
			     err ? err->msg : "");
		cr_assert_eq(lb_image_ref_canonical(&r, &s, &err), 0);
		cr_assert_str_eq(s, ok[i].canonical, "%s", ok[i].in);
		cr_assert_str_eq(lb_image_ref_api_host(&r), ok[i].host, "%s", ok[i].in);
		cr_assert_str_eq(lb_image_ref_api_repository(&r), ok[i].repo, "%s", ok[i].in);
		cr_assert_str_eq(lb_image_ref_manifest_ref(&r), ok[i].manifest_ref, "%s", ok[i].in);
		free(s);
		/* the canonical form parses to itself */
		struct lb_image_ref again = {0};
		char *s2 = NULL;
		cr_assert_eq(lb_image_ref_parse(ok[i].canonical, &again, &err), 0);
		cr_assert_eq(lb_image_ref_canonical(&again, &s2, &err), 0);
		cr_assert_str_eq(s2, ok[i].canonical);
		free(s2);
		lb_image_ref_clear(&again);
		lb_image_ref_clear(&r);
	}
}

Test(image_ref, digest_only_has_no_tag)
{
	struct lb_image_ref r = {0};
	struct lb_err *err = NULL;
	cr_assert_eq(lb_image_ref_parse("alpine@sha256:" D64, &r, &err), 0);
	cr_assert_null(r.tag);
	cr_assert_str_eq(r.digest, "sha256:" D64);
	cr_assert_str_eq(r.domain, "docker.io");
	cr_assert_str_eq(r.path, "library/alpine");
	lb_image_ref_clear(&r);
}

Test(image_ref, bad)
{
	static char long_tag[200];
	memset(long_tag, 0, sizeof(long_tag));
	strcpy(long_tag, "alpine:");
	memset(long_tag + 7, 'a', 129);
	struct {
		const char *in, *want;
	} bad[] = {
	    {"", "empty"},
	    {"UPPER/case", "must be lowercase"},
	    {"ghcr.io/Org/img", "must be lowercase"},
	    {"Alpine", "must be lowercase"},
	    {"a:b:c", "invalid repository name"},
	    {"@sha256:short", "invalid sha256 digest"},
	    {"alpine@sha256:short", "invalid sha256 digest"},
	    {"alpine@sha256:"
	     "0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF",
	     "lowercase hex"},
	    {"alpine@sha512:" D64 D64, "unsupported digest algorithm 'sha512'"},
	    {"alpine@md5:abc", "unsupported digest algorithm"},
	    {"alpine@" D64, "invalid digest"},
	    {"@sha256:" D64, "missing name"},
	    {"alpine/", "empty path component"},
	    {"localhost:5000/", "empty path component"},
	    {"a//b", "empty path component"},
	    {"alpine:", "invalid tag"},
	    {":tag", "missing name"},
	    {"alpine:-x", "invalid tag"},
	    {long_tag, "invalid tag"},
	    {"a b", "whitespace"},
	    {"-alpine", "invalid repository name"},
	    {"a..b", "invalid repository name"},
	    {"a___b", "invalid repository name"},
	    {"a-/b", "invalid repository name"},
	    {"[::1/x", "invalid registry host"},
	    {"[zz]:5000/x", "invalid registry host"},
	    {"host:port/x", "invalid registry host"},
	    {"-bad.example.com/x", "invalid registry host"},
	    {"a@b@sha256:" D64, "invalid"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct lb_image_ref r = {.domain = (char *)"untouched"};
		struct lb_err *err = NULL;
		cr_assert_lt(lb_image_ref_parse(bad[i].in, &r, &err), 0, "'%s' accepted",
			     bad[i].in);
		cr_assert_not_null(err);
		cr_assert(strstr(err->msg, bad[i].want), "'%s': '%s' lacks '%s'", bad[i].in,
			  err->msg, bad[i].want);
		/* one line naming the reference */
		cr_assert(strstr(err->msg, "invalid image reference '"), "%s", err->msg);
		if (strlen(bad[i].in) < 100)
			cr_assert(strstr(err->msg, bad[i].in), "%s", err->msg);
		cr_assert_null(strchr(err->msg, '\n'));
		cr_assert_str_eq(r.domain, "untouched", "output touched on failure");
		lb_err_free(&err);
	}
}

/* lb_image_name keeps a short name as given, for the store's podman-order lookup. */
Test(image_ref, store_lookup_names)
{
	struct {
		const char *in, *name;
	} ok[] = {
	    {"alpine", "alpine"},
	    {"org/app:1", "org/app:1"},
	    {"3f2a1b", "3f2a1b"},
	    {"localhost/x", "localhost/x:latest"},
	    {"docker.io/alpine", "docker.io/library/alpine:latest"},
	    {"sha256:" D64, "sha256:" D64},
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct lb_err *err = NULL;
		char *s = NULL;
		cr_assert_eq(lb_image_name(ok[i].in, &s, &err), 0, "%s", ok[i].in);
		cr_assert_str_eq(s, ok[i].name);
		free(s);
	}
	struct lb_err *err = NULL;
	char *s = NULL;
	cr_assert_lt(lb_image_name("UPPER/Case", &s, &err), 0);
	lb_err_free(&err);
}

Test(image_ref, short_names_are_local_first)
{
	struct {
		const char *in, *first, *second, *tag_name;
	} ok[] = {
	    {"mydemo", "localhost/mydemo:latest", "docker.io/library/mydemo:latest",
	     "localhost/mydemo:latest"},
	    {"org/app:1", "localhost/org/app:1", "docker.io/org/app:1", "localhost/org/app:1"},
	    {"app@sha256:" D64, "localhost/app@sha256:" D64, "docker.io/library/app@sha256:" D64,
	     "localhost/app@sha256:" D64},
	    {"ghcr.io/a/b", "ghcr.io/a/b:latest", NULL, "ghcr.io/a/b:latest"},
	    {"localhost/a", "localhost/a:latest", NULL, "localhost/a:latest"},
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct lb_err *err = NULL;
		char *c[3] = {NULL, NULL, NULL}, *t = NULL;
		cr_assert_eq(lb_image_ref_candidates(ok[i].in, c, &err), 0, "%s", ok[i].in);
		cr_assert_str_eq(c[0], ok[i].first);
		if (ok[i].second)
			cr_assert_str_eq(c[1], ok[i].second);
		else
			cr_assert_null(c[1]);
		cr_assert_null(c[2]);
		cr_assert_eq(lb_image_tag_name(ok[i].in, &t, &err), 0);
		cr_assert_str_eq(t, ok[i].tag_name);
		free(c[0]), free(c[1]), free(t);
	}
}
