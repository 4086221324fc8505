/*
 * Field validators shared by the Box models: path rules, skill_name, and BoxMountSpec (the
 * elements of BoxSpec.extra_mounts), with LangBot's messages.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "box_spec_internal.h"
#include "lbbox/box/spec.h"
#include "lbbox/base/cleanup.h"
#include "text_internal.h"

#define SKILL_NAME_MAX 64

int lb_box_strip_field(char **field, const char *loc, struct lb_err **err)
{
	if (!*field)
		return lb_box_type_error(err, loc, "Input should be a valid string");
	char *s = lb_box_py_strip_dup(*field);
	if (!s)
		return lb_err_set(err, ENOMEM, "%s", loc);
	free(*field);
	*field = s;
	return 0;
}

int lb_box_check_sandbox_path(char **field, const char *name, struct lb_err **err)
{
	if (lb_box_strip_field(field, name, err) < 0)
		return -1;
	if (**field != '/')
		return lb_err_box(err, LB_BOX_EVALIDATION,
				  "%s must be an absolute path inside the sandbox", name);
	return 0;
}

/*
 * lbbox is stricter than LangBot about a mount target, which LangBot only wants absolute: no
 * ".." component, and not /, /proc, /sys or /dev or anything below them, wherever "." and "//"
 * put it. LangBot's Docker backend fails on most of these anyway (docker refuses "/" as a
 * destination, runc a mount over /proc); a mount over /sys or /dev would cover what the
 * sandbox's isolation is made of, and one over "/" breaks the session.
 */
int lb_box_check_mount_target(const char *path, struct lb_err **err)
{
	static const char *const covered[] = {"proc", "sys", "dev"};
	const char *first = NULL;
	size_t first_len = 0;
	for (const char *p = path; *p;) {
		size_t n = strcspn(p, "/");
		if (n == 2 && !strncmp(p, "..", 2))
			return lb_err_box(err, LB_BOX_EVALIDATION,
					  "mount_path %s must not contain '..'", path);
		if (n && !(n == 1 && *p == '.') && !first)
			first = p, first_len = n;
		p += n + (p[n] == '/');
	}
	if (!first)
		return lb_err_box(err, LB_BOX_EVALIDATION, "mount_path must not be /");
	for (size_t i = 0; i < sizeof(covered) / sizeof(covered[0]); i++)
		if (first_len == strlen(covered[i]) && !strncmp(first, covered[i], first_len))
			return lb_err_box(err, LB_BOX_EVALIDATION,
					  "mount_path %s must not be /%s or under it", path,
					  covered[i]);
	return 0;
}

int lb_box_check_id(const char *id, const char *field, struct lb_err **err)
{
	for (const unsigned char *p = (const unsigned char *)id; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return lb_err_box(err, LB_BOX_EVALIDATION,
					  "%s must not contain control characters", field);
	return 0;
}

/*
 * posixpath.isabs(s) or ntpath.isabs(s) (CPython 3.11/3.12): "/x", "\x", "\\srv\share", and a
 * drive with a root, "C:\x" or "C:/x" (any first character; "C:x" is relative).
 */
static bool is_abs_host_path(const char *s)
{
	size_t pos = 0, len = strlen(s);

	if (*s == '/' || *s == '\\')
		return true;
	if (!len)
		return false;
	lb_box_utf8_next(s, len, &pos); /* the drive letter may be any one character */
	return s[pos] == ':' && (s[pos + 1] == '\\' || s[pos + 1] == '/');
}

int lb_box_check_host_path(char **field, struct lb_err **err)
{
	if (lb_box_strip_field(field, "host_path", err) < 0)
		return -1;
	if (!is_abs_host_path(*field))
		return lb_err_box(err, LB_BOX_EVALIDATION,
				  "host_path must be an absolute host path");
	return 0;
}

/*
 * The upstream rule (spec §1.3): letters/digits by Python's isalnum() -- so Unicode letters
 * pass -- plus "-" and "_", at most 64 characters. The wording of these two messages is ours:
 * the spec gives the rule, not LangBot's text.
 */
int lb_box_check_skill_name(char **field, struct lb_err **err)
{
	size_t pos = 0, len;

	if (!*field)
		return 0;
	if (lb_box_strip_field(field, "skill_name", err) < 0)
		return -1;
	len = strlen(*field);
	if (!len) {
		free(*field);
		*field = NULL;
		return 0;
	}
	if (lb_box_utf8_count(*field, len) > SKILL_NAME_MAX)
		return lb_err_box(err, LB_BOX_EVALIDATION,
				  "skill_name must be at most 64 characters");
	while (pos < len) {
		uint32_t cp = lb_box_utf8_next(*field, len, &pos);
		if (!lb_box_py_isalnum(cp) && cp != '-' && cp != '_')
			return lb_err_box(
			    err, LB_BOX_EVALIDATION,
			    "skill_name may only contain letters, digits, '-' and '_'");
	}
	return 0;
}

int lb_box_check_mount(struct lb_box_mount *m, size_t index, struct lb_err **err)
{
	char loc[64];

	snprintf(loc, sizeof(loc), "extra_mounts.%zu.host_path", index);
	if (!m->host_path)
		return lb_box_type_error(err, loc, "Field required");
	if (lb_box_check_host_path(&m->host_path, err) < 0)
		return -1;
	snprintf(loc, sizeof(loc), "extra_mounts.%zu.mount_path", index);
	if (!m->mount_path)
		return lb_box_type_error(err, loc, "Field required");
	return lb_box_check_sandbox_path(&m->mount_path, "mount_path", err);
}

void lb_box_mounts_free(struct lb_box_mount *m, size_t n)
{
	for (size_t i = 0; m && i < n; i++) {
		free(m[i].host_path);
		free(m[i].mount_path);
	}
	free(m);
}

int lb_box_type_error(struct lb_err **err, const char *loc, const char *msg)
{
	return lb_err_box(err, LB_BOX_EVALIDATION, "%s: %s", loc, msg);
}

char **lb_box_strv_new(void)
{
	return calloc(1, sizeof(char *));
}

void lb_box_strv_free(char **v)
{
	lb_strvfreep(&v);
}
