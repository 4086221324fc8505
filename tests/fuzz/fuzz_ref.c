/*
 * Fuzz target: image references (src/image/ref.c), as `lbbox pull/run --image`, a docker
 * archive's RepoTags and an OCI ref.name hand them over.
 *
 * Properties checked besides the sanitizers: a reference that parses has a canonical form that
 * parses to the same fields (the store names images by it, so it must be a fixed point), and the
 * registry API parts of it are set.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "lbbox/image/ref.h"

static bool str_eq(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_strndup(data, size);
	struct lb_image_ref ref, again;
	struct lb_err *err = NULL;
	char *canon = NULL, *canon2 = NULL;

	if (lb_image_ref_parse(s, &ref, &err) < 0) {
		FUZZ_CHECK(err && err->msg, "a refused reference without an error");
		lb_err_free(&err);
		free(s);
		return 0;
	}
	FUZZ_CHECK(ref.domain && ref.path && (ref.tag || ref.digest), "'%s' parsed incompletely",
		   s);
	FUZZ_CHECK(lb_image_ref_api_host(&ref) && lb_image_ref_api_repository(&ref) &&
		       lb_image_ref_manifest_ref(&ref),
		   "'%s': no API host, repository or manifest reference", s);
	FUZZ_CHECK(lb_image_ref_canonical(&ref, &canon, &err) == 0, "canonical form of '%s'", s);
	FUZZ_CHECK(lb_image_ref_parse(canon, &again, &err) == 0,
		   "'%s' parses, its canonical form '%s' does not: %s", s, canon,
		   err ? err->msg : "?");
	FUZZ_CHECK(str_eq(ref.domain, again.domain) && str_eq(ref.path, again.path) &&
		       str_eq(ref.tag, again.tag) && str_eq(ref.digest, again.digest),
		   "'%s' and its canonical form '%s' name different images", s, canon);
	FUZZ_CHECK(lb_image_ref_canonical(&again, &canon2, &err) == 0 && !strcmp(canon, canon2),
		   "canonical form of '%s' is not a fixed point: '%s' -> '%s'", s, canon,
		   canon2 ? canon2 : "?");
	free(canon2);
	free(canon);
	lb_image_ref_clear(&again);
	lb_image_ref_clear(&ref);
	free(s);
	return 0;
}
