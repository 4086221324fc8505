/*
 * SKILL.md (§6.6): optional YAML front matter between two "---" lines, then the instructions.
 * Only name, display_name and description are read or written; YAML is parsed and emitted with
 * libyaml, so a description holding "\nname: x" or a quote stays one value.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "lbbox/base/cleanup.h"
#include "lbbox/box/skill.h"
#include "skill_internal.h"

static const char *const fields[] = {"name", "display_name", "description"};

static char **field_of(struct lb_skill_meta *m, const char *key)
{
	char **slots[] = {&m->name, &m->display_name, &m->description};
	for (size_t i = 0; i < 3; i++)
		if (!strcmp(key, fields[i]))
			return slots[i];
	return NULL;
}

/* The length of the line break at s[0..n), 0 when there is none: str.splitlines()'s breaks
 * (\n, \r\n, \r, \v, \f, \x1c-\x1e, U+0085, U+2028, U+2029). */
static size_t line_break(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	if (u[0] == '\r')
		return n > 1 && u[1] == '\n' ? 2 : 1;
	if (u[0] == '\n' || u[0] == '\v' || u[0] == '\f' || (u[0] >= 0x1c && u[0] <= 0x1e))
		return 1;
	if (n > 1 && u[0] == 0xc2 && u[1] == 0x85)
		return 2;
	if (n > 2 && u[0] == 0xe2 && u[1] == 0x80 && (u[2] == 0xa8 || u[2] == 0xa9))
		return 3;
	return 0;
}

/* A line of text at pos: its bytes up to and including its line break (the last may lack
 * one). */
static size_t line_len(const char *text, size_t len, size_t pos)
{
	for (size_t i = pos; i < len; i++) {
		size_t b = line_break(text + i, len - i);
		if (b)
			return i - pos + b;
	}
	return len - pos;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

/* line.strip() == "---" (ASCII whitespace is what can surround it in practice; another line
 * break ends the line before). */
static bool is_fence(const char *line, size_t n)
{
	while (n && is_space(line[n - 1]))
		n--;
	while (n && is_space(*line))
		line++, n--;
	return n == 3 && !memcmp(line, "---", 3);
}

/* Whether s is one of YAML's spellings of null, when written as a plain scalar. */
static bool null_spelling(const char *s)
{
	static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};
	for (size_t i = 0; i < sizeof(nulls) / sizeof(nulls[0]); i++)
		if (!strcmp(s, nulls[i]))
			return true;
	return false;
}

static bool is_null(const yaml_node_t *v)
{
	return v->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	       null_spelling((const char *)v->data.scalar.value);
}

/* The three fields of a mapping document; anything else (a list, a scalar) carries none. */
static int take_fields(yaml_document_t *doc, struct lb_skill_meta *m, struct lb_err **err)
{
	yaml_node_t *root = yaml_document_get_root_node(doc);
	if (!root || root->type != YAML_MAPPING_NODE)
		return 0;
	for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = yaml_document_get_node(doc, p->key);
		yaml_node_t *v = yaml_document_get_node(doc, p->value);
		if (!k || !v || k->type != YAML_SCALAR_NODE || v->type != YAML_SCALAR_NODE ||
		    is_null(v))
			continue;
		char **slot = field_of(m, (const char *)k->data.scalar.value);
		if (!slot)
			continue;
		free(*slot);
		if (!(*slot = strndup((const char *)v->data.scalar.value, v->data.scalar.length)))
			return lb_err_set(err, ENOMEM, "front matter");
	}
	return 0;
}

static int parse_yaml(const char *text, size_t len, struct lb_skill_meta *m, struct lb_err **err)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	if (!yaml_parser_initialize(&parser))
		return lb_err_set(err, ENOMEM, "front matter");
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		lb_err_set(err, 0, "Skill entry file has invalid YAML front matter: %s",
			   parser.problem ? parser.problem : "parse error");
		yaml_parser_delete(&parser);
		return -1;
	}
	int r = take_fields(&doc, m, err);
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	return r;
}

int lb_skill_meta_parse(const char *text, size_t len, struct lb_skill_meta *out,
			struct lb_err **err)
{
	struct lb_skill_meta m = {0};
	size_t first = len >= 3 && !memcmp(text, "---", 3) ? line_len(text, len, 0) : 0;
	size_t body = 0;
	if (first && is_fence(text, first))
		for (size_t pos = first; pos < len; pos += line_len(text, len, pos))
			if (is_fence(text + pos, line_len(text, len, pos))) {
				if (parse_yaml(text + first, pos - first, &m, err) < 0) {
					lb_skill_meta_free(&m);
					return -1;
				}
				body = pos + line_len(text, len, pos);
				while (body < len && text[body] == '\n')
					body++;
				break;
			}
	if (!(m.instructions = strndup(text + body, len - body))) {
		lb_skill_meta_free(&m);
		return lb_err_set(err, ENOMEM, "front matter");
	}
	*out = m;
	return 0;
}

