/* The skill store's pure rules: SKILL.md front matter, skill names, relative path
 * normalisation (§6.6). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "box/skill_internal.h"
#include "lbbox/box/skill.h"

static struct lb_skill_meta parse(const char *text)
{
	struct lb_skill_meta m;
	struct lb_err *err = NULL;
	cr_assert_eq(lb_skill_meta_parse(text, strlen(text), &m, &err), 0, "%s",
		     err ? err->msg : "");
	return m;
}

#define str_or(s) ((s) ? (s) : "(null)")

Test(skill_meta, no_front_matter_is_all_instructions)
{
	const char *texts[] = {"plain\n", "--- not a fence\nname: x\n---\n",
			       "---\nname: x\nnever closed\n", "----\nname: x\n---\n"};
	for (size_t i = 0; i < 4; i++) {
		struct lb_skill_meta m = parse(texts[i]);
		cr_assert_null(m.name, "%s", texts[i]);
		cr_assert_str_eq(m.instructions, texts[i]);
		lb_skill_meta_free(&m);
	}
}

Test(skill_meta, fields_and_instructions)
{
	struct lb_skill_meta m = parse("--- \r\nname: pdf\r\ndisplay_name: 'PDF: tools'\nother: 1\n"
				       "description: ~\n---\n\n\nBody\n\n");
	cr_assert_str_eq(str_or(m.name), "pdf");
	cr_assert_str_eq(str_or(m.display_name), "PDF: tools");
	cr_assert_null(m.description); /* YAML null */
	cr_assert_str_eq(m.instructions, "Body\n\n");
	lb_skill_meta_free(&m);
	/* str.splitlines()'s breaks: a lone \r ends a line too */
	m = parse("---\rname: cr\r---\rBody");
	cr_assert_str_eq(str_or(m.name), "cr");
	cr_assert_str_eq(m.instructions, "Body");
	lb_skill_meta_free(&m);
	/* not a mapping, or values that are no scalars: no fields */
	m = parse("---\n- a\n- b\n---\nx");
	cr_assert_null(m.name);
	cr_assert_str_eq(m.instructions, "x");
	lb_skill_meta_free(&m);
	m = parse("---\nname: [a, b]\n---\n");
	cr_assert_null(m.name);
	lb_skill_meta_free(&m);
}

Test(skill_meta, invalid_yaml_is_an_error)
{
	struct lb_skill_meta m;
	struct lb_err *err = NULL;
	const char *t = "---\nname: 'unclosed\n---\nx";
	cr_assert_eq(lb_skill_meta_parse(t, strlen(t), &m, &err), -1);
	cr_assert(strstr(err->msg, "invalid YAML front matter"), "%s", err->msg);
	lb_err_free(&err);
}

/* What is written reads back the same, whatever the values hold. */
Test(skill_meta, build_round_trips_hostile_values)
{
	struct lb_skill_meta in = {.name = "n",
				   .display_name = "a: b\nname: evil\n---\n",
				   .description = " 'quoted' \"and\" \xc3\xa9 ...",
				   .instructions = "Body\n"};
	char *text = NULL;
	struct lb_err *err = NULL;
	cr_assert_eq(lb_skill_meta_build(&in, &text, &err), 0);
	cr_assert(!strncmp(text, "---\nname: n\n", 12), "%s", text);
	struct lb_skill_meta out = parse(text);
	cr_assert_str_eq(str_or(out.name), "n");
	cr_assert_str_eq(str_or(out.display_name), in.display_name);
	cr_assert_str_eq(str_or(out.description), in.description);
	cr_assert_str_eq(out.instructions, "Body\n");
	lb_skill_meta_free(&out);
	free(text);
	/* a plain value ending in "..." is no document end marker */
	struct lb_skill_meta dots = {.name = "~dn:...", .instructions = "x"};
	cr_assert_eq(lb_skill_meta_build(&dots, &text, &err), 0);
	out = parse(text);
	cr_assert_str_eq(str_or(out.name), "~dn:...", "%s", text);
	lb_skill_meta_free(&out);
	free(text);
	/* a value spelled like YAML's null is quoted, or it would read back absent (a fuzz
	 * finding: description "NULL") */
	static char *const nulls[] = {"NULL", "null", "Null", "~"};
	for (size_t i = 0; i < sizeof(nulls) / sizeof(nulls[0]); i++) {
		struct lb_skill_meta q = {
		    .name = "n", .description = nulls[i], .instructions = "x"};
		cr_assert_eq(lb_skill_meta_build(&q, &text, &err), 0);
		out = parse(text);
		cr_assert_str_eq(str_or(out.description), nulls[i], "%s", text);
		lb_skill_meta_free(&out);
		free(text);
	}
	/* blank or missing fields are left out; none left: the instructions alone */
	struct lb_skill_meta none = {.display_name = "  ", .instructions = "only"};
	cr_assert_eq(lb_skill_meta_build(&none, &text, &err), 0);
	cr_assert_str_eq(text, "only");
	free(text);
}

static const char *name_error(const char *raw)
{
	static char msg[256];
	char *out = NULL;
	struct lb_err *err = NULL;
	if (lb_skill_name_check(raw, &out, &err) == 0) {
		snprintf(msg, sizeof(msg), "ok:%s", out);
		free(out);
		return msg;
	}
	snprintf(msg, sizeof(msg), "%s", err->msg);
	lb_err_free(&err);
	return msg;
}

Test(skill_name, rules)
{
	char long_name[80];
	memset(long_name, 'a', 65);
	long_name[65] = '\0';
	cr_assert_str_eq(name_error("  pdf-tools_2 "), "ok:pdf-tools_2");
	cr_assert_str_eq(name_error("\xe6\x8a\x80\xe8\x83\xbd"), "ok:\xe6\x8a\x80\xe8\x83\xbd");
	cr_assert_str_eq(name_error(""), "Skill name is required");
	cr_assert_str_eq(name_error(" \t"), "Skill name is required");
	cr_assert_str_eq(name_error("a/b"),
			 "Skill name can only contain letters, numbers, hyphens and underscores");
	cr_assert_str_eq(name_error(".."),
			 "Skill name can only contain letters, numbers, hyphens and underscores");
	cr_assert_str_eq(name_error("-_"),
			 "Skill name can only contain letters, numbers, hyphens and underscores");
	cr_assert_str_eq(name_error(long_name), "Skill name cannot exceed 64 characters");
	long_name[64] = '\0';
	cr_assert_eq(strncmp(name_error(long_name), "ok:", 3), 0);
}

Test(skill_path, normpath)
{
	const char *cases[][2] = {{"", "."},
				  {".", "."},
				  {"a//b/./c/", "a/b/c"},
				  {"a/../b", "b"},
				  {"a/../../x", "../x"},
				  {"../../x", "../../x"},
				  {"./..", ".."},
				  {"a/b/../..", "."},
				  {"..a/b", "..a/b"}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *n = skill_normpath(cases[i][0]);
		cr_assert_str_eq(n, cases[i][1], "normpath(%s)", cases[i][0]);
		free(n);
	}
}
