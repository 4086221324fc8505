/*
 * Fuzz target: SKILL.md front matter (src/box/skill_meta.c), as a skill package, a zip upload
 * or box_write_skill_file hands it over.
 *
 * Property checked besides the sanitizers: what lbbox writes back for the fields it read
 * (box_update_skill rewrites SKILL.md, always with a name) reads again as the same fields.
 */
#include <stdlib.h>
#include <string.h>

#include "box/skill_internal.h"
#include "fuzz_common.h"
#include "lbbox/box/skill.h"

static bool same(const char *a, const char *b)
{
	if (a && lb_skill_is_blank(a))
		a = NULL; /* a blank field is left out when written: it reads back absent */
	return a == b || (a && b && !strcmp(a, b));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lb_skill_meta m, again;
	struct lb_err *err = NULL;
	char *text = NULL;
	if (lb_skill_meta_parse((const char *)data, size, &m, &err) < 0) {
		FUZZ_CHECK(err && err->msg, "a refused front matter without an error");
		lb_err_free(&err);
		return 0;
	}
	/* lbbox always writes a valid name: without one, instructions that begin with a front
	 * matter of their own would read back as fields (as in LangBot) */
	if (!m.name || lb_skill_is_blank(m.name)) {
		free(m.name);
		if (!(m.name = strdup("n")))
			fuzz_setup_fail("strdup");
	}
	if (lb_skill_meta_build(&m, &text, &err) < 0) {
		/* libyaml refuses to emit some scalars it parsed (e.g. control characters) */
		lb_err_free(&err);
		lb_skill_meta_free(&m);
		return 0;
	}
	FUZZ_CHECK(lb_skill_meta_parse(text, strlen(text), &again, &err) == 0,
		   "the SKILL.md written does not parse: %s", err ? err->msg : "?");
	FUZZ_CHECK(same(m.name, again.name) && same(m.display_name, again.display_name) &&
		       same(m.description, again.description),
		   "the fields changed when written and read again");
	lb_skill_meta_free(&again);
	lb_skill_meta_free(&m);
	free(text);
	return 0;
}