void lb_skill_meta_free(struct lb_skill_meta *m)
{
	free(m->name);
	free(m->display_name);
	free(m->description);
	free(m->instructions);
	*m = (struct lb_skill_meta){0};
}

struct buf {
	char *p;
	size_t len;
	bool oom;
};

static int buf_write(void *data, unsigned char *bytes, size_t n)
{
	struct buf *b = data;
	char *p = realloc(b->p, b->len + n + 1);
	if (!p)
		return b->oom = true, 0;
	memcpy(p + b->len, bytes, n);
	b->p = p;
	b->len += n;
	p[b->len] = '\0';
	return 1;
}

/* A value with a line break is double-quoted (breaks escaped): no line of it can then read as
 * the closing "---" of the front matter. One that reads as null when plain ("NULL", "~") is
 * single-quoted, as yaml.dump does, or it would read back absent. */
static bool emit_str(yaml_emitter_t *e, const char *s)
{
	yaml_event_t ev;
	yaml_scalar_style_t style = strpbrk(s, "\r\n") ? YAML_DOUBLE_QUOTED_SCALAR_STYLE
				    : null_spelling(s) ? YAML_SINGLE_QUOTED_SCALAR_STYLE
						       : YAML_ANY_SCALAR_STYLE;
	return yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, -1, 1, 1, style) &&
	       yaml_emitter_emit(e, &ev);
}

/* The fields as a block mapping, the way yaml.dump writes them. */
static bool emit_mapping(yaml_emitter_t *e, const char *const *vals)
{
	yaml_event_t ev;
	if (!yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) ||
	    !yaml_emitter_emit(e, &ev) ||
	    !yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1) ||
	    !yaml_emitter_emit(e, &ev) ||
	    !yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE) ||
	    !yaml_emitter_emit(e, &ev))
		return false;
	for (size_t i = 0; i < 3; i++)
		if (vals[i] && (!emit_str(e, fields[i]) || !emit_str(e, vals[i])))
			return false;
	return yaml_mapping_end_event_initialize(&ev) && yaml_emitter_emit(e, &ev) &&
	       yaml_document_end_event_initialize(&ev, 1) && yaml_emitter_emit(e, &ev) &&
	       yaml_stream_end_event_initialize(&ev) && yaml_emitter_emit(e, &ev);
}

static int emit_yaml(const char *const *vals, struct buf *b, struct lb_err **err)
{
	yaml_emitter_t e;
	if (!yaml_emitter_initialize(&e))
		return lb_err_set(err, ENOMEM, "front matter");
	yaml_emitter_set_output(&e, buf_write, b);
	yaml_emitter_set_unicode(&e, 1);
	yaml_emitter_set_width(&e, -1); /* no folding: one line per field */
	bool ok = emit_mapping(&e, vals);
	if (!ok)
		lb_err_set(err, b->oom ? ENOMEM : 0, "cannot write the front matter: %s",
			   e.problem ? e.problem : "emitter error");
	yaml_emitter_delete(&e);
	if (!ok)
		return -1;
	/* yaml.dump(...).strip(): the trailing newline goes, and a document end marker (a line
	 * of its own: no value spans lines, being double-quoted then) */
	while (b->len && is_space(b->p[b->len - 1]))
		b->len--;
	if (b->len >= 4 && !memcmp(b->p + b->len - 4, "\n...", 4))
		b->len -= 4;
	return 0;
}

int lb_skill_meta_build(const struct lb_skill_meta *m, char **out, struct lb_err **err)
{
	const char *vals[3] = {m->name, m->display_name, m->description};
	const char *instr = m->instructions ? m->instructions : "";
	bool any = false;
	for (size_t i = 0; i < 3; i++) {
		if (vals[i] && lb_skill_is_blank(vals[i]))
			vals[i] = NULL;
		any |= vals[i] != NULL;
	}
	if (!any)
		return (*out = strdup(instr)) ? 0 : lb_err_set(err, ENOMEM, "SKILL.md");
	struct buf b = {0};
	if (emit_yaml(vals, &b, err) < 0) {
		free(b.p);
		return -1;
	}
	int r = asprintf(out, "---\n%.*s\n---\n\n%s", (int)b.len, b.p ? b.p : "", instr);
	free(b.p);
	return r < 0 ? lb_err_set(err, ENOMEM, "SKILL.md") : 0;
}
